/**
 * Pack import concurrency, a row of the reference transport report (10 concurrent imports:
 * "7.8x time for 10x work"): the time of 10 imports of the same pack started together, over the
 * time of one import (lower is better; 10 means no overlap at all, below 10 means the imports
 * overlap, ~5 is what two cores allow).
 *
 * - in one thread: 10 `importPack` calls at once on this event loop;
 * - across worker threads: the 10 imports split over 2 worker threads (5 each, concurrently
 *   inside each), against one import in one worker;
 * - peer: `git index-pack` on the same pack file, 10 processes at once against one.
 *
 * The pack: the reference report's corpus, 20 commits of 50 KB random blobs (~1 MB), made by
 * gitport's createPack and checked by git (index-pack must accept it). Every import is checked
 * for the full object count. Each figure is the median of 15 runs, single and batch runs
 * interleaved, each started after gc().
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import {
  createPack,
  importPack,
  MemoryObjectStore,
  type ObjectId,
  serializeCommit,
  serializeTree,
} from '@gitport/pack';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { prng } from '@gitport/tests/history';
import { afterAll, bench, describe } from 'vitest';
import { median, QUICK, record, sized } from './report.js';

const COMMITS = sized(20, 4);
const BLOB_SIZE = 50 * 1000;
const CONCURRENT = 10;
const WORKERS = 2;
const RUNS = sized(15, 1);

async function referencePack(): Promise<{ pack: Uint8Array; objects: number }> {
  const store = new MemoryObjectStore();
  const random = prng(4);
  const entries: { mode: string; name: string; oid: ObjectId; type: 'blob' }[] = [];
  let parent: ObjectId | undefined;
  for (let i = 0; i < COMMITS; i++) {
    const blob = new Uint8Array(BLOB_SIZE);
    for (let j = 0; j < blob.byteLength; j++) blob[j] = (random() * 256) | 0;
    entries.push({ mode: '100644', name: `blob-${i}.bin`, oid: await store.write('blob', blob), type: 'blob' });
    const tree = await store.write('tree', serializeTree(entries));
    const who = { name: 'bench', email: 'bench@gitport.invalid', timestamp: 1_700_000_000 + i, timezone: '+0000' };
    parent = await store.write(
      'commit',
      serializeCommit({
        tree,
        parents: parent ? [parent] : [],
        author: who,
        committer: who,
        extraHeaders: [],
        message: `${i}\n`,
      }),
    );
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of createPack(store, { wants: [parent!] })) chunks.push(chunk);
  const pack = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    pack.set(c, at);
    at += c.byteLength;
  }
  return { pack, objects: store.size };
}

const { pack, objects } = await referencePack();
const sandbox = await createGitSandbox('gitport-bench-concurrency-');
const packPath = sandbox.path('reference.pack');
await writeFile(packPath, pack);

async function importOnce(): Promise<void> {
  const store = new MemoryObjectStore();
  await importPack(store, [pack]);
  if (store.size !== objects) throw new Error(`imported ${store.size} of ${objects} objects`);
}

let gitRun = 0;
async function gitIndexPack(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-index-pack-'));
  try {
    await sandbox.git(['index-pack', '-o', join(dir, `p${gitRun++}.idx`), packPath], { cwd: dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A worker that imports the pack `count` times per job. */
class ImportWorker {
  readonly #worker: Worker;
  readonly #ready: Promise<void>;
  #next = 0;
  readonly #pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  constructor() {
    this.#worker = startTsWorker(new URL('./workers/import-worker.ts', import.meta.url));
    this.#ready = new Promise((resolve, reject) => {
      this.#worker.once('error', reject);
      this.#worker.on('message', (m: { ready?: boolean; id?: number; objects?: number[]; error?: string }) => {
        if (m.ready) return resolve();
        const job = this.#pending.get(m.id!);
        if (!job) return;
        this.#pending.delete(m.id!);
        if (m.error) job.reject(new Error(m.error));
        else if (m.objects!.some((n) => n !== objects)) job.reject(new Error(`worker imported ${m.objects}`));
        else job.resolve();
      });
    });
  }
  async run(count: number): Promise<void> {
    await this.#ready;
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, pack, count });
    });
  }
  terminate(): Promise<number> {
    return this.#worker.terminate();
  }
}

