/**
 * The delta search on a second core (Node): a worker thread runs the same DeltaWindow over the
 * later part of the sorted candidates while the calling thread searches the earlier part, as
 * git's pack-objects splits its delta search between threads. The worker also deflates what it
 * decided (deltas, and objects left whole), so that the writer only copies those bytes out.
 * Where the worker can open the writer's store itself (an FsObjectStore on Node's fs), it reads
 * its objects there, as each of git's threads reads its own: the writer then sends ids, not
 * bytes, and the reading (inflating and rebuilding along delta chains) is shared too.
 *
 * One worker per process, started on first use and unref'd while idle; jobs are independent
 * (each has its own window). The worker loads this same module: from `dist` directly, from the
 * TypeScript sources (tests, benchmarks) through tsx's loader.
 */
import * as nodeFs from 'node:fs';
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { deflate } from '#zlib';
import { type DeltaObject, DeltaWindow } from './delta.js';
import type { RemoteDeltaJob, RemoteDeltaResult, RemoteDeltaSearch } from './delta-worker.js';
import type { FileHandleLike, ObjectStoreFs } from './fs-like.js';
import { FsObjectStore } from './fs-store.js';
import { type ObjectId, TYPE_CODES } from './object.js';
import { asSmallInteger } from './small-integer.js';
import { readHeaderOf, readHeaderSyncOf } from './stored-reads.js';

const MARK = 'gitport-delta-worker';

/**
 * A batch of objects in one shared buffer: their bytes one after another (each at a multiple
 * of 8, so that a delta index can read a base as words where it lies), and `meta`, `FIELDS`
 * numbers per object. One buffer per message, not one per object: sending and wrapping
 * thousands of small buffers costs more than copying their bytes. The buffer is a
 * SharedArrayBuffer, which a message passes without copying and without detaching: the first
 * ArrayBuffer a thread detaches (a transfer does) makes V8 drop the optimized code of every
 * function that reads typed arrays, in that thread, and check for detached buffers from then on.
 */
interface Packed {
  meta: Float64Array;
  bytes: Uint8Array;
}

/** Per object sent for the search: i, size, type code, flags (FLAG_*), offset, length. */
const BATCH_FIELDS = 6;
/** Per object sent to deflate: i, delta (1 or 0), offset, length. */
const COMPRESS_FIELDS = 4;
/** Per result: i, base, depth, size, offset of z, length of z. */
const RESULT_FIELDS = 6;
const FLAG_WHOLE = 1;
const FLAG_EDGE = 2;

type ToWorker =
  | {
      op: 'job';
      id: number;
      window: number;
      depth: number;
      level: number;
      wholeBudget: number;
      /** The repository the worker reads the objects from itself (then batches carry `oids`). */
      gitDir: string | undefined;
    }
  | ({ op: 'batch'; id: number; chunk: number; last: boolean; oids?: ObjectId[] } & Packed)
  | ({ op: 'compress'; id: number; oids?: (ObjectId | undefined)[] } & Packed)
  | { op: 'end'; id: number }
  /** Opens the repository ahead of a job (see `RemoteDeltaSearch.prepare`). */
  | { op: 'open'; gitDir: string }
  | ({ op: 'headers'; id: number; gitDir: string; oids: readonly ObjectId[] } & HeaderReads);
type FromWorker =
  | ({ op: 'results'; id: number; last: boolean } & Packed)
  | { op: 'done'; id: number }
  | { op: 'headers'; id: number }
  | { op: 'error'; id: number; message: string };

/**
 * Packs `items` into one buffer: `fill` writes an item's numbers at `meta[at]`, given where its
 * bytes lie (offset and length in `bytes`).
 */
