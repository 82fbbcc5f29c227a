/**
 * Runs the browser benchmark page (tests/browser/bench/) in headless Chromium: a vite dev server
 * over the TypeScript sources (the `source` condition, as in the browser test project), driven
 * with playwright-core. Used by benchmarks/clone.bench.ts (the clone between two Web Workers)
 * and benchmarks/browser.bench.ts (emitters on the page, the transport to a Web Worker).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { createViteServer } from 'vitest/node';
import type { EmitterBenchOptions, EmitterBenchResult } from '../../browser/bench/emitter.js';
import type { TransportBenchResult, TransportCase } from '../../browser/bench/transport.js';

export type { EmitterBenchOptions, EmitterBenchResult, TransportBenchResult, TransportCase };

export interface BrowserCloneOptions {
  commits: number;
  size: number;
  runs: number;
  warmup: number;
  /**
   * The host's repository packed, as `git repack -adq` leaves the repository the Node clone
   * bench serves (default: true); false keeps the loose objects isomorphic-git wrote, so every
   * clone also deltifies and deflates the whole corpus on the host.
   */
  packed?: boolean;
}

export interface BrowserCloneResult {
  userAgent: string;
  results: Record<'memory' | 'opfs', { ms: number; packBytes: number }[]>;
}

export interface BrowserPageBenchOptions {
  emitter: EmitterBenchOptions;
  transport: TransportCase[];
}

export interface BrowserPageBenchResult {
  userAgent: string;
  emitter: EmitterBenchResult;
  transport: TransportBenchResult;
}

const root = fileURLToPath(new URL('../../browser/', import.meta.url));
const workspace = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The emitter libraries the page compares against are dependencies of the benchmarks package:
 * the page imports them as `bench-peer/<name>`, resolved to the benchmarks package's copies.
 */
const PEER_LIBRARIES = ['nanoevents', 'eventemitter3', 'mitt'];
const peerAliases = () =>
  PEER_LIBRARIES.map((name) => ({
    find: `bench-peer/${name}`,
    replacement: realpathSync(`${workspace}benchmarks/node_modules/${name}`),
  }));

/**
 * Starts the page, calls `fn` on it, and tears everything down. `GITPORT_CHROMIUM_FLAGS` adds
 * Chromium switches (separated by `;`), e.g. `--js-flags=--prof` when profiling.
 */
export async function withBenchPage<T>(fn: (page: Page) => Promise<T>): Promise<T> {
  const server = await createViteServer({
    configFile: false,
    root,
    logLevel: 'error',
    resolve: {
      conditions: ['source', 'browser', 'module', 'import', 'development|production'],
      alias: peerAliases(),
    },
    worker: { format: 'es' },
    // its own dependency cache: the browser test project's vite may be optimizing tests/browser's at the same time
    cacheDir: `${root}node_modules/.vite-bench`,
    optimizeDeps: {
      // the workers' imports too, so that the dependency optimizer does not discover them late and reload the page
      entries: ['bench/index.html', 'bench/*.worker.ts'],
      include: [
        'isomorphic-git',
        'comlink',
        '@isomorphic-git/lightning-fs',
        'buffer',
        ...PEER_LIBRARIES.map((name) => `bench-peer/${name}`),
      ],
    },
    // no file watching, no HMR: an edit to the sources during a run must not reload the page under it
    server: { port: 0, host: '127.0.0.1', fs: { allow: [workspace] }, hmr: false, watch: null },
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
      ...(process.env.GITPORT_CHROMIUM_FLAGS?.split(';').filter(Boolean) ?? []),
    ],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const url = `http://127.0.0.1:${address.port}/bench/index.html`;
    // vite may still reload the page if its dependency optimizer finds an import late (the page
    // is then navigated away under the load or the evaluation), and a loaded machine may take
    // long to serve the first load: load it again and retry.
    for (let attempt = 1; ; attempt++) {
      let loaded = false;
      try {
        await page.goto(url, { timeout: 120_000 });
        await page.waitForFunction(() => document.title === 'ready', undefined, { timeout: 120_000 });
        loaded = true;
        const result = await fn(page);
        if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
        return result;
      } catch (error) {
        const retry =
          /Execution context was destroyed|navigation/i.test(String(error)) ||
          (!loaded && /Timeout/.test(String(error)));
        if (attempt >= 3 || !retry) throw error;
        errors.length = 0;
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

export function runBrowserCloneBench(options: BrowserCloneOptions): Promise<BrowserCloneResult> {
  return withBenchPage(
    async (page) =>
      (await page.evaluate(
        (o) => (window as unknown as { runCloneBench(o: unknown): Promise<unknown> }).runCloneBench(o),
        options,
      )) as BrowserCloneResult,
  );
}

/** The emitters on the page's main thread, then the transport between the page and a Web Worker. */
export function runBrowserPageBench(options: BrowserPageBenchOptions): Promise<BrowserPageBenchResult> {
  return withBenchPage(async (page) => {
    const emitter = (await page.evaluate(
      (o) => (window as unknown as { runEmitterBench(o: unknown): unknown }).runEmitterBench(o),
      options.emitter,
    )) as EmitterBenchResult;
    const transport = (await page.evaluate(
      (cases) => (window as unknown as { runTransportBench(c: unknown): Promise<unknown> }).runTransportBench(cases),
      options.transport,
    )) as TransportBenchResult;
    const userAgent = await page.evaluate(() => navigator.userAgent);
    return { userAgent, emitter, transport };
  });
}
