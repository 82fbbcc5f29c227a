/**
 * Live sync: follow a repository's ref updates, from the gitport gateway's Server-Sent Events or
 * from a bus host's `ref-update` signals, and (optionally) fetch each update into a local
 * repository.
 *
 *   const watcher = watch('https://git.example/notes.git', {
 *     onUpdate: (event) => console.log(event.ref, event.new),
 *     fetch: { into: repo },                     // fetch after every update (and after a reset)
 *   });
 *   watcher.stop();                              // or abort the `signal`
 *
 *   watch({ bus, peer: 'host', repo: 'notes' }, { onUpdate, fetch: { into: repo } });
 *
 * Over HTTP the watcher reads `<url>/events` (`id`, `event: ref-update`, `data: {repo, ref, old,
 * new}`): with EventSource where there is one and no headers are needed, with a streaming fetch
 * otherwise. A dropped connection is reopened after the server's `retry:` delay with
 * `Last-Event-ID`, and the gateway replays what was missed, so no update is lost. When it cannot
 * (the client missed more than its replay cap, or the gateway restarted) it sends `event: reset`:
 * the watcher then lists the remote's refs again and calls `onReset` with them (and fetches, with
 * `fetch`). A refusal that retrying cannot mend (401, 403, 404) stops the watcher and reaches
 * `onError`; network failures are retried.
 *
 * Updates are handed over one at a time, in order: `onUpdate` may return a promise, and the next
 * update waits for it. Automatic fetches are coalesced: updates that arrive while one runs are
 * taken by one more fetch after it.
 */
import type { Bus } from '@gitport/bus';
import type { FetchResult, Repository } from '@gitport/protocol';
import { GitportError, isGitportError, toGitportError } from './errors.js';
import { readEventStream } from './event-stream.js';
import { credentialHeaders, type HttpRemoteOptions, splitCredentials } from './http-remote.js';
import { type RemoteFetchOptions, type RemoteOperations, remote } from './remote.js';
import { isRefUpdateEvent, REF_UPDATE_EVENT, type RefUpdateEvent } from './wire.js';

/** A repository on a bus host, followed through its `ref-update` signals. */
export interface BusWatchSource {
  bus: Bus;
  /** Only this peer's signals (default: any peer's). */
  peer?: string;
  /** Only this repository (default: every repository). */
  repo?: string;
}

export interface WatchFetch {
  /** The repository updates are fetched into. */
  into: Repository;
  /** The remote fetched from; default the watched URL, or `remote(bus, peer, repo)` on a bus. */
  from?: RemoteOperations;
  options?: RemoteFetchOptions;
  /** Each fetch's result. */
  onFetched?: (result: FetchResult) => void;
}

export interface ResetInfo {
  /** Why the server could not replay: `cap`, `epoch` (it restarted), `overflow` (this client was too slow). */
  reason: string;
  /** The remote's refs now (HTTP), listed again after the reset. */
  refs: { name: string; oid: string }[];
}

export interface WatchOptions {
  /** Headers, credentials and fetch for the HTTP requests (events and automatic fetches). */
  http?: HttpRemoteOptions;
  onUpdate?: (event: RefUpdateEvent) => void | Promise<void>;
  /** The server could not replay what was missed: here are the refs as they are now. */
  onReset?: (reset: ResetInfo) => void | Promise<void>;
  /** Fetch into a repository after every update (coalesced). */
  fetch?: WatchFetch;
  /** A failure: a stream that broke (it is retried), a fetch that failed, or the refusal that stopped the watcher. */
  onError?: (error: GitportError) => void;
  /** The event stream is open (again, after a reconnection): updates from now on are not missed. */
  onOpen?: () => void;
  /** Resume after this event id (a `Last-Event-ID` saved earlier). */
  lastEventId?: string;
  /** Use EventSource where the runtime has one and no headers or custom fetch are needed (default true). */
  eventSource?: boolean;
  /** Reconnection delay before the server said one (ms, default 1000). */
  retryMs?: number;
  signal?: AbortSignal;
}

export interface Watcher {
  /** The last event id seen (what a reconnection sends as `Last-Event-ID`). */
  readonly lastEventId: string | undefined;
  /** Resolves once the watcher has stopped (by stop, abort, or a refusal). */
  readonly stopped: Promise<void>;
  stop(): void;
}