function packItems<T>(
  items: readonly T[],
  fields: number,
  bytesOf: (item: T) => Uint8Array | undefined,
  fill: (item: T, meta: Float64Array, at: number, offset: number, length: number) => void,
): Packed {
  let total = 0;
  for (const item of items) total += ((bytesOf(item)?.length ?? 0) + 7) & ~7;
  const bytes = new Uint8Array(new SharedArrayBuffer(total));
  const meta = new Float64Array(items.length * fields);
  let offset = 0;
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    const data = bytesOf(item);
    const length = data?.length ?? 0;
    if (data) bytes.set(data, offset);
    fill(item, meta, k * fields, offset, length);
    offset += (length + 7) & ~7;
  }
  return { meta, bytes };
}

interface Pending {
  results: RemoteDeltaResult[];
  /** Chunks sent whose last results have not come back. */
  queued: number;
  resolve: (results: RemoteDeltaResult[]) => void;
  reject: (error: Error) => void;
}

/**
 * Header reads shared by the two threads (see SharedHeaderReads), in memory both see: who took
 * each batch (0 nobody, CLAIMED_THERE the worker, CLAIMED_HERE the caller), and what the worker read.
 */
interface HeaderReads {
  batch: number;
  claims: Int32Array;
  types: Uint8Array;
  sizes: Float64Array;
}
const CLAIMED_THERE = 1;
const CLAIMED_HERE = 2;

/** A header read asked of the worker (see `RemoteDeltaSearch.headers`). */
interface Asked {
  resolve: () => void;
  reject: (error: Error) => void;
}

interface Shared {
  worker: Worker;
  jobs: Map<number, Pending>;
  asked: Map<number, Asked>;
}

let shared: Shared | null | undefined;
let nextId = 1;

function spawn(): Worker {
  const url = new URL(import.meta.url);
  const options = { workerData: { [MARK]: true } };
  if (!url.pathname.endsWith('.ts')) return new Worker(url, options);
  // running from the TypeScript sources: register tsx's loader inside the worker first
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true, execArgv: ['--conditions=source'] });
}

/** The worker holds the process only while it has work (a job, or headers asked). */
function unrefIfIdle(state: Shared): void {
  if (state.jobs.size === 0 && state.asked.size === 0) state.worker.unref();
}

function worker(): Shared | undefined {
  if (shared !== undefined) return shared ?? undefined;
  try {
    const w = spawn();
    const jobs = new Map<number, Pending>();
    const asked = new Map<number, Asked>();
    const state: Shared = { worker: w, jobs, asked };
    w.on('message', (m: FromWorker) => {
      const ask = asked.get(m.id);
      if (ask && (m.op === 'headers' || m.op === 'error')) {
        asked.delete(m.id);
        unrefIfIdle(state);
        if (m.op === 'headers') ask.resolve();
        else ask.reject(new Error(m.message));
        return;
      }
      const job = jobs.get(m.id);
      if (!job) return;
      if (m.op === 'results') {
        const { meta, bytes } = m;
        const count = meta.length / RESULT_FIELDS;
        deltaWorkerUse.results += count;
        for (let at = 0; at < meta.length; at += RESULT_FIELDS) {
          const offset = meta[at + 4]!;
          job.results.push({
            i: meta[at]! | 0,
            base: meta[at + 1]! | 0,
            depth: meta[at + 2]! | 0,
            size: asSmallInteger(meta[at + 3]!),
            // a view of the message's buffer, which the writer copies into its chunks
            z: bytes.subarray(offset, offset + meta[at + 5]!),
          });
        }
        if (m.last) job.queued--;
      } else if (m.op === 'done' || m.op === 'error') {
        jobs.delete(m.id);
        unrefIfIdle(state);
        if (m.op === 'done') job.resolve(job.results);
        else job.reject(new Error(m.message));
      }
    });
    const fail = (error: Error) => {
      if (shared === state) shared = null;
      for (const job of jobs.values()) job.reject(error);
      for (const ask of asked.values()) ask.reject(error);
      jobs.clear();
      asked.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`delta worker exited (${code})`)));
    // after the listeners: listening for messages refs the worker's port again
    w.unref();
    shared = state;
    return state;
  } catch {
    shared = null;
    return undefined;
  }
}

