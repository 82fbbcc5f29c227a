/**
 * A GitBackend over a pool of worker threads (DESIGN.md, "Hosting"): each repository is pinned
 * to one worker by a hash of its name, so its updates are serialized in one place; each worker
 * hosts the repositories under the root with the gitport library (worker-entry.ts). A worker
 * starts with the first request pinned to it, as git's http-backend starts its processes per
 * request: an idle worker thread holds its own heap and a loaded library, which a server with
 * fewer busy repositories than cores would keep for nothing.
 *
 * One transport stream per HTTP request, on the gitport smart-HTTP listener (`gitport.http`):
 *
 *   request  = PKT-LINE(json-head) body          json-head = {"method","path","query","headers","repository"}
 *   response = PKT-LINE(json-head) body          json-head = {"statusCode","statusMessage","headers"}
 *
 * The request body streams in with the transport's credit-based flow control, the response
 * streams out the same way; aborting the request aborts the stream, which the worker sees as a
 * failed push (no ref moves). Ref updates come back as `ref-update` bus signals; they drop the
 * repository's cached advertisements and v2 ref listings (`ls-refs`, answered on the gateway's
 * thread once cached), which are also revalidated against the refs on disk.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { type Bus, createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { encodeData, PacketReader, packetText } from '@gitport/pktline';
import { open } from '@gitport/transport';
import { HTTP_STOP, HTTP_STREAM, isRefUpdateEvent, REF_UPDATE_EVENT } from 'gitport/wire';
import type { GitBackend, GitService } from '../backend.js';
import { collect, once } from '../body.js';
import { GatewayError } from '../errors.js';
import type { RefUpdateEvent } from '../sse-hub.js';
import { AdvertisementCache, adKey } from './advertisement-cache.js';
import { isRefListing, lsRefsKey } from './ref-listing.js';
import { releasable } from './released-buffers.js';
import { RepositoryRoot } from './repository-root.js';
import { WORKER_STATS, type WorkerStats } from './worker-stats.js';

export type SpawnWorker = (entry: URL, options: WorkerOptions) => Worker;

export interface WorkerPoolOptions {
  root: string;
  /** Worker threads (default 2). */
  workers?: number;
  /** Trust cached advertisements and repository lookups this long before checking the disk (ms, default 1000). */
  revalidateMs?: number;
  /** Starts one worker; the default runs the built entry, or the TypeScript one through tsx. */
  spawn?: SpawnWorker;
  /**
   * Transport receive window per stream: what a worker may send ahead of the socket (default
   * {@link DEFAULT_STREAM_WINDOW}).
   */
  window?: number;
  /**
   * A worker that dies before it connects (or fails to connect within `connectTimeoutMs`) is
   * started again after `initialMs`, doubling up to `maxMs` while it keeps failing
   * (default 100 ms to 10 s); the pool reports unhealthy meanwhile.
   */
  restartBackoff?: { initialMs?: number; maxMs?: number };
  /** How long a new worker may take to connect (ms, default 60 000). */
  connectTimeoutMs?: number;
  /**
   * A worker's young generation (MB, V8's `maxYoungGenerationSizeMb`; default
   * {@link DEFAULT_WORKER_YOUNG_GENERATION_MB}). The buffers a pack is read into die young, and
   * their memory is returned only when the young generation is collected: a small one keeps
   * what a clone holds near its working set.
   */
  youngGenerationMb?: number;
}

/**
 * See `WorkerPoolOptions.window`. A response (a pack) leaves the worker in writes of a quarter of
 * the window; with the transport's default of 1 MiB the worker runs at most 1 MiB ahead of the
 * socket, so whenever either thread waits for a core (a busy machine, clients indexing on the
 * same cores) the other soon stalls too. 2 MiB lets both keep working; 4 MiB gained no more and
 * held more private memory on the gateway's thread.
 */
export const DEFAULT_STREAM_WINDOW = 2 * 2 ** 20;

/** See `WorkerPoolOptions.youngGenerationMb`. */
export const DEFAULT_WORKER_YOUNG_GENERATION_MB = 6;

