/**
 * A Web Worker importing gitport builds with a bundler's defaults: Vite's worker format is
 * `iife`, which refuses code splitting, so the library's runtime paths must hold no dynamic
 * import. The app is what a user writes: a page that starts a worker which hosts a repository
 * and clones, commits and pushes.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/** Vite as installed for vitest (the workspace has no direct dependency on it). */
async function loadVite(): Promise<ViteModule> {
  const fromVitest = createRequire(createRequire(import.meta.url).resolve('vitest/package.json'));
  const vitePackage = fromVitest.resolve('vite/package.json');
  const { exports } = JSON.parse(await readFile(vitePackage, 'utf8')) as { exports: { '.': string } };
  return (await import(pathToFileURL(join(vitePackage, '..', exports['.'])).href)) as ViteModule;
}

interface ViteModule {
  build(config: Record<string, unknown>): Promise<unknown>;
}

const WORKER = `
import { createBus } from '@gitport/bus';
import { commit, host, MemoryFs, remote, staticRepositories, initRepository } from 'gitport';

const bus = createBus({ id: 'worker' });
self.onmessage = async () => {
  const served = await initRepository(new MemoryFs(), '/served');
  host(bus, staticRepositories({ notes: served }));
  const origin = remote(bus, 'worker', 'notes');
  const repo = await origin.clone(new MemoryFs(), '/work', { bare: false });
  await commit(repo, { message: 'hello', author: { name: 'a', email: 'a@b' }, files: { 'a.txt': 'a' } });
  const pushed = await origin.push(repo, { refspecs: ['main:main'] });
  self.postMessage(pushed.ok);
};
`;

const MAIN = `
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
worker.postMessage('go');
`;

describe('bundling a worker that imports gitport', () => {
  let dir: string;
  beforeEach(async () => {
    // inside tests/ so that gitport and @gitport/* resolve from its node_modules
    dir = await mkdtemp(join(fileURLToPath(new URL('../..', import.meta.url)), '.bundle-'));
    await writeFile(join(dir, 'worker.js'), WORKER);
    await writeFile(join(dir, 'main.js'), MAIN);
    await writeFile(join(dir, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>\n');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("builds with Vite's default worker options (format iife)", async () => {
    const { build } = await loadVite();
    await build({
      root: dir,
      configFile: false,
      logLevel: 'silent',
      // the workspace's TypeScript sources, as the other tests use them
      resolve: { conditions: ['source', 'module', 'browser', 'development|production'] },
      build: { outDir: join(dir, 'dist'), emptyOutDir: true, minify: false },
    });
    const assets = await readdir(join(dir, 'dist', 'assets'));
    const workers = assets.filter((name) => name.startsWith('worker') && name.endsWith('.js'));
    expect(workers).toHaveLength(1);
    const code = await readFile(join(dir, 'dist', 'assets', workers[0]!), 'utf8');
    // one self-contained classic worker script: no import of another chunk, no Buffer
    expect(code).not.toMatch(/\bimport\s*\(/);
    expect(code).not.toMatch(/\bBuffer\.(?:from|alloc|concat|isBuffer)\b/);
  });
});
