/**
 * Partial clone in a browser worker, driven by tests/src/partial-clone/browser-page.ts:
 * `window.runPartialClone(request)` starts a module Web Worker, hands it the request and answers
 * what it measured (see clone.worker.ts).
 */
import type { CloneReport, CloneRequest } from './clone.worker.js';

async function runPartialClone(request: CloneRequest): Promise<CloneReport> {
  const worker = new Worker(new URL('./clone.worker.ts', import.meta.url), { type: 'module' });
  try {
    return await new Promise<CloneReport>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<CloneReport>) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage(request);
    });
  } finally {
    worker.terminate();
  }
}

(window as unknown as { runPartialClone: typeof runPartialClone }).runPartialClone = runPartialClone;
document.title = 'ready';
