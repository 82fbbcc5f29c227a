/**
 * Runs tests/browser/partial-clone/ in headless Chromium: a vite dev server over the TypeScript
 * sources (the `source` condition, as the browser test project resolves them) that also proxies
 * `/git/*` to a gateway, so the page's worker clones over smart HTTP from its own origin; driven
 * with playwright-core. Used by the Chromium test beside this file and by
 * benchmarks/partial-clone.bench.ts.
 */
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { createViteServer } from 'vitest/node';
import type { CloneReport, CloneRequest } from '../../browser/partial-clone/clone.worker.js';
import { launchChromium } from '../http-remote/chromium.js';

export type { CloneReport, CloneRequest };

const root = fileURLToPath(new URL('../../browser/', import.meta.url));
const workspace = fileURLToPath(new URL('../../../', import.meta.url));

/** The page, with `/git/<name>.git` proxied to `gatewayUrl`; `run` clones in a fresh worker. */
export async function withPartialClonePage<T>(
  gatewayUrl: string,
  fn: (
    run: (request: Omit<CloneRequest, 'url'> & { repository: string }) => Promise<CloneReport>,
    page: Page,
  ) => Promise<T>,
): Promise<T> {
  const server = await createViteServer({
    configFile: false,
    root,
    logLevel: 'error',
    resolve: { conditions: ['source', 'browser', 'module', 'import', 'development|production'] },
    worker: { format: 'es' },
    cacheDir: `${root}node_modules/.vite-partial-clone`,
    optimizeDeps: {
      entries: ['partial-clone/index.html', 'partial-clone/*.worker.ts'],
      include: ['isomorphic-git', 'isomorphic-git/http/web', 'buffer'],
    },
    server: {
      port: 0,
      host: '127.0.0.1',
      fs: { allow: [workspace] },
      hmr: false,
      watch: null,
      proxy: { '/git/': { target: gatewayUrl, rewrite: (path: string) => path.slice('/git'.length) } },
    },
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not listen');
  const origin = `http://127.0.0.1:${address.port}`;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const url = `${origin}/partial-clone/index.html`;
    // vite may reload the page once its dependency optimizer finds an import late: load again
    for (let attempt = 1; ; attempt++) {
      try {
        await page.goto(url, { timeout: 120_000 });
        await page.waitForFunction(() => document.title === 'ready', undefined, { timeout: 120_000 });
        const run = async ({ repository, ...request }: Omit<CloneRequest, 'url'> & { repository: string }) =>
          (await page.evaluate(
            (r) => (window as unknown as { runPartialClone(r: unknown): Promise<unknown> }).runPartialClone(r),
            { ...request, url: `${origin}/git/${repository}` },
          )) as CloneReport;
        const result = await fn(run, page);
        if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
        return result;
      } catch (error) {
        if (attempt >= 3 || !/Execution context was destroyed|navigation/i.test(String(error))) throw error;
        errors.length = 0;
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
}