/** Object cache and page cache of the worker's own store: it reads its share of the objects. */
const WORKER_CACHE_BYTES = 16 * 2 ** 20;
const WORKER_PAGE_CACHE_BYTES = 32 * 2 ** 20;

/**
 * The directory of a store the worker can open itself: an FsObjectStore reading through Node's
 * own fs (another fs, or another store, may hold what a second copy would not see).
 */
function sharedGitDir(store: object | undefined): string | undefined {
  return store instanceof FsObjectStore && store.readsThrough(nodeFs) ? store.gitDir : undefined;
}

/**
 * Use of the worker thread in this process, for tests and diagnostics: jobs begun on it, those
 * whose objects it read itself, results it sent back (objects it searched or deflated), and
 * header reads shared with it.
 */
export const deltaWorkerUse = { jobs: 0, reading: 0, results: 0, headers: 0 };

/** Whether a second thread can help with `cores` cores available: not on one core, where it only competes. */
export function deltaWorkerHelps(cores: number): boolean {
  return cores > 1;
}

/**
 * The worker thread's search, or undefined where none can start or it cannot help (one core):
 * the caller then searches alone. `cores` defaults to what the process may use.
 */
export function remoteDeltaSearch(cores = availableParallelism()): RemoteDeltaSearch | undefined {
  if (!isMainThread && workerData?.[MARK]) return undefined;
  if (!deltaWorkerHelps(cores)) return undefined;
  const state = worker();
  if (!state) return undefined;
  return {
    prepare(store) {
      const gitDir = sharedGitDir(store);
      if (gitDir === undefined) return false;
      state.worker.postMessage({ op: 'open', gitDir } satisfies ToWorker);
      return true;
    },
    headers(store, oids, batch) {
      const gitDir = sharedGitDir(store);
      if (gitDir === undefined) return undefined;
      const id = nextId++;
      const batches = Math.ceil(oids.length / batch);
      const reads: HeaderReads = {
        batch,
        claims: new Int32Array(new SharedArrayBuffer(4 * batches)),
        types: new Uint8Array(new SharedArrayBuffer(oids.length)),
        sizes: new Float64Array(new SharedArrayBuffer(8 * oids.length)),
      };
      deltaWorkerUse.headers++;
      const answered = new Promise<void>((resolve, reject) => state.asked.set(id, { resolve, reject }));
      // never an unhandled rejection: a caller that read every batch itself does not wait
      answered.catch(() => {});
      // the worker holds the process only once the caller waits for it (`done`)
      state.worker.postMessage({ op: 'headers', id, gitDir, oids, ...reads } satisfies ToWorker);
      return {
        batches,
        claim: (b) => Atomics.compareExchange(reads.claims, b, 0, CLAIMED_HERE) === 0,
        done: async () => {
          if (state.asked.has(id)) state.worker.ref();
          await answered;
          return { types: reads.types, sizes: reads.sizes };
        },
      };
    },
    begin(options): RemoteDeltaJob {
      const id = nextId++;
      let settled: Promise<RemoteDeltaResult[]>;
      const post = (message: ToWorker) => state.worker.postMessage(message);
      settled = new Promise<RemoteDeltaResult[]>((resolve, reject) => {
        state.jobs.set(id, { results: [], queued: 0, resolve, reject });
      });
      // a failed job is reported by finish(); never an unhandled rejection meanwhile
      settled.catch(() => {});
      state.worker.ref();
      const gitDir = sharedGitDir(options.store);
      const { window, depth, level, wholeBudget } = options;
      post({ op: 'job', id, window, depth, level, wholeBudget, gitDir });
      deltaWorkerUse.jobs++;
      const reads = gitDir !== undefined;
      if (reads) deltaWorkerUse.reading++;
      return {
        reads,
        add(objects, chunk, last) {
          const job = state.jobs.get(id);
          if (job && last) job.queued++;
          const packed = packItems(
            objects,
            BATCH_FIELDS,
            (o) => o.data,
            (o, meta, at, offset, length) => {
              meta[at] = o.i;
              meta[at + 1] = o.size;
              meta[at + 2] = TYPE_CODES[o.type];
              meta[at + 3] = (o.whole ? FLAG_WHOLE : 0) | (o.edge ? FLAG_EDGE : 0);
              meta[at + 4] = offset;
              meta[at + 5] = length;
            },
          );
          const oids = reads ? objects.map((o) => o.oid) : undefined;
          post({ op: 'batch', id, chunk, last, oids, ...packed });
        },
        compress(objects) {
          const packed = packItems(
            objects,
            COMPRESS_FIELDS,
            (o) => o.data,
            (o, meta, at, offset, length) => {
              meta[at] = o.i;
              meta[at + 1] = o.delta ? 1 : 0;
              meta[at + 2] = offset;
              meta[at + 3] = length;
            },
          );
          const oids = reads ? objects.map((o) => (o.data ? undefined : o.oid)) : undefined;
          post({ op: 'compress', id, oids, ...packed });
        },
        queuedChunks() {
          return state.jobs.get(id)?.queued ?? 0;
        },
        finish() {
          post({ op: 'end', id });
          return settled;
        },
        cancel() {
          const job = state.jobs.get(id);
          if (!job) return;
          post({ op: 'end', id });
          state.jobs.delete(id);
          unrefIfIdle(state);
          job.reject(new Error('cancelled'));
        },
      };
    },
  };
}