const workers = Array.from({ length: WORKERS }, () => new ImportWorker());

const gc = (globalThis as { gc?: () => void }).gc;
const figures = new Map<string, number>();
/**
 * Median wall times of one run and of the 10-at-once batch, RUNS of each after a warm-up,
 * interleaved (so both see the same JIT state and machine load), each started after gc().
 */
const measure = async (name: string, once: () => Promise<unknown>, batch: () => Promise<unknown>) => {
  await once();
  await batch();
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < RUNS; i++) {
    for (const [k, fn] of [once, batch].entries()) {
      gc?.();
      const start = performance.now();
      await fn();
      times[k as 0 | 1].push(performance.now() - start);
    }
  }
  figures.set(`${name}:1`, median(times[0]));
  figures.set(`${name}:10`, median(times[1]));
};

describe(`pack import concurrency: ${CONCURRENT} imports of a ${(pack.byteLength / 1e6).toFixed(2)} MB pack`, () => {
  bench(
    'gitport, one thread',
    async () => {
      await measure('one', importOnce, () => Promise.all(Array.from({ length: CONCURRENT }, importOnce)));
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );

  bench(
    `gitport, ${WORKERS} worker threads`,
    async () => {
      const share = (i: number) => Math.floor(CONCURRENT / WORKERS) + (i < CONCURRENT % WORKERS ? 1 : 0);
      await measure(
        'workers',
        () => workers[0]!.run(1),
        () => Promise.all(workers.map((w, i) => w.run(share(i)))),
      );
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );

  bench(
    'git index-pack processes',
    async () => {
      await measure('git', gitIndexPack, () => Promise.all(Array.from({ length: CONCURRENT }, gitIndexPack)));
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.terminate()));
  await sandbox.cleanup();
  const ratio = (name: string) => figures.get(`${name}:10`)! / figures.get(`${name}:1`)!;
  const ms = (name: string, n: number) => figures.get(`${name}:${n}`)!.toFixed(1);
  const size = `${(pack.byteLength / 1e6).toFixed(2)} MB pack, ${objects} objects${QUICK ? ' (quick)' : ''}`;
  const gitNote = `git index-pack: ${ms('git', 1)} ms once, ${ms('git', 10)} ms for 10 processes`;
  record({
    id: 'concurrency.import-10.time-ratio',
    value: ratio('one'),
    unit: 'x time for 10x work',
    peer: 'git index-pack x10 processes',
    peerValue: ratio('git'),
    better: 'lower',
    note: `one thread: ${ms('one', 1)} ms once, ${ms('one', 10)} ms for 10 at once; ${gitNote}; ${size}; reference report 004: 7.8x`,
  });
  record({
    id: 'concurrency.import-10-workers.time-ratio',
    value: ratio('workers'),
    unit: 'x time for 10x work',
    peer: 'git index-pack x10 processes',
    peerValue: ratio('git'),
    better: 'lower',
    note: `${WORKERS} worker threads: ${ms('workers', 1)} ms once, ${ms('workers', 10)} ms for 10 at once; ${gitNote}; ${size}`,
  });
  record({
    id: 'concurrency.import-10.ms',
    value: figures.get('one:10')!,
    unit: 'ms',
    peer: 'git index-pack x10 processes',
    peerValue: figures.get('git:10')!,
    better: 'lower',
    note: `wall time of 10 concurrent imports in one thread; ${size}`,
  });
  record({
    id: 'concurrency.import-10-workers.ms',
    value: figures.get('workers:10')!,
    unit: 'ms',
    peer: 'git index-pack x10 processes',
    peerValue: figures.get('git:10')!,
    better: 'lower',
    note: `wall time of 10 concurrent imports over ${WORKERS} worker threads; ${size}`,
  });
});
