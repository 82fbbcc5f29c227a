/**
 * Starting TypeScript entry points in worker threads and child processes during tests.
 *
 * Node 20 cannot run `.ts` itself. Worker threads start from a tiny evaluated module that
 * registers tsx's ESM loader inside the worker and then imports the entry point; both workers and
 * child processes get `--conditions=source`, so `@gitport/*` imports resolve to the package
 * sources (the `source` export condition) exactly as they do under vitest.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const tsxApi = import.meta.resolve('tsx/esm/api');
const tsxLoader = import.meta.resolve('tsx');

/** Node options that let a process import `.ts` sources and `@gitport/*` packages by source. */
export const tsNodeArgs: readonly string[] = ['--conditions=source', '--import', tsxLoader];

/** Starts a worker thread on a TypeScript (or JavaScript) module. */
export function startTsWorker(entry: URL | string, options: WorkerOptions = {}): Worker {
  const href = typeof entry === 'string' ? entry : entry.href;
  const bootstrap =
    `import(${JSON.stringify(tsxApi)})` +
    `.then(({ register }) => { register(); return import(${JSON.stringify(href)}); })`;
  return new Worker(bootstrap, {
    ...options,
    eval: true,
    execArgv: ['--conditions=source', ...(options.execArgv ?? [])],
  });
}

/** Spawns `node` on a TypeScript entry point. */
export function spawnTsNode(
  entry: URL | string,
  args: readonly string[] = [],
  options: SpawnOptions = {},
): ChildProcess {
  const path = typeof entry === 'string' ? entry : fileURLToPath(entry);
  return spawn(process.execPath, [...tsNodeArgs, path, ...args], options);
}

/** The command line (for `ext::` remotes or shell use) that runs a TypeScript entry point with node. */
export function tsNodeCommand(entry: URL | string): string[] {
  const path = typeof entry === 'string' ? entry : fileURLToPath(entry);
  return [process.execPath, ...tsNodeArgs, path];
}