// ---- the worker side ----

interface WorkerObject extends DeltaObject {
  i: number;
  edge: boolean;
}

interface Job {
  /** The objects' store, where the worker reads them itself. */
  store: FsObjectStore | undefined;
  window: DeltaWindow<WorkerObject>;
  level: number;
  wholeBudget: number;
  data: Map<WorkerObject, Uint8Array>;
  chunk: number;
}

/**
 * The bytes of each object of a batch: views of the message's buffer, or where the worker reads
 * the objects itself, views of its store's caches (not to be changed). The offset and length of
 * an object's bytes are the last two of its `fields` numbers.
 */
async function batchData(
  job: Job,
  m: { meta: Float64Array; bytes: Uint8Array; oids?: (ObjectId | undefined)[] },
  fields: number,
): Promise<Uint8Array[]> {
  const { meta, bytes, oids } = m;
  const count = meta.length / fields;
  const data: Uint8Array[] = new Array(count);
  for (let k = 0; k < count; k++) {
    const oid = oids?.[k];
    if (oid === undefined) {
      const offset = meta[k * fields + fields - 2]!;
      data[k] = bytes.subarray(offset, offset + meta[k * fields + fields - 1]!);
      continue;
    }
    const store = job.store!;
    const obj = store.readSync(oid) ?? (await store.read(oid));
    if (!obj) throw new Error(`object ${oid} is missing`);
    data[k] = obj.data;
  }
  return data;
}

/** Deflates a batch of objects the caller writes (deltas, and objects whole within the budget). */
function deflateBatch(job: Job, meta: Float64Array, data: Uint8Array[], results: RemoteDeltaResult[]): void {
  for (let k = 0; k < data.length; k++) {
    const at = k * COMPRESS_FIELDS;
    const delta = meta[at + 1] === 1;
    if (!delta && job.wholeBudget <= 0) continue;
    const bytes = data[k]!;
    const z = deflate(bytes, job.level);
    if (!delta) job.wholeBudget -= z.length;
    results.push({ i: meta[at]! | 0, base: -1, depth: 0, size: bytes.length, z });
  }
}