/** Follows the ref updates of the repository at `url` (smart-HTTP URL of the gitport gateway). */
export function watch(source: string | BusWatchSource, options: WatchOptions): Watcher {
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) controller.abort(options.signal.reason);
  else options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const signal = controller.signal;

  const report = (error: unknown) => {
    if (signal.aborted) return;
    try {
      options.onError?.(toGitportError(error));
    } catch {
      // a throwing onError changes nothing here
    }
  };

  const fetchFrom =
    options.fetch?.from ??
    (typeof source === 'string'
      ? remote(source, options.http ?? {})
      : source.peer !== undefined && source.repo !== undefined
        ? remote(source.bus, source.peer, source.repo)
        : undefined);
  if (options.fetch && fetchFrom === undefined) {
    throw new GitportError('REPO_INVALID_NAME', 'watch: fetch needs `from`, or a bus source with peer and repo');
  }
  const fetcher = options.fetch && fetchFrom ? coalescedFetch(options.fetch, fetchFrom, signal, report) : undefined;

  /** Updates in order: each handler finishes before the next one starts. */
  let queue: Promise<void> = Promise.resolve();
  const deliver = (work: () => void | Promise<void>) => {
    queue = queue.then(async () => {
      if (signal.aborted) return;
      try {
        await work();
      } catch (error) {
        report(error);
      }
    });
    return queue;
  };
  const update = (event: RefUpdateEvent) =>
    deliver(async () => {
      await options.onUpdate?.(event);
      fetcher?.request();
    });

  let lastEventId = options.lastEventId;
  let running: Promise<void>;
  if (typeof source === 'string') {
    running = httpEvents(source, options, signal, {
      update,
      reset: (reason) =>
        deliver(async () => {
          const listing = fetchFrom ? await fetchFrom.lsRefs({ signal }) : undefined;
          await options.onReset?.({ reason, refs: (listing?.refs ?? []).map((r) => ({ name: r.name, oid: r.oid })) });
          fetcher?.request();
        }),
      id: (id) => {
        lastEventId = id;
      },
      report,
      open: () => {
        try {
          options.onOpen?.();
        } catch (error) {
          report(error);
        }
      },
    });
  } else {
    running = busEvents(source, signal, update);
  }
  const stopped = running
    .catch((error) => {
      report(error);
    })
    .finally(() => {
      options.signal?.removeEventListener('abort', onOuterAbort);
      controller.abort();
    })
    .then(() => queue)
    .then(() => fetcher?.idle());

  const stop = () => controller.abort(new GitportError('ABORTED', 'watcher stopped'));
  return {
    get lastEventId() {
      return lastEventId;
    },
    stopped,
    stop,
  };
}

/** One fetch at a time; requests during a fetch are served by one more fetch after it. */
function coalescedFetch(
  spec: WatchFetch,
  from: RemoteOperations,
  signal: AbortSignal,
  report: (error: unknown) => void,
): { request(): void; idle(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  const run = async () => {
    do {
      again = false;
      if (signal.aborted) return;
      try {
        const result = await from.fetch(spec.into, { ...spec.options, signal });
        spec.onFetched?.(result);
      } catch (error) {
        report(error);
      }
    } while (again);
  };
  return {
    request() {
      if (running) {
        again = true;
        return;
      }
      running = run().finally(() => {
        running = undefined;
      });
    },
    idle: async () => {
      while (running) await running;
    },
  };
}

function busEvents(
  source: BusWatchSource,
  signal: AbortSignal,
  update: (event: RefUpdateEvent) => void,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const off = source.bus.on(REF_UPDATE_EVENT, (payload, meta) => {
      if (!isRefUpdateEvent(payload)) return;
      if (source.peer !== undefined && meta.from !== source.peer) return;
      if (source.repo !== undefined && payload.repo !== source.repo) return;
      update({ repo: payload.repo, ref: payload.ref, old: payload.old, new: payload.new });
    });
    const end = () => {
      off();
      resolve();
    };
    if (signal.aborted) end();
    else signal.addEventListener('abort', end, { once: true });
  });
}

interface HttpEventSinks {
  open(): void;
  update(event: RefUpdateEvent): void;
  reset(reason: string): void;
  id(id: string): void;
  report(error: unknown): void;
}

/** Statuses a retry cannot mend. */
const FATAL = new Set(['HTTP_UNAUTHORIZED', 'HTTP_FORBIDDEN', 'REPO_NOT_FOUND', 'HTTP_BAD_URL']);