export interface WorkerPoolBackend extends GitBackend {
  readonly root: RepositoryRoot;
  readonly size: number;
  /** The worker index a repository is pinned to. */
  workerOf(repo: string): number;
  /** Replaces one worker (terminates it and starts a new one); requests pinned to it wait. */
  restart(index: number): Promise<void>;
  /**
   * Requests a worker is working on (counted from the request until the worker finished or
   * stopped it, whether or not their client is still there), how many it stopped because their
   * client went away or their request failed, and how many were sent to it in all (for
   * monitoring and tests).
   */
  work(index: number): { inFlight: number; stopped: number; sent: number };
  /** What the worker itself reports: smart-HTTP requests it is serving now. */
  workerStats(index: number): Promise<WorkerStats>;
}

interface Slot {
  index: number;
  worker: Worker | undefined;
  peer: string | undefined;
  generation: number;
  starting: Promise<void> | undefined;
  /** Failed starts in a row. */
  failures: number;
  /** A request has needed this worker: it is kept up (and restarted) from then on. */
  wanted: boolean;
  /** The next start, while backing off. */
  retry: ReturnType<typeof setTimeout> | undefined;
}

const encoder = new TextEncoder();

function defaultSpawn(entry: URL, options: WorkerOptions): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  // running from sources (tests): register tsx's loader inside the worker first
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(bootstrap, {
    ...options,
    eval: true,
    execArgv: ['--conditions=source', ...(options.execArgv ?? [])],
  });
}

/**
 * `source`, with `done` run exactly once when it ends (`true`), fails, or is cancelled (`false`),
 * even if it is cancelled before its first item; what ends it (the last `next`, `return`, the
 * failing `next`) settles only after `done` has.
 */
