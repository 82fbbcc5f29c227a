import { expect, it } from 'vitest';

it('runs a module Web Worker in real Chromium', async () => {
  expect(navigator.userAgent).toMatch(/Chrome/);
  const worker = new Worker(new URL('./echo.worker.ts', import.meta.url), { type: 'module' });
  try {
    const answer = await new Promise<unknown>((resolve, reject) => {
      worker.addEventListener('message', (e) => resolve(e.data), { once: true });
      worker.addEventListener('error', (e) => reject(new Error(e.message)), { once: true });
      worker.postMessage(21);
    });
    expect(answer).toBe(42);
  } finally {
    worker.terminate();
  }
});