async function httpEvents(
  url: string,
  options: WatchOptions,
  signal: AbortSignal,
  sinks: HttpEventSinks,
): Promise<void> {
  const { url: base, auth: urlAuth } = splitCredentials(url);
  const eventsUrl = `${base}/events`;
  const http = options.http ?? {};
  const headers = { ...http.headers, ...credentialHeaders(http.auth ?? urlAuth) };
  const EventSourceImpl = (globalThis as { EventSource?: typeof EventSource }).EventSource;
  if (
    options.eventSource !== false &&
    EventSourceImpl !== undefined &&
    Object.keys(headers).length === 0 &&
    http.fetch === undefined
  ) {
    return eventSourceEvents(EventSourceImpl, eventsUrl, options.lastEventId, signal, sinks);
  }
  const fetchImpl = http.fetch ?? globalThis.fetch;
  const state = { lastEventId: options.lastEventId ?? '', retry: undefined as number | undefined };
  while (!signal.aborted) {
    try {
      const response = await fetchImpl(eventsUrl, {
        headers: {
          Accept: 'text/event-stream',
          ...headers,
          ...(state.lastEventId !== '' ? { 'Last-Event-ID': state.lastEventId } : {}),
        },
        cache: 'no-store',
        signal,
      });
      if (response.status !== 200) {
        const text = (await response.text().catch(() => '')).trim().slice(0, 1024);
        const code =
          response.status === 401
            ? 'HTTP_UNAUTHORIZED'
            : response.status === 403
              ? 'HTTP_FORBIDDEN'
              : response.status === 404
                ? 'REPO_NOT_FOUND'
                : 'HTTP_FAILED';
        throw new GitportError(code, `events of ${base}: HTTP ${response.status}${text ? `: ${text}` : ''}`, {
          data: { status: response.status, url: eventsUrl, message: text },
        });
      }
      if (response.body === null) throw new GitportError('HTTP_NETWORK', `events of ${base}: no body`);
      sinks.open();
      for await (const event of readEventStream(bodyChunks(response.body), state)) {
        sinks.id(event.lastEventId);
        dispatch(event.type, event.data, sinks);
      }
      // the server ended the stream (a restart, a proxy's timeout): reconnect
    } catch (error) {
      if (signal.aborted) return;
      if (isGitportError(error) && FATAL.has(error.code)) throw error;
      sinks.report(
        isGitportError(error)
          ? error
          : new GitportError('HTTP_NETWORK', `events of ${base} broke off: ${(error as Error).message}`, {
              cause: error,
            }),
      );
    }
    await delay(state.retry ?? options.retryMs ?? 1000, signal);
  }
}

function dispatch(type: string, data: string, sinks: HttpEventSinks): void {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (error) {
    sinks.report(
      new GitportError('HTTP_BAD_REQUEST', `an event that is not JSON: ${data.slice(0, 80)}`, { cause: error }),
    );
    return;
  }
  if (type === 'ref-update' && isRefUpdateEvent(value)) {
    sinks.update({ repo: value.repo, ref: value.ref, old: value.old, new: value.new });
  } else if (type === 'reset') {
    const reason = (value as { reason?: unknown } | null)?.reason;
    sinks.reset(typeof reason === 'string' ? reason : 'unknown');
  }
}

function eventSourceEvents(
  EventSourceImpl: typeof EventSource,
  url: string,
  lastEventId: string | undefined,
  signal: AbortSignal,
  sinks: HttpEventSinks,
): Promise<void> {
  // EventSource cannot send a first Last-Event-ID header: the gateway takes it as a query parameter
  const target = lastEventId ? `${url}?lastEventId=${encodeURIComponent(lastEventId)}` : url;
  return new Promise<void>((resolve, reject) => {
    const source = new EventSourceImpl(target);
    const on = (type: string) => (event: MessageEvent) => {
      if (event.lastEventId) sinks.id(event.lastEventId);
      dispatch(type, String(event.data), sinks);
    };
    source.addEventListener('open', () => sinks.open());
    source.addEventListener('ref-update', on('ref-update'));
    source.addEventListener('reset', on('reset'));
    source.addEventListener('error', () => {
      // EventSource reconnects by itself (with Last-Event-ID); CLOSED means it gave up: a refusal
      if (source.readyState === EventSourceImpl.CLOSED) {
        signal.removeEventListener('abort', end);
        reject(
          new GitportError('HTTP_FAILED', `events of ${url} refused (the server's answer was not an event stream)`),
        );
      } else {
        sinks.report(new GitportError('HTTP_NETWORK', `events of ${url} broke off; reconnecting`));
      }
    });
    const end = () => {
      source.close();
      resolve();
    };
    if (signal.aborted) end();
    else signal.addEventListener('abort', end, { once: true });
  });
}

async function* bodyChunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  try {
    for (;;) {
      const step = await reader.read();
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