function settling(
  source: AsyncIterable<Uint8Array>,
  done: (complete: boolean) => void | Promise<void>,
): AsyncIterableIterator<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  let finished: Promise<void> | undefined;
  const finish = (complete: boolean) => (finished ??= Promise.resolve().then(() => done(complete)));
  return {
    async next() {
      if (finished !== undefined) {
        await finished;
        return { done: true, value: undefined };
      }
      let step: IteratorResult<Uint8Array>;
      try {
        step = await it.next();
      } catch (error) {
        await finish(false);
        throw error;
      }
      if (step.done) await finish(true);
      return step;
    },
    async return() {
      if (finished === undefined) {
        const stopped = finish(false);
        await it.return?.().catch(() => {});
        await stopped;
      } else await finished;
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * `source`'s chunks, each marked releasable (freed once written); `return` goes straight to
 * `source`, even while a `next` is pending.
 */
function releasing(source: AsyncIterable<Uint8Array>): AsyncIterableIterator<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return {
    async next() {
      const step = await it.next();
      if (!step.done) releasable(step.value);
      return step;
    },
    async return() {
      await it.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** FNV-1a: a stable, well-spread hash of a repository name. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Skips a leading `PKT-LINE("# service=...") flush-pkt` (the gateway adds its own for v0). */
async function stripServiceHeader(bytes: Uint8Array): Promise<Uint8Array> {
  const reader = new PacketReader(once(bytes));
  let header: number;
  try {
    const first = await reader.read();
    if (first === undefined || packetText(first)?.startsWith('# service=') !== true) return bytes;
    header = reader.position;
  } catch {
    // not pkt-lines: the advertisement as it came
    return bytes;
  }
  const next = await reader.read().catch(() => undefined);
  return bytes.subarray(next?.kind === 'flush' ? reader.position : header);
}

export async function createWorkerPoolBackend(options: WorkerPoolOptions): Promise<WorkerPoolBackend> {
  const count = Math.max(1, options.workers ?? 2);
  const revalidateMs = options.revalidateMs ?? 1000;
  const root = new RepositoryRoot(options.root, revalidateMs);
  const cache = new AdvertisementCache(revalidateMs);
  const spawn = options.spawn ?? defaultSpawn;
  const entry = new URL(import.meta.url.endsWith('.ts') ? './worker-entry.ts' : './worker-entry.js', import.meta.url);
  const bus: Bus = createBus({ id: `gateway-${process.pid}`, maxPendingRequests: 100_000 });
  const listeners = new Set<(event: RefUpdateEvent) => void>();
  const slots: Slot[] = Array.from({ length: count }, (_, index) => ({
    index,
    worker: undefined,
    peer: undefined,
    generation: 0,
    starting: undefined,
    failures: 0,
    wanted: false,
    retry: undefined,
  }));
  const backoffInitial = Math.max(1, options.restartBackoff?.initialMs ?? 100);
  const backoffMax = Math.max(backoffInitial, options.restartBackoff?.maxMs ?? 10_000);
  const connectTimeout = options.connectTimeoutMs ?? 60_000;
  const youngGenerationMb = options.youngGenerationMb ?? DEFAULT_WORKER_YOUNG_GENERATION_MB;
  const streamWindow = options.window ?? DEFAULT_STREAM_WINDOW;
  const inFlight = new Set<Promise<unknown>>();
  /** Per worker: requests it works on, those it stopped on request, and all sent to it. */
  const workCounts = slots.map(() => ({ inFlight: 0, stopped: 0, sent: 0 }));
  let workSeq = 0;
  let closed = false;

  /** One attempt: spawn a worker and connect to it; fails if the worker exits before connecting. */
  const start = (slot: Slot): Promise<void> => {
    slot.starting ??= (async () => {
      const id = `gateway-worker-${slot.index}-${slot.generation++}`;
      const worker = spawn(entry, {
        workerData: { id, root: options.root },
        resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb },
      });
      slot.worker = worker;
      worker.on('error', (error) => console.error(`gitport: worker ${id} failed`, error));
      const exited = new Promise<never>((_, reject) => {
        worker.once('exit', (code) => {
          reject(new GatewayError('GATEWAY_BACKEND_FAILED', `worker ${id} exited (code ${code}) before connecting`));
          if (slot.worker !== worker) return;
          const wasUp = slot.peer !== undefined;
          slot.worker = undefined;
          slot.peer = undefined;
          // a worker that crashed after starting is replaced; requests pinned to it wait for the new one
          if (!closed && wasUp) void supervise(slot).catch(() => {});
        });
      });
      exited.catch(() => {});
      const connecting = new AbortController();
      try {
        const peer = await Promise.race([
          bus.connect(nodeEndpoint(worker), {
            timeout: connectTimeout,
            signal: connecting.signal,
          }),
          exited,
        ]);
        if (closed) {
          await worker.terminate();
          throw new GatewayError('GATEWAY_CLOSED', 'shutting down', { status: 503 });
        }
        slot.peer = peer.id;
      } catch (error) {
        connecting.abort();
        if (slot.worker === worker) slot.worker = undefined;
        void worker.terminate();
        throw error;
      }
    })().finally(() => {
      slot.starting = undefined;
    });
    return slot.starting;
  };

  /** Starts a slot's worker; while that fails, tries again with a growing, bounded delay. */
  const supervise = (slot: Slot): Promise<void> => {
    if (slot.retry !== undefined) {
      clearTimeout(slot.retry);
      slot.retry = undefined;
    }
    return start(slot).then(
      () => {
        slot.failures = 0;
      },
      (error: unknown) => {
        if (closed) throw error;
        const delay = Math.min(backoffMax, backoffInitial * 2 ** Math.min(slot.failures, 30));
        slot.failures++;
        console.error(
          `gitport: worker ${slot.index} did not start (${error instanceof Error ? error.message : String(error)}); retrying in ${delay} ms`,
        );
        slot.retry = setTimeout(() => {
          slot.retry = undefined;
          if (!closed && slot.peer === undefined && slot.starting === undefined) void supervise(slot).catch(() => {});
        }, delay);
        throw error;
      },
    );
  };

  /** A slot's first start (by the first request pinned to it); one that fails keeps being retried. */
  const want = (slot: Slot): void => {
    if (slot.wanted) return;
    slot.wanted = true;
    void supervise(slot).catch(() => {});
  };

  bus.on(REF_UPDATE_EVENT, (payload) => {
    if (!isRefUpdateEvent(payload)) return;
    cache.drop(payload.repo);
    const event: RefUpdateEvent = { repo: payload.repo, ref: payload.ref, old: payload.old, new: payload.new };
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        console.error('gitport: ref-update listener failed', error);
      }
    }
  });

  const workerOf = (repo: string) => hashName(repo) % count;

  const peerFor = async (repo: string): Promise<string> => {
    const slot = slots[workerOf(repo)]!;
    want(slot);
    // a worker on its way up is waited for; one backing off after failed starts is not
    if (slot.peer === undefined && slot.starting !== undefined) await slot.starting.catch(() => {});
    if (slot.peer === undefined)
      throw new GatewayError('GATEWAY_BACKEND_FAILED', 'worker unavailable', { status: 503 });
    return slot.peer;
  };

  /**
   * One request over one stream. Its head names the work (`work`), so the worker can be asked to
   * stop it (`HTTP_STOP`), which it answers once the work has stopped. Whatever ends the request
   * early (the client's signal, the returned body cancelled or failing, the request body
   * failing) goes through `stop`, and the work counts as in flight on its worker until the
   * worker has stopped it (or ended the stream, or was lost).
   */
  async function call(
    repo: string,
    head: { method: string; path: string; query: string; headers: Record<string, string> },
    body: AsyncIterable<Uint8Array> | undefined,
    signal: AbortSignal,
  ): Promise<{ status: number; body: AsyncIterable<Uint8Array> }> {
    const index = workerOf(repo);
    const peer = await peerFor(repo);
    const stream = await open(bus, peer, HTTP_STREAM, { signal, window: streamWindow });
    const work = `${++workSeq}`;
    const counter = workCounts[index]!;
    counter.inFlight++;
    counter.sent++;
    let over = false;
    const ended = () => {
      if (over) return;
      over = true;
      counter.inFlight--;
    };
    // the worker answers with a head only once it has registered the work
    let answered = false;
    let headSeen!: () => void;
    const seen = new Promise<void>((resolve) => (headSeen = resolve));
    let stopping: Promise<void> | undefined;
    const stop = (reason: unknown): Promise<void> => {
      stopping ??= (async () => {
        await seen;
        if (answered && !closedCleanly) {
          const stopped = await bus.request(peer, HTTP_STOP, { work }, { timeout: 0 }).catch(() => false);
          if (stopped === true) counter.stopped++;
        }
        stream.abort(reason);
        ended();
      })();
      return stopping;
    };
    // a stream that finished cleanly is work the worker finished; one that failed is stopped
    let closedCleanly = false;
    stream.closed.then(
      () => {
        closedCleanly = true;
        ended();
      },
      (error: unknown) => void stop(error),
    );
    const onAbort = () => void stop(new GatewayError('GATEWAY_ABORTED', 'request aborted', { status: 499 }));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => signal.removeEventListener('abort', onAbort);
    try {
      await stream.write(encodeData(encoder.encode(JSON.stringify({ ...head, repository: repo, work }))));
      void (async () => {
        try {
          if (body !== undefined) for await (const chunk of body) await stream.write(chunk);
          await stream.end();
        } catch (error) {
          // the request body failed (too large, idle, client gone): the worker must not complete the push
          void stop(error);
        }
      })();
      const reader = new PacketReader(stream);
      let first: Awaited<ReturnType<PacketReader['read']>>;
      try {
        first = await reader.read();
        answered = first !== undefined;
      } finally {
        headSeen();
      }
      if (signal.aborted) throw signal.reason;
      const text = first === undefined ? undefined : packetText(first);
      let status = 0;
      try {
        status = Number((JSON.parse(text ?? 'null') as { statusCode?: unknown } | null)?.statusCode);
      } catch {
        status = 0;
      }
      if (!Number.isInteger(status) || status < 100) {
        throw new GatewayError('GATEWAY_BACKEND_FAILED', 'the worker sent no response head', { status: 502 });
      }
      // settles once the worker has stopped the work (see GitBackend.rpc)
      const output = settling(reader.rest(), async (complete) => {
        cleanup();
        if (!complete) await stop(new GatewayError('GATEWAY_ABORTED', 'response not delivered', { status: 499 }));
      });
      return { status, body: output };
    } catch (error) {
      cleanup();
      // a head that never went out gets no answer: nothing to wait for
      headSeen();
      await stop(error);
      if (
        typeof (error as { code?: unknown }).code === 'string' &&
        String((error as { code: string }).code).startsWith('GATEWAY_')
      ) {
        throw error;
      }
      if (signal.aborted) throw new GatewayError('GATEWAY_ABORTED', 'request aborted', { status: 499, cause: error });
      throw new GatewayError('GATEWAY_BACKEND_FAILED', 'the worker failed the request', { status: 502, cause: error });
    }
  }

  const failure = async (status: number, body: AsyncIterable<Uint8Array>): Promise<never> => {
    const message = new TextDecoder()
      .decode(await collect(body))
      .trim()
      .slice(0, 500);
    throw new GatewayError(
      status === 404 ? 'GATEWAY_NOT_FOUND' : 'GATEWAY_BACKEND_FAILED',
      message || `status ${status}`,
      {
        status: status >= 400 && status < 600 ? status : 502,
      },
    );
  };

  /** The repository's directory, which the cache checks its entries against; 404 when absent. */
  const directoryOf = async (repo: string): Promise<string> => {
    const dir = await root.resolve(repo);
    if (dir === undefined) throw new GatewayError('GATEWAY_NOT_FOUND', 'repository not found', { status: 404 });
    return dir;
  };

  const track = <T>(promise: Promise<T>): Promise<T> => {
    inFlight.add(promise);
    void promise.finally(() => inFlight.delete(promise)).catch(() => {});
    return promise;
  };

  return {
    root,
    size: count,
    workerOf,

    async exists(repo) {
      return (await root.resolve(repo)) !== undefined;
    },

    advertise(repo: string, service: GitService, { protocol }) {
      return cache.get(
        repo,
        adKey(service, protocol),
        () => directoryOf(repo),
        async () => {
          const reply = await call(
            repo,
            {
              method: 'GET',
              path: 'info/refs',
              query: `service=${service}`,
              headers: protocol === null ? {} : { 'git-protocol': protocol },
            },
            undefined,
            AbortSignal.timeout(60_000),
          );
          if (reply.status !== 200) return failure(reply.status, reply.body);
          return stripServiceHeader(await collect(reply.body));
        },
      );
    },

    async rpc(repo, service, body, { protocol, signal }) {
      if (closed) throw new GatewayError('GATEWAY_CLOSED', 'shutting down', { status: 503 });
      let finish!: () => void;
      track(new Promise<void>((resolve) => (finish = resolve)));
      try {
        const reply = await call(
          repo,
          {
            method: 'POST',
            path: service,
            query: '',
            headers: {
              'content-type': `application/x-${service}-request`,
              ...(protocol === null ? {} : { 'git-protocol': protocol }),
            },
          },
          body,
          signal,
        );
        if (reply.status !== 200) return await failure(reply.status, reply.body);
        // the chunks that came as buffers of their own are this thread's alone: freed once
        // written (released-buffers.ts)
        return settling(releasing(reply.body), () => {
          // the push is over: its advertisements are stale whether or not its signal has arrived yet
          if (service === 'git-receive-pack') cache.drop(repo);
          finish();
        });
      } catch (error) {
        finish();
        throw error;
      }
    },

    cachedAdvertisement(repo, service, protocol) {
      return cache.peek(repo, adKey(service, protocol));
    },

    listRefs(repo, request, { protocol }) {
      if (closed || protocol !== 'version=2') return undefined;
      const key = lsRefsKey(request);
      if (key === undefined) return undefined;
      return cache.get(
        repo,
        key,
        () => directoryOf(repo),
        async () => {
          // one load serves every request waiting for it: no client's signal stops it
          const reply = await call(
            repo,
            {
              method: 'POST',
              path: 'git-upload-pack',
              query: '',
              headers: { 'content-type': 'application/x-git-upload-pack-request', 'git-protocol': protocol },
            },
            once(request),
            AbortSignal.timeout(60_000),
          );
          if (reply.status !== 200) return failure(reply.status, reply.body);
          return collect(reply.body);
        },
        isRefListing,
      );
    },

    refsChanged(repo) {
      if (repo === undefined) cache.clear();
      else cache.drop(repo);
    },

    onRefUpdate(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    // a worker no request has needed yet is not down; one that was started must be up
    healthy: () => !closed && slots.every((s) => !s.wanted || s.peer !== undefined),

    work(index) {
      const counts = workCounts[index];
      if (counts === undefined) throw new GatewayError('GATEWAY_BAD_ARGUMENT', `no worker ${index}`);
      return { ...counts };
    },

    async workerStats(index) {
      const slot = slots[index];
      if (slot?.peer === undefined) throw new GatewayError('GATEWAY_BACKEND_FAILED', `worker ${index} is not up`);
      const stats = await bus.request<{ httpWork?: unknown }>(slot.peer, WORKER_STATS, null);
      return { httpWork: Number(stats?.httpWork) };
    },

    async restart(index) {
      const slot = slots[index];
      if (slot === undefined || closed) throw new GatewayError('GATEWAY_BAD_ARGUMENT', `no worker ${index}`);
      const worker = slot.worker;
      slot.wanted = true;
      slot.peer = undefined;
      if (worker !== undefined) await worker.terminate();
      while (slot.peer === undefined) await (slot.starting ?? supervise(slot));
    },

    async close() {
      if (closed) return;
      closed = true;
      // requests in flight (pushes) finish first
      await Promise.allSettled([...inFlight]);
      for (const slot of slots) clearTimeout(slot.retry);
      bus.close();
      await Promise.all(slots.map((s) => s.worker?.terminate()));
    },
  };
}
