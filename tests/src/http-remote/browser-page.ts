/**
 * The HTTP remote page (tests/browser/http-remote/) in headless Chromium: a vite dev server
 * over the TypeScript sources (the `source` condition) serves the page and its worker on one
 * origin; the git servers the worker reaches listen on others (CORS). Used by
 * chromium-remote.test.ts and benchmarks/http-remote.bench.ts.
 */
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { createViteServer } from 'vitest/node';
import { launchChromium } from './chromium.js';

const root = fileURLToPath(new URL('../../browser/', import.meta.url));
const workspace = fileURLToPath(new URL('../../../', import.meta.url));

/** What a worker operation rejected with. */
export interface WorkerFailure {
  code: string;
  message: string;
  data: { status?: number; message?: string } | null;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: WorkerFailure };

export interface HttpRemotePage {
  /** The page's origin (what the git servers allow with CORS). */
  origin: string;
  page: Page;
  /** Runs one operation in the page's worker. */
  run<T>(op: string, args: unknown): Promise<Outcome<T>>;
  /** Runs one operation in the page's worker; a failure throws. */
  call<T>(op: string, args: unknown): Promise<T>;
  /** The ref updates the worker's watchers heard so far. */
  updates(): Promise<{ repo: string; ref: string; old: string; new: string }[]>;
  /** When the worker heard each update (ms since the epoch, fractional; the machine's one clock). */
  arrivals(): Promise<number[]>;
  close(): Promise<void>;
}

export async function openHttpRemotePage(): Promise<HttpRemotePage> {
  const server = await createViteServer({
    configFile: false,
    root,
    logLevel: 'error',
    resolve: { conditions: ['source', 'browser', 'module', 'import', 'development|production'] },
    worker: { format: 'es' },
    cacheDir: `${root}node_modules/.vite-http-remote`,
    optimizeDeps: {
      entries: ['http-remote/index.html', 'http-remote/*.worker.ts'],
      include: ['isomorphic-git', 'isomorphic-git/http/web', 'buffer'],
    },
    server: { port: 0, host: '127.0.0.1', fs: { allow: [workspace] }, hmr: false, watch: null },
  });
  let browser: Browser | undefined;
  try {
    await server.listen();
    const address = server.httpServer?.address();
    if (!address || typeof address === 'string') throw new Error('vite did not listen');
    const origin = `http://127.0.0.1:${address.port}`;
    browser = await launchChromium();
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // vite may reload the page once when its dependency optimizer finds an import late
    for (let attempt = 1; ; attempt++) {
      try {
        await page.goto(`${origin}/http-remote/index.html`, { timeout: 120_000 });
        await page.waitForFunction(() => document.title === 'ready', undefined, { timeout: 120_000 });
        // the worker has loaded its modules once it answers
        await page.evaluate(() =>
          (window as unknown as { call(op: string, a: unknown): Promise<unknown> }).call('unwatch', {}),
        );
        break;
      } catch (error) {
        if (attempt >= 3 || !/Execution context was destroyed|navigation|Timeout/i.test(String(error))) throw error;
      }
    }
    const run = <T>(op: string, args: unknown) =>
      page.evaluate(
        ([o, a]) =>
          (window as unknown as { call(op: string, a: unknown): Promise<unknown> }).call(o, a).then(
            (value) => ({ ok: true, value }),
            (error) => ({ ok: false, error }),
          ),
        [op, args] as const,
      ) as Promise<Outcome<T>>;
    const opened = browser;
    return {
      origin,
      page,
      run,
      async call<T>(op: string, args: unknown) {
        const outcome = await run<T>(op, args);
        if (!outcome.ok) throw new Error(`${op}: ${outcome.error.code}: ${outcome.error.message}`);
        if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
        return outcome.value;
      },
      updates: () =>
        page.evaluate(
          () => (window as unknown as { updates: { repo: string; ref: string; old: string; new: string }[] }).updates,
        ),
      arrivals: () => page.evaluate(() => (window as unknown as { arrivals: number[] }).arrivals),
      async close() {
        await opened.close();
        await server.close();
      },
    };
  } catch (error) {
    await browser?.close();
    await server.close();
    throw error;
  }
}
