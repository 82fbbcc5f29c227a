/**
 * Runs the browser clone benchmark page (tests/browser/bench/) in headless Chromium: a vite dev
 * server over the TypeScript sources (the `source` condition, as in the browser test project),
 * driven with playwright-core. Used by benchmarks/clone.bench.ts.
 */
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createViteServer } from 'vitest/node';

export interface BrowserCloneOptions {
  commits: number;
  size: number;
  runs: number;
  warmup: number;
}

export interface BrowserCloneResult {
  userAgent: string;
  results: Record<'memory' | 'opfs', { ms: number; packBytes: number }[]>;
}

const root = fileURLToPath(new URL('../../browser/', import.meta.url));
const workspace = fileURLToPath(new URL('../../../', import.meta.url));

export async function runBrowserCloneBench(options: BrowserCloneOptions): Promise<BrowserCloneResult> {
  const server = await createViteServer({
    configFile: false,
    root,
    logLevel: 'error',
    resolve: { conditions: ['source', 'browser', 'module', 'import', 'development|production'] },
    worker: { format: 'es' },
    optimizeDeps: { include: ['isomorphic-git', 'comlink', '@isomorphic-git/lightning-fs', 'buffer'] },
    server: { port: 0, host: '127.0.0.1', fs: { allow: [workspace] } },
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not listen');
  const browser = await chromium.launch({
    executablePath: process.env.GITPORT_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`http://127.0.0.1:${address.port}/bench/index.html`);
    await page.waitForFunction(() => document.title === 'ready', undefined, { timeout: 120_000 });
    const result = await page.evaluate(
      (o) => (window as unknown as { runCloneBench(o: unknown): Promise<unknown> }).runCloneBench(o),
      options,
    );
    if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
    return result as BrowserCloneResult;
  } finally {
    await browser.close();
    await server.close();
  }
}