/** Searches a batch of one chunk's objects in the job's window, deflating what it decides. */
function searchBatch(
  job: Job,
  chunk: number,
  meta: Float64Array,
  data: Uint8Array[],
  results: RemoteDeltaResult[],
): void {
  if (chunk !== job.chunk) {
    // a new run of the candidates: the last one's objects are no bases for it
    job.window.clear();
    job.data.clear();
    job.chunk = chunk;
  }
  const window = job.window;
  for (let k = 0; k < data.length; k++) {
    const at = k * BATCH_FIELDS;
    const flags = meta[at + 3]!;
    const target: WorkerObject = {
      i: meta[at]! | 0,
      type: meta[at + 2]! | 0,
      size: asSmallInteger(meta[at + 1]!),
      whole: (flags & FLAG_WHOLE) !== 0,
      edge: (flags & FLAG_EDGE) !== 0,
      depth: 0,
      // set from the start: a field added later changes the object's map
      index: undefined,
    };
    // a view of the batch's buffer (or of the store's caches), kept while the object is in the window
    const bytes = data[k]!;
    let found: { base: WorkerObject; delta: Uint8Array } | undefined;
    const searched = !target.edge && window.hasUsable(target);
    if (searched) {
      for (const base of window.unindexed(target, bytes.length)) window.provide(base, job.data.get(base)!);
      found = window.search(target, bytes);
    }
    if (found) {
      const z = deflate(found.delta, job.level);
      results.push({ i: target.i, base: found.base.i, depth: target.depth, size: found.delta.length, z });
    } else if (!target.edge && !target.whole && job.wholeBudget > 0) {
      const z = deflate(bytes, job.level);
      job.wholeBudget -= z.length;
      results.push({ i: target.i, base: -1, depth: 0, size: bytes.length, z });
    }
    // a searched object is indexed as it enters the window; the others keep their bytes for an
    // index on demand
    window.push(target, searched ? bytes : undefined, found?.base);
    if (!searched) job.data.set(target, bytes);
    for (const w of job.data.keys()) if (w.index || !window.slots.includes(w)) job.data.delete(w);
  }
}

/**
 * Node's `fs.promises` for the worker's own store, except that files opened for reading read
 * synchronously: the worker serves nothing else while it waits, and a read handed to the thread
 * pool costs two thread wake-ups, which on a busy machine take longer than the read (packs
 * mostly come from the page cache, as git's mmap reads them). Writes and listings stay as they are.
 */
const workerFs: ObjectStoreFs = {
  ...(nodeFs.promises as unknown as ObjectStoreFs),
  async open(path: string, flags: string): Promise<FileHandleLike> {
    if (flags !== 'r') return (nodeFs.promises as unknown as Required<ObjectStoreFs>).open(path, flags);
    const fd = nodeFs.openSync(path, 'r');
    return {
      async read(buffer, offset, length, position) {
        return { bytesRead: nodeFs.readSync(fd, buffer, offset, length, position) };
      },
      async close() {
        nodeFs.closeSync(fd);
      },
    };
  },
};

/** A store of the worker's, over the repository at `gitDir`, with its pack indexes read. */
function openStore(gitDir: string): FsObjectStore {
  return new FsObjectStore(workerFs, gitDir, {
    cacheBytes: WORKER_CACHE_BYTES,
    pageCacheBytes: WORKER_PAGE_CACHE_BYTES,
  });
}

/** Reads the store's pack indexes and puts each pack's entries in offset order, as its first reads would. */
async function warm(store: FsObjectStore): Promise<void> {
  const { packs } = store.storedPacks();
  await packs.refresh();
  for (const pack of packs.list) void pack.positions;
}

/**
 * Reads the headers of the batches of `oids` it takes, from the first on, until one is taken
 * by the caller (who takes them from the last back): type codes (0: not found) and sizes.
 */
async function readHeaders(store: FsObjectStore, oids: readonly ObjectId[], reads: HeaderReads): Promise<void> {
  const { batch, claims, types, sizes } = reads;
  for (let b = 0; b < claims.length; b++) {
    if (Atomics.compareExchange(claims, b, 0, CLAIMED_THERE) !== 0) return;
    const end = Math.min(oids.length, (b + 1) * batch);
    for (let k = b * batch; k < end; k++) {
      const oid = oids[k]!;
      const h = readHeaderSyncOf(store, oid) ?? (await readHeaderOf(store, oid));
      if (!h) continue;
      types[k] = TYPE_CODES[h.type];
      sizes[k] = h.size;
    }
  }
}

