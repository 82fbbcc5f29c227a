/**
 * The delta search on a second core (Node): a worker thread runs the same DeltaWindow over the
 * later part of the sorted candidates while the calling thread searches the earlier part, as
 * git's pack-objects splits its delta search between threads. The worker also deflates what it
 * decided (deltas, and objects left whole), so that the writer only copies those bytes out.
 *
 * One worker per process, started on first use and unref'd while idle; jobs are independent
 * (each has its own window). The worker loads this same module: from `dist` directly, from the
 * TypeScript sources (tests, benchmarks) through tsx's loader.
 */
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { deflate } from '#zlib';
import { type DeltaObject, DeltaWindow } from './delta.js';
import type { RemoteDeltaJob, RemoteDeltaObject, RemoteDeltaResult, RemoteDeltaSearch } from './delta-worker.js';

const MARK = 'gitport-delta-worker';

type ToWorker =
  | { op: 'job'; id: number; window: number; depth: number; level: number; wholeBudget: number }
  | { op: 'batch'; id: number; objects: RemoteDeltaObject[]; chunk: number; last: boolean }
  | { op: 'compress'; id: number; objects: { i: number; data: Uint8Array; delta?: boolean }[] }
  | { op: 'end'; id: number };
type FromWorker =
  | { op: 'results'; id: number; results: RemoteDeltaResult[]; last: boolean }
  | { op: 'done'; id: number }
  | { op: 'error'; id: number; message: string };

interface Pending {
  results: RemoteDeltaResult[];
  /** Chunks sent whose last results have not come back. */
  queued: number;
  resolve: (results: RemoteDeltaResult[]) => void;
  reject: (error: Error) => void;
}

let shared: { worker: Worker; jobs: Map<number, Pending> } | null | undefined;
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

function worker(): { worker: Worker; jobs: Map<number, Pending> } | undefined {
  if (shared !== undefined) return shared ?? undefined;
  try {
    const w = spawn();
    const jobs = new Map<number, Pending>();
    const state = { worker: w, jobs };
    w.unref();
    w.on('message', (m: FromWorker) => {
      const job = jobs.get(m.id);
      if (!job) return;
      if (m.op === 'results') {
        deltaWorkerUse.results += m.results.length;
        for (const r of m.results) job.results.push(r);
        if (m.last) job.queued--;
      } else {
        jobs.delete(m.id);
        if (jobs.size === 0) w.unref();
        if (m.op === 'done') job.resolve(job.results);
        else job.reject(new Error(m.message));
      }
    });
    const fail = (error: Error) => {
      if (shared === state) shared = null;
      for (const job of jobs.values()) job.reject(error);
      jobs.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`delta worker exited (${code})`)));
    shared = state;
    return state;
  } catch {
    shared = null;
    return undefined;
  }
}

/**
 * Deflated bytes in a buffer of their own size: deflate's output is a view into a buffer sized for
 * the input, and a transferred buffer goes whole, so the thread that keeps the result would hold
 * the uncompressed size.
 */
function ownDeflate(data: Uint8Array, level: number): Uint8Array {
  const z = deflate(data, level);
  return z.byteOffset === 0 && z.byteLength === z.buffer.byteLength ? z : z.slice();
}

/**
 * Use of the worker thread in this process, for tests and diagnostics: jobs begun on it, and
 * results it sent back (objects it searched or deflated).
 */
export const deltaWorkerUse = { jobs: 0, results: 0 };

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
    begin(options): RemoteDeltaJob {
      const id = nextId++;
      let settled: Promise<RemoteDeltaResult[]>;
      const post = (message: ToWorker, transfer: ArrayBuffer[] = []) => state.worker.postMessage(message, transfer);
      settled = new Promise<RemoteDeltaResult[]>((resolve, reject) => {
        state.jobs.set(id, { results: [], queued: 0, resolve, reject });
      });
      // a failed job is reported by finish(); never an unhandled rejection meanwhile
      settled.catch(() => {});
      state.worker.ref();
      post({ op: 'job', id, ...options });
      deltaWorkerUse.jobs++;
      return {
        add(objects, chunk, last) {
          const transfer: ArrayBuffer[] = [];
          for (const o of objects) if (o.data) transfer.push(o.data.buffer as ArrayBuffer);
          const job = state.jobs.get(id);
          if (job && last) job.queued++;
          post({ op: 'batch', id, objects, chunk, last }, transfer);
        },
        compress(objects) {
          post(
            { op: 'compress', id, objects },
            objects.map((o) => o.data.buffer as ArrayBuffer),
          );
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
          if (state.jobs.size === 0) state.worker.unref();
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
  window: DeltaWindow<WorkerObject>;
  level: number;
  wholeBudget: number;
  data: Map<WorkerObject, Uint8Array>;
  chunk: number;
}

function runWorker(): void {
  const port = parentPort!;
  const jobs = new Map<number, Job>();
  port.on('message', (m: ToWorker) => {
    try {
      if (m.op === 'job') {
        jobs.set(m.id, {
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
        port.postMessage({ op: 'done', id: m.id } satisfies FromWorker);
        return;
      }
      const results: RemoteDeltaResult[] = [];
      const transfer: ArrayBuffer[] = [];
      if (m.op === 'compress') {
        for (const o of m.objects) {
          if (!o.delta && job.wholeBudget <= 0) continue;
          const z = ownDeflate(o.data, job.level);
          if (!o.delta) job.wholeBudget -= z.length;
          results.push({ i: o.i, base: -1, depth: 0, size: o.data.length, z });
          transfer.push(z.buffer as ArrayBuffer);
        }
        port.postMessage({ op: 'results', id: m.id, results, last: false } satisfies FromWorker, transfer);
        return;
      }
      if (m.chunk !== job.chunk) {
        // a new run of the candidates: the last one's objects are no bases for it
        job.window.clear();
        job.data.clear();
        job.chunk = m.chunk;
      }
      const window = job.window;
      for (const o of m.objects) {
        const target: WorkerObject = { i: o.i, type: o.type, size: o.size, whole: o.whole, edge: o.edge, depth: 0 };
        const data = o.data!;
        let found: { base: WorkerObject; delta: Uint8Array } | undefined;
        const searched = !target.edge && window.hasUsable(target);
        if (searched) {
          for (const base of window.unindexed(target, data.length)) window.provide(base, job.data.get(base)!);
          found = window.search(target, data);
        }
        if (found) {
          const z = ownDeflate(found.delta, job.level);
          results.push({ i: o.i, base: found.base.i, depth: target.depth, size: found.delta.length, z });
          transfer.push(z.buffer as ArrayBuffer);
        } else if (!target.edge && !target.whole && job.wholeBudget > 0) {
          const z = ownDeflate(data, job.level);
          job.wholeBudget -= z.length;
          results.push({ i: o.i, base: -1, depth: 0, size: data.length, z });
          transfer.push(z.buffer as ArrayBuffer);
        }
        // a searched object is indexed as it enters the window; the others keep their data
        // for an index on demand
        window.push(target, searched ? data : undefined, found?.base);
        if (!searched) job.data.set(target, data);
        for (const k of job.data.keys()) if (k.index || !window.slots.includes(k)) job.data.delete(k);
      }
      port.postMessage({ op: 'results', id: m.id, results, last: m.last } satisfies FromWorker, transfer);
    } catch (error) {
      jobs.delete(m.id);
      port.postMessage({ op: 'error', id: m.id, message: (error as Error).message } satisfies FromWorker);
    }
  });
}

if (!isMainThread && workerData?.[MARK]) runWorker();
