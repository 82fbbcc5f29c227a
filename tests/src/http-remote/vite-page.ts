/**
 * A page of tests/browser/ in headless Chromium: a vite dev server over the TypeScript sources
 * (the `source` condition, as the browser test project resolves them) serves the page and its
 * workers on one origin; driven with playwright-core. The HTTP remote page and the partial-clone
 * page open through it.
 */
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { createViteServer } from 'vitest/node';
import { launchChromium } from './chromium.js';

const root = fileURLToPath(new URL('../../browser/', import.meta.url));
const workspace = fileURLToPath(new URL('../../../', import.meta.url));

type ViteProxy = NonNullable<NonNullable<NonNullable<Parameters<typeof createViteServer>[0]>['server']>['proxy']>;

export interface VitePageOptions {
  /** The folder of tests/browser/ holding the page's `index.html` and its `*.worker.ts`. */
  folder: string;
  /** Paths the dev server proxies to other servers. */
  proxy?: ViteProxy;
}

export interface VitePage {
  /** The dev server's origin. */
  origin: string;
  page: Page;
  /** The page's uncaught errors so far. */
  errors: string[];
  /**
   * Loads the page until its title says `ready`, then runs `body`. Vite may reload the page once
   * its dependency optimizer finds an import late: an error matching `transient` loads it again
   * (three attempts in all), after `onRetry`.
   */
  load<T>(transient: RegExp, body: () => Promise<T>, onRetry?: () => void): Promise<T>;
  close(): Promise<void>;
}

/** Starts the dev server and a Chromium page on a blank document. */
export async function openVitePage({ folder, proxy }: VitePageOptions): Promise<VitePage> {
  const server = await createViteServer({
    configFile: false,
    root,
    logLevel: 'error',
    resolve: { conditions: ['source', 'browser', 'module', 'import', 'development|production'] },
    worker: { format: 'es' },
    cacheDir: `${root}node_modules/.vite-${folder}`,
    optimizeDeps: {
      entries: [`${folder}/index.html`, `${folder}/*.worker.ts`],
      include: ['isomorphic-git', 'isomorphic-git/http/web', 'buffer'],
    },
    server: {
      port: 0,
      host: '127.0.0.1',
      fs: { allow: [workspace] },
      hmr: false,
      watch: null,
      ...(proxy === undefined ? {} : { proxy }),
    },
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
    const opened = browser;
    return {
      origin,
      page,
      errors,
      async load<T>(transient: RegExp, body: () => Promise<T>, onRetry?: () => void): Promise<T> {
        for (let attempt = 1; ; attempt++) {
          try {
            await page.goto(`${origin}/${folder}/index.html`, { timeout: 120_000 });
            await page.waitForFunction(() => document.title === 'ready', undefined, { timeout: 120_000 });
            return await body();
          } catch (error) {
            if (attempt >= 3 || !transient.test(String(error))) throw error;
            onRetry?.();
          }
        }
      },
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