function runWorker(): void {
  const port = parentPort!;
  const jobs = new Map<number, Job>();
  /**
   * The store opened ahead of a job (`open`, `headers`): the next job on the same repository
   * takes it; a job's end, or another repository opened, closes it, so that none stays open for
   * long with a stale list of packs.
   */
  let opened: { gitDir: string; store: FsObjectStore } | undefined;
  const dropOpened = async () => {
    const o = opened;
    opened = undefined;
    await o?.store.close().catch(() => {});
  };
  const openedFor = async (gitDir: string): Promise<FsObjectStore> => {
    if (opened?.gitDir !== gitDir) {
      await dropOpened();
      const store = openStore(gitDir);
      opened = { gitDir, store };
      await warm(store);
    }
    return opened!.store;
  };
  // messages are handled one after another, each to its end (reads may wait for the disk)
  let tail = Promise.resolve();
  port.on('message', (m: ToWorker) => {
    tail = tail.then(() => handle(m));
  });
  const handle = async (m: ToWorker): Promise<void> => {
    if (m.op === 'open') {
      // a failure here is met again, and reported, by the job that follows
      await openedFor(m.gitDir).catch(() => dropOpened());
      return;
    }
    if (m.op === 'headers') {
      try {
        // nothing is opened when the caller has taken every batch already
        if (Atomics.load(m.claims, 0) === 0) await readHeaders(await openedFor(m.gitDir), m.oids, m);
        port.postMessage({ op: 'headers', id: m.id } satisfies FromWorker);
      } catch (error) {
        await dropOpened();
        port.postMessage({ op: 'error', id: m.id, message: (error as Error).message } satisfies FromWorker);
      }
      return;
    }
    try {
      if (m.op === 'job') {
        let store: FsObjectStore | undefined;
        if (m.gitDir !== undefined && opened?.gitDir === m.gitDir) {
          store = opened.store;
          opened = undefined;
        } else if (m.gitDir !== undefined) {
          store = openStore(m.gitDir);
        }
        jobs.set(m.id, {
          store,
          window: new DeltaWindow<WorkerObject>(m.window, m.depth),
          level: m.level,
          wholeBudget: m.wholeBudget,
          data: new Map(),
          chunk: -1,
        });
        return;
      }
      const job = jobs.get(m.id);
      if (!job) return;
      if (m.op === 'end') {
        job.window.clear();
        jobs.delete(m.id);
        await job.store?.close();
        await dropOpened();
        port.postMessage({ op: 'done', id: m.id } satisfies FromWorker);
        return;
      }
      const results: RemoteDeltaResult[] = [];
      const send = (last: boolean) => {
        const packed = packItems(
          results,
          RESULT_FIELDS,
          (r) => r.z,
          (r, meta, at, offset, length) => {
            meta[at] = r.i;
            meta[at + 1] = r.base;
            meta[at + 2] = r.depth;
            meta[at + 3] = r.size;
            meta[at + 4] = offset;
            meta[at + 5] = length;
          },
        );
        port.postMessage({ op: 'results', id: m.id, last, ...packed } satisfies FromWorker);
      };
      // the objects' bytes first (reads may wait for the disk), then the work without awaiting
      const data = await batchData(job, m, m.op === 'compress' ? COMPRESS_FIELDS : BATCH_FIELDS);
      if (m.op === 'compress') {
        deflateBatch(job, m.meta, data, results);
        send(false);
      } else {
        searchBatch(job, m.chunk, m.meta, data, results);
        send(m.last);
      }
    } catch (error) {
      const job = jobs.get(m.id);
      jobs.delete(m.id);
      await job?.store?.close().catch(() => {});
      port.postMessage({ op: 'error', id: m.id, message: (error as Error).message } satisfies FromWorker);
    }
  };
}

if (!isMainThread && workerData?.[MARK]) runWorker();
