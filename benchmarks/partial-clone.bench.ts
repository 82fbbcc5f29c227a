/**
 * Partial clone served by gitport next to git's own server, in the same run, on the same bare
 * repository (a seeded history from the fast-import generator): `git clone --bare --filter=<spec>`
 * (protocol v2, git as the client) through `gitport serve` and through `git http-backend` with
 * `uploadpack.allowFilter`, for `blob:none` and `tree:0`. Bytes are what each server sent, counted
 * by the same TCP proxy; time is the clone's wall time, median of several runs.
 *
 * Then gitport as the client: `remote(url).clone(fs, dir, { bare: true, filter })` in Node next to
 * `git clone --bare --filter` against the same server (`gitport serve`, through the same proxy).
 *
 * Then a browser: a module Web Worker in headless Chromium clones the same history from `gitport
 * serve` into OPFS and lists HEAD's tree; time to that first view for gitport's `blob:none` and
 * `tree:0` clones and gitport's full clone (the clone's `onHeadView`: HEAD's trees as soon as the
 * pack brought them, while the clone goes on), next to isomorphic-git's full clone (it has no
 * partial clone), listed once its clone is done.
 */
import { cp, rm } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { ensureHistory } from '@gitport/tests/history';
import { remote } from 'gitport';
import { nodeFs } from 'gitport/node';
import { afterAll, bench, describe } from 'vitest';
import { startHttpBackend } from '../tests/src/gateway/http-backend.js';
import { type ServeProcess, startServe } from '../tests/src/gateway/serve-process.js';
import { withPartialClonePage } from '../tests/src/partial-clone/browser-page.js';
import { startByteCountingProxy } from './byte-counting-proxy.js';
import { QUICK, record, sized } from './report.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
const COMMITS = sized(1500, 100);
const RUNS = sized(5, 1);
const BROWSER_RUNS = sized(3, 1);
const MB = 1e6;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('partial clone', () => {
  let sandbox: GitSandbox | undefined;
  let serve: ServeProcess | undefined;
  let backend: Awaited<ReturnType<typeof startHttpBackend>> | undefined;

  /** Stops the servers and removes the sandbox (once; also after a failure). */
  const stop = async () => {
    serve?.child.kill('SIGTERM');
    await serve?.exit;
    serve = undefined;
    await backend?.close();
    backend = undefined;
    await sandbox?.cleanup();
    sandbox = undefined;
  };
  afterAll(stop);

  bench(
    'git clone --filter through gitport serve vs git http-backend',
    async () => {
      sandbox = await createGitSandbox('gitport-bench-partial-');
      const root = sandbox.path('root');
      const history = await ensureHistory({ commits: COMMITS, seed: 1 });
      await cp(history.gitDir, `${root}/history.git`, { recursive: true });
      await sandbox.git(['--git-dir', `${root}/history.git`, 'config', 'uploadpack.allowFilter', 'true']);
      serve = await startServe(['--root', root, '--port', '0', '--workers', '1'], true);
      backend = await startHttpBackend(root);
      const ours = await startByteCountingProxy(serve.url);
      const theirs = await startByteCountingProxy(backend.url);
      let n = 0;
      const clone = async (proxy: typeof ours, filter: string) => {
        const dest = sandbox!.path(`clone-${n++}`);
        const before = proxy.received;
        const start = performance.now();
        await sandbox!.git(['clone', '--bare', '--quiet', `--filter=${filter}`, `${proxy.url}/history.git`, dest]);
        const ms = performance.now() - start;
        const bytes = proxy.received - before;
        const missing = await sandbox!.git(['--git-dir', dest, 'rev-list', '--objects', '--missing=print', '--all']);
        const objects = missing.split('\n').filter((l) => l !== '' && !l.startsWith('?')).length;
        await rm(dest, { recursive: true, force: true });
        return { ms, bytes, objects };
      };
      try {
        for (const filter of ['blob:none', 'tree:0']) {
          await clone(ours, filter);
          await clone(theirs, filter);
          const samples: Record<'ours' | 'theirs', { ms: number; bytes: number; objects: number }[]> = {
            ours: [],
            theirs: [],
          };
          for (let i = 0; i < RUNS; i++) {
            samples.ours.push(await clone(ours, filter));
            samples.theirs.push(await clone(theirs, filter));
          }
          const ourObjects = samples.ours[0]!.objects;
          const theirObjects = samples.theirs[0]!.objects;
          if (ourObjects !== theirObjects)
            throw new Error(`--filter=${filter}: gitport sent ${ourObjects} objects, git ${theirObjects}`);
          const slug = filter.replace(/[^a-z0-9]+/g, '-');
          const note = `git clone --bare --filter=${filter} (protocol v2) of ensureHistory({ commits: ${COMMITS}, seed: 1 }), ${ourObjects} objects, median of ${RUNS}${QUICK ? ' (quick)' : ''}; gitport serve --workers 1 vs git http-backend (uploadpack.allowFilter)`;
          record({
            id: `clone.partial-${slug}.ms`,
            value: median(samples.ours.map((s) => s.ms)),
            unit: 'ms',
            peer: 'git http-backend',
            peerValue: median(samples.theirs.map((s) => s.ms)),
            better: 'lower',
            note,
          });
          record({
            id: `clone.partial-${slug}.mb`,
            value: median(samples.ours.map((s) => s.bytes)) / MB,
            unit: 'MB',
            peer: 'git http-backend',
            peerValue: median(samples.theirs.map((s) => s.bytes)) / MB,
            better: 'lower',
            goal: { max: 1.05, on: 'ratio' },
            note,
          });
        }
      } finally {
        await ours.close();
        await theirs.close();
        await stop();
      }
    },
    once,
  );
  bench(
    'gitport as the client: remote(url).clone({ filter }) vs git clone --filter',
    async () => {
      sandbox = await createGitSandbox('gitport-bench-partial-client-');
      const root = sandbox.path('root');
      const history = await ensureHistory({ commits: COMMITS, seed: 1 });
      await cp(history.gitDir, `${root}/history.git`, { recursive: true });
      serve = await startServe(['--root', root, '--port', '0', '--workers', '1'], true);
      const proxy = await startByteCountingProxy(serve.url);
      let n = 0;
      const clone = async (client: 'gitport' | 'git', filter: string) => {
        const dest = sandbox!.path(`client-${n++}.git`);
        const before = proxy.received;
        const start = performance.now();
        if (client === 'gitport') {
          await remote(`${proxy.url}/history.git`).clone(nodeFs(), dest, { bare: true, filter });
        } else {
          await sandbox!.git(['clone', '--bare', '--quiet', `--filter=${filter}`, `${proxy.url}/history.git`, dest]);
        }
        const ms = performance.now() - start;
        const bytes = proxy.received - before;
        const listed = await sandbox!.git(['--git-dir', dest, 'rev-list', '--objects', '--missing=print', '--all']);
        const objects = listed.split('\n').filter((l) => l !== '' && !l.startsWith('?')).length;
        await rm(dest, { recursive: true, force: true });
        return { ms, bytes, objects };
      };
      try {
        for (const filter of ['blob:none', 'tree:0']) {
          await clone('gitport', filter);
          await clone('git', filter);
          const samples: Record<'gitport' | 'git', { ms: number; bytes: number; objects: number }[]> = {
            gitport: [],
            git: [],
          };
          for (let i = 0; i < RUNS; i++) {
            samples.gitport.push(await clone('gitport', filter));
            samples.git.push(await clone('git', filter));
          }
          const ourObjects = samples.gitport[0]!.objects;
          if (ourObjects !== samples.git[0]!.objects)
            throw new Error(`--filter=${filter}: gitport has ${ourObjects} objects, git ${samples.git[0]!.objects}`);
          const slug = filter.replace(/[^a-z0-9]+/g, '-');
          const note = `bare clone with filter ${filter} (protocol v2) of ensureHistory({ commits: ${COMMITS}, seed: 1 }) from gitport serve --workers 1, ${ourObjects} objects, median of ${RUNS}${QUICK ? ' (quick)' : ''}; gitport's remote(url).clone in Node vs git clone`;
          record({
            id: `clone.partial-client-${slug}.ms`,
            value: median(samples.gitport.map((s) => s.ms)),
            unit: 'ms',
            peer: 'git clone',
            peerValue: median(samples.git.map((s) => s.ms)),
            better: 'lower',
            note,
          });
          record({
            id: `clone.partial-client-${slug}.mb`,
            value: median(samples.gitport.map((s) => s.bytes)) / MB,
            unit: 'MB',
            peer: 'git clone',
            peerValue: median(samples.git.map((s) => s.bytes)) / MB,
            better: 'lower',
            goal: { max: 1.05, on: 'ratio' },
            note,
          });
        }
      } finally {
        await proxy.close();
        await stop();
      }
    },
    once,
  );

  bench(
    'first view of HEAD in a browser worker: partial vs full vs isomorphic-git',
    async () => {
      sandbox = await createGitSandbox('gitport-bench-partial-browser-');
      const root = sandbox.path('root');
      const history = await ensureHistory({ commits: COMMITS, seed: 1 });
      await cp(history.gitDir, `${root}/history.git`, { recursive: true });
      serve = await startServe(['--root', root, '--port', '0', '--workers', '1'], true);
      try {
        await withPartialClonePage(serve.url, async (run) => {
          const modes = ['partial', 'tree0', 'full', 'isomorphic-git'] as const;
          const samples: Record<
            (typeof modes)[number],
            { ms: number; cloneMs: number; bytes: number; paths: number }[]
          > = {
            partial: [],
            tree0: [],
            full: [],
            'isomorphic-git': [],
          };
          // one warm-up of each (vite's first transform of the worker, Chromium's compile)
          for (let i = -1; i < BROWSER_RUNS; i++) {
            for (const mode of modes) {
              const report =
                mode === 'tree0'
                  ? await run({ mode: 'partial', filter: 'tree:0', repository: 'history.git' })
                  : await run({ mode, repository: 'history.git' });
              if (report.error !== undefined) throw new Error(`${mode}: ${report.error}`);
              if (i >= 0)
                samples[mode].push({
                  ms: report.firstViewMs!,
                  cloneMs: report.cloneMs!,
                  bytes: report.bytes!,
                  paths: report.paths!,
                });
            }
          }
          const paths = new Set(modes.map((mode) => samples[mode][0]!.paths));
          if (paths.size !== 1) throw new Error(`the clones list different trees: ${[...paths]}`);
          const peer = median(samples['isomorphic-git'].map((s) => s.ms));
          const note = `a module Web Worker in headless Chromium clones ensureHistory({ commits: ${COMMITS}, seed: 1 }) from gitport serve over HTTP into OPFS and lists HEAD's ${[...paths][0]} files; from the clone's start to the list, median of ${BROWSER_RUNS}${QUICK ? ' (quick)' : ''}; gitport: the paths of the clone's onHeadView (HEAD's trees from the pack while the clone goes on; the finished clone's listing when the pack has no trees), checked against the finished clone's; isomorphic-git: clone without checkout, then listFiles`;
          record({
            id: 'clone.browser-first-view-partial.ms',
            value: median(samples.partial.map((s) => s.ms)),
            unit: 'ms',
            peer: 'isomorphic-git full clone',
            peerValue: peer,
            better: 'lower',
            goal: { max: 0.1, on: 'ratio' },
            note: `${note}; gitport clone with filter blob:none (${(median(samples.partial.map((s) => s.bytes)) / MB).toFixed(2)} MB received, the clone itself ${median(samples.partial.map((s) => s.cloneMs)).toFixed(0)} ms)`,
          });
          record({
            id: 'clone.browser-first-view-tree0.ms',
            value: median(samples.tree0.map((s) => s.ms)),
            unit: 'ms',
            peer: 'isomorphic-git full clone',
            peerValue: peer,
            better: 'lower',
            note: `${note}; gitport clone with filter tree:0 (${(median(samples.tree0.map((s) => s.bytes)) / MB).toFixed(2)} MB received), HEAD's trees then fetched lazily by the listing`,
          });
          record({
            id: 'clone.browser-first-view-full.ms',
            value: median(samples.full.map((s) => s.ms)),
            unit: 'ms',
            peer: 'isomorphic-git full clone',
            peerValue: peer,
            better: 'lower',
            note: `${note}; gitport full clone (${(median(samples.full.map((s) => s.bytes)) / MB).toFixed(2)} MB received)`,
          });
        });
      } finally {
        await stop();
      }
    },
    once,
  );
});
