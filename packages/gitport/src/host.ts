/**
 * Hosting repositories on a bus peer.
 *
 * Stateful git (one transport stream per session, listener `gitport.git`): the client opens a
 * stream and sends one pkt-line naming the service and the repository, in the shape of git's
 * daemon request (gitprotocol-pack: "Git Transport"):
 *
 *   git-proto-request = request-command SP pathname NUL [ host-parameter NUL ] [ NUL extra-parameters ]
 *   request-command   = "git-upload-pack" / "git-receive-pack"
 *   pathname          = "/" <repository name> ".git"
 *   extra-parameters  = "version=2" NUL     (protocol v2 for upload-pack)
 *
 * after which the stream carries exactly what git's upload-pack / receive-pack speak over
 * git:// or ssh. An unknown repository or service gets `ERR <message>` and the stream ends.
 *
 * Stateless smart HTTP (listener `gitport.http`, see http-plugin.ts): one stream per request.
 * A request head may name its work (`"work": "<id>"`, unique per requesting peer); the peer can
 * then stop it with a bus request `gitport.http-stop` `{ work }`, answered once the work has
 * stopped (the round is aborted, its stream too). The round of a stream that fails (the peer
 * aborted it, or went away) gets an AbortSignal, so packing or indexing stops and a push in
 * flight moves no ref; a round's stream ends only after the round has settled.
 *
 * After every successful ref update a `ref-update` signal `{ repo, ref, old, new }` goes to every
 * peer of the bus (and to `onRefUpdate` listeners).
 *
 * Memory: what serving a pack allocates lives in typed arrays (the pack index, reuse buffers,
 * side-band buffers handed over to the reader), while V8 sizes a thread's young generation by
 * how much of it survives, up to tens of MB. A worker thread that mostly hosts repositories
 * keeps near its working set with a small one, `new Worker(url, { resourceLimits: {
 * maxYoungGenerationSizeMb: 2 } })` (the gateway's worker pool gives its repository workers a
 * small one too); the main thread's own is set with `node --max-semi-space-size`.
 */

import type { Bus } from '@gitport/bus';
import { ZERO_ID } from '@gitport/pack/internal/object';
import { encodeText, PacketReader, packetText } from '@gitport/pktline';
import type { PushCommand, ReceivePackOptions, Repository, UploadPackOptions } from '@gitport/protocol';
import { peerErrorMessage } from '@gitport/protocol/internal/errors';
import {
  advertiseRefsHttp,
  handleReceivePackHttp,
  handleUploadPackHttp,
  protocolFromHeader,
  rpcResultHeaders,
} from '@gitport/protocol/internal/http';
import { serveReceivePack } from '@gitport/protocol/internal/receive-pack';
import { serveUploadPack } from '@gitport/protocol/internal/upload-pack';
import { type DuplexStream, listen } from '@gitport/transport';
import { exposeControl } from './control.js';
import { GitportError } from './errors.js';
import { GIT_STREAM, parseGitRequest } from './git-request.js';
import { encodeHead, type HttpRequestHead, readHead } from './http-plugin.js';
import { type HostedRepository, type RepositoryRegistry, staticRepositories } from './registry.js';
import { HTTP_STOP, HTTP_STREAM, REF_UPDATE_EVENT, type RefUpdateEvent } from './wire.js';
import { yieldingStore } from './yielding-store.js';

export { encodeGitRequest, GIT_STREAM, type GitRequest, parseGitRequest } from './git-request.js';

const encoder = new TextEncoder();

export interface HostOptions {
  uploadPack?: UploadPackOptions;
  receivePack?: ReceivePackOptions;
  /** Expose the comlink control API to every peer (default true). */
  control?: boolean;
  /** Whether the control API may create and delete repositories (default true). */
  manage?: boolean;
  /** The transport receive window for incoming streams. */
  window?: number;
  /**
   * Called when serving one stream fails (the stream itself is already failed or answered), with
   * the full error. The peer is told only typed errors' safe messages (`peerErrorMessage`); an
   * unexpected error reaches it as `internal error`, its detail only here. A peer that aborts its
   * stream is no failure of the host's and is not reported (one that is lost still is).
   */
  onError?: (error: unknown, context: { peer: string; service: string; repository: string }) => void;
}

export interface Host {
  readonly repositories: RepositoryRegistry;
  /** Smart-HTTP requests being served (from their head to the end of their round), for monitoring and tests. */
  readonly httpWork: number;
  /** Stateful git sessions (upload-pack, receive-pack) being served, for monitoring and tests. */
  readonly gitWork: number;
  /** Ref updates made through this host. */
  onRefUpdate(listener: (event: RefUpdateEvent) => void): () => void;
  /** Stops listening; streams in flight finish. */
  close(): void;
}

/**
 * Hosts `repositories` on the bus: git's services to every peer (stateful streams and the
 * isomorphic-git plugin's smart HTTP), ref-update signals, and the comlink control API (unless
 * `control: false`).
 */
export function host(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(
    bus,
    repositories,
    options,
    options.control === false ? [serveHttp] : [serveHttp, serveControl],
    receiveGit,
  );
}

/**
 * `host` for the peers that clone, fetch and push with `remote(bus, ...)` or `busRemote`: git's
 * services over stateful streams and the ref-update signals, without the isomorphic-git plugin's
 * smart HTTP and without the control API (so without comlink), for a lighter bundle. `control`
 * and `manage` are not read; `httpWork` stays 0.
 */
export function hostGit(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(bus, repositories, options, [], receiveGit);
}

/**
 * `hostGit` that serves clones and fetches only: a push (`git-receive-pack`) is refused with
 * `PUSH_NOT_ACCEPTED` before anything is read, and receive-pack with its object checks, pack
 * import and quarantine stays out of the bundle. `receivePack` is not read; `onRefUpdate`
 * reports nothing (refs change only through the repository's own API).
 */
export function hostReadOnly(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: Omit<HostOptions, 'receivePack' | 'control' | 'manage'> = {},
): Host {
  return serve(bus, repositories, options, [], undefined);
}

/** The push side of a stateful session: receive-pack, its failures reported, its ref updates published. */
type ReceiveService = (
  repo: Repository,
  conn: Connection,
  options: HostOptions,
  context: HostContext,
  where: { peer: string; service: string; repository: string },
) => Promise<void>;

type Connection = Parameters<typeof serveUploadPack>[1];

const receiveGit: ReceiveService = async (repo, conn, options, context, where) => {
  const result = await serveReceivePack(repo, conn, { ...options.receivePack });
  if (result.unpackError !== undefined) context.report(result.unpackError, where);
  for (const error of result.errors ?? []) context.report(error, where);
  context.published(where.repository, result.updated);
};

/** What a part of a host (smart HTTP, the control API) gets to work with. */
interface HostContext {
  bus: Bus;
  registry: RepositoryRegistry;
  options: HostOptions;
  listenOptions: { window?: number };
  /** Local reports of failures (never thrown back into the serving code). */
  report(error: unknown, context: { peer: string; service: string; repository: string }): void;
  /** Publishes the ref updates a push made. */
  published(name: string, updated: readonly PushCommand[]): void;
  onRefUpdate(listener: (event: RefUpdateEvent) => void): () => void;
}

/** A part of a host: started with the host, stopped by its `close`. */
type HostPart = (context: HostContext) => { stop(): void; work?(): number };

/** The control API (comlink), as a part of `host`. */
const serveControl: HostPart = (context) => ({
  stop: exposeControl(context.bus, {
    registry: context.registry,
    manage: context.options.manage !== false,
    onRefUpdate: context.onRefUpdate,
  }),
});

function serve(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions,
  parts: HostPart[],
  receive: ReceiveService | undefined,
): Host {
  const registry: RepositoryRegistry =
    typeof (repositories as RepositoryRegistry).open === 'function' &&
    typeof (repositories as RepositoryRegistry).list === 'function'
      ? (repositories as RepositoryRegistry)
      : staticRepositories(repositories as Record<string, HostedRepository>);
  const listeners = new Set<(event: RefUpdateEvent) => void>();
  /** Local reports of failures (never thrown back into the serving code). */
  const report = (error: unknown, context: { peer: string; service: string; repository: string }) => {
    if (abortedByPeer(error)) return;
    try {
      options.onError?.(error, { ...context });
    } catch {
      // a throwing onError must not change what the peer is told
    }
  };
  const publish = (event: RefUpdateEvent) => {
    try {
      bus.signal(REF_UPDATE_EVENT, event);
    } catch (error) {
      report(error, { peer: '*', service: 'ref-update', repository: event.repo });
    }
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch (error) {
        report(error, { peer: '*', service: 'ref-update', repository: event.repo });
      }
    }
  };
  const published = (name: string, updated: readonly PushCommand[]) => {
    for (const command of updated) {
      publish({ repo: name, ref: command.name, old: command.old ?? ZERO_ID, new: command.new ?? ZERO_ID });
    }
  };
  const listenOptions = options.window !== undefined ? { window: options.window } : {};

  let gitWork = 0;
  const serveGit = async (stream: DuplexStream) => {
    const context = { peer: stream.peer, service: '?', repository: '?' };
    let started = false;
    gitWork++;
    try {
      const reader = new PacketReader(stream);
      const first = await reader.read();
      const line = first ? packetText(first) : undefined;
      if (line === undefined) throw new GitportError('HTTP_BAD_REQUEST', 'expected a git request line');
      const request = parseGitRequest(line);
      context.service = request.service;
      context.repository = request.repository;
      if (request.service === 'git-receive-pack' && !receive) {
        throw new GitportError('PUSH_NOT_ACCEPTED', `this host does not accept pushes to ${request.repository}`);
      }
      const repo = await registry.open(request.repository);
      if (!repo) throw new GitportError('REPO_NOT_FOUND', `repository ${request.repository} not found`);
      const conn = {
        input: reader.rest(),
        write: (bytes: Uint8Array, options?: { transfer?: boolean }) => stream.write(bytes, options),
        end: () => stream.end(),
        writeSize: writeSizeOf(stream),
      };
      started = true;
      if (request.service === 'git-upload-pack') {
        const protocol = request.parameters.includes('version=2') ? 2 : 0;
        await serveUploadPack(repo as Repository, conn, { ...options.uploadPack, protocol });
      } else {
        await receive!(repo as Repository, conn, options, hostContext, context);
      }
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== 'REPO_NOT_FOUND' && code !== 'PUSH_NOT_ACCEPTED') report(error, context);
      // Once the service runs, it reports its own errors in-band (ERR, side-band 3). The peer
      // gets typed errors' safe messages only; the detail goes to onError.
      const message = started ? undefined : encodeText(`ERR ${peerErrorMessage(error)}`);
      await closeAfterError(stream, message);
    } finally {
      gitWork--;
    }
  };

  const onRefUpdate = (listener: (event: RefUpdateEvent) => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };
  const hostContext: HostContext = { bus, registry, options, listenOptions, report, published, onRefUpdate };
  const started = parts.map((part) => part(hostContext));
  const stops = [listen(bus, GIT_STREAM, (stream) => void serveGit(stream), listenOptions)];
  for (const part of started) stops.push(part.stop);
  return {
    repositories: registry,
    get httpWork() {
      return started.reduce((n, part) => n + (part.work?.() ?? 0), 0);
    },
    get gitWork() {
      return gitWork;
    },
    onRefUpdate,
    close() {
      for (const stop of stops.splice(0)) stop();
      listeners.clear();
    },
  };
}

/**
 * Stateless smart HTTP over the bus (the isomorphic-git plugin's `httpClient(bus)`), as a part of
 * `host`: one stream per request, and `gitport.http-stop` to stop a named request.
 */
const serveHttp: HostPart = ({ bus, registry, options, listenOptions, report, published }) => {
  /** Smart-HTTP rounds that named their work, by requesting peer and work id: how to stop each. */
  const works = new Map<string, { stop(reason: unknown): void; settled: Promise<void> }>();
  let httpWork = 0;

  const serveStream = async (stream: DuplexStream) => {
    const context = { peer: stream.peer, service: 'http', repository: '?' };
    // a stream that fails (the peer aborted it, or went away) stops whatever its round is doing
    const controller = new AbortController();
    stream.closed.catch((error: unknown) => controller.abort(error));
    let round: Promise<unknown> | undefined;
    let replied = false;
    let counted = false;
    let work: string | undefined;
    let settle: (() => void) | undefined;
    const reply = async (
      statusCode: number,
      headers: Record<string, string>,
      body: AsyncIterable<Uint8Array>,
      given?: (chunk: Uint8Array) => boolean,
    ) => {
      replied = true;
      await stream.write(encodeHead({ statusCode, statusMessage: statusText(statusCode), headers }));
      // the head goes now, not after the work that follows holds the thread for a while
      stream.flush();
      // a chunk the round gave up moves to the reader's thread; any other is copied
      for await (const chunk of body) await stream.write(chunk, { transfer: given?.(chunk) === true });
      // the round's body ends once the round has settled: the stream's end says the work is over
      await stream.end();
    };
    const text = (statusCode: number, message: string) =>
      reply(statusCode, { 'content-type': 'text/plain' }, single(encoder.encode(`${message}\n`)));
    try {
      const reader = new PacketReader(stream);
      const head = await readHead<HttpRequestHead & { work?: unknown }>(reader, 'HTTP request');
      httpWork++;
      counted = true;
      // registered before anything is answered: a peer that saw our head can stop the work
      if (typeof head.work === 'string' && head.work.length <= MAX_WORK_ID) {
        const key = `${stream.peer}\n${head.work}`;
        if (!works.has(key)) {
          work = key;
          works.set(key, {
            stop: (reason) => {
              controller.abort(reason);
              stream.abort(reason);
            },
            settled: new Promise<void>((resolve) => (settle = resolve)),
          });
        }
      }
      context.repository = String(head.repository);
      const repo = typeof head.repository === 'string' ? await registry.open(head.repository) : undefined;
      if (!repo) return await text(404, 'repository not found');
      const query = new URLSearchParams(typeof head.query === 'string' ? head.query : '');
      const headers = lowerCase(head.headers ?? {});
      const protocol = protocolFromHeader(headers['git-protocol']);
      if (head.method === 'GET' && head.path === 'info/refs') {
        const service = query.get('service');
        if (service !== 'git-upload-pack' && service !== 'git-receive-pack') {
          return await text(403, 'dumb HTTP is not served');
        }
        context.service = service;
        const advertisement = await advertiseRefsHttp(repo as Repository, service, {
          protocol: service === 'git-upload-pack' ? protocol : 0,
        });
        return await reply(advertisement.status, advertisement.headers, single(advertisement.body));
      }
      if (head.method === 'POST' && head.path === 'git-upload-pack') {
        context.service = head.path;
        const signal = withSignal(controller.signal, options.uploadPack?.signal);
        const started = handleUploadPackHttp(yielding(repo), reader.rest(), {
          ...options.uploadPack,
          protocol,
          signal,
          writeSize: writeSizeOf(stream),
        });
        // A failed round already told the client in-band; it is only reported here.
        round = started.done.catch((error: unknown) => report(error, context));
        await reply(200, rpcResultHeaders(head.path), started.body, started.given);
        return;
      }
      if (head.method === 'POST' && head.path === 'git-receive-pack') {
        context.service = head.path;
        const signal = withSignal(controller.signal, options.receivePack?.signal);
        const started = handleReceivePackHttp(yielding(repo), reader.rest(), {
          ...options.receivePack,
          signal,
          writeSize: writeSizeOf(stream),
        });
        const name = head.repository;
        round = started.result.then(
          (result) => {
            if (result.unpackError !== undefined) report(result.unpackError, context);
            published(name, result.updated);
          },
          (error: unknown) => report(error, context),
        );
        await reply(200, rpcResultHeaders(head.path), started.body, started.given);
        return;
      }
      return await text(405, 'method not allowed');
    } catch (error) {
      // a stream that failed under a running round is the round's business (it stops and reports)
      if (!(round !== undefined && isStreamFailure(error))) report(error, context);
      // what the round produces can no longer be delivered: stop it
      controller.abort(error);
      if (!replied) {
        const bad = (error as { code?: string }).code === 'HTTP_BAD_REQUEST';
        await text(bad ? 400 : 500, peerErrorMessage(error)).catch(() => {});
      }
      // the round may still be winding down (its output was cut): the stream closes after it
      await round;
      await closeAfterError(stream, undefined);
    } finally {
      await round;
      if (counted) httpWork--;
      if (work !== undefined) works.delete(work);
      settle?.();
    }
  };

  const stops = [
    listen(bus, HTTP_STREAM, (stream) => void serveStream(stream), listenOptions),
    bus.handle(HTTP_STOP, async (payload, meta) => {
      const id = (payload as { work?: unknown } | null)?.work;
      const entry = typeof id === 'string' ? works.get(`${meta.from}\n${id}`) : undefined;
      if (entry === undefined) return false; // over already (or never named)
      entry.stop(new GitportError('ABORTED', 'the requester stopped the request'));
      await entry.settled;
      return true;
    }),
  ];
  return {
    stop: () => {
      for (const stop of stops.splice(0)) stop();
    },
    work: () => httpWork,
  };
};

/**
 * Ends a stream after a failure without discarding what the peer has not read yet (an abort
 * would): sends `message` if given, ends our side, and stops reading theirs (their writes end).
 */
async function closeAfterError(stream: DuplexStream, message: Uint8Array | undefined): Promise<void> {
  try {
    if (message) await stream.write(message);
    await stream.end();
  } catch {
    // The stream already failed (peer lost, aborted): nothing more to tell.
  }
  await stream[Symbol.asyncIterator]().return?.();
}

/**
 * The write size that keeps a stream flowing: a quarter of the reader's window (which it grants
 * back half at a time), so several writes are in flight; capped at 1 MiB.
 */
export function writeSizeOf(stream: DuplexStream): number {
  return Math.min(2 ** 20, Math.max(64 * 1024, Math.floor(stream.stats.remoteWindow / 4)));
}

/** A repository whose reads let the thread take messages (an abort among them) during long walks. */
function yielding(repo: HostedRepository): Repository {
  return { objects: yieldingStore(repo.objects), refs: repo.refs } as Repository;
}

/** The longest work id a request head may carry. */
const MAX_WORK_ID = 100;

/** `own`, or a signal that aborts with either when the host's options carry one too. */
function withSignal(own: AbortSignal, configured: AbortSignal | undefined): AbortSignal {
  return configured === undefined ? own : AbortSignal.any([own, configured]);
}

/** The errors a write or read gets once its stream failed (aborted, peer lost, cancelled). */
/**
 * Whether `error` comes of the peer aborting its stream (its cause chain says so): the client's
 * own decision, not a failure. A peer that is lost (a crashed context) is still reported.
 */
function abortedByPeer(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    if ((e as { code?: unknown }).code === 'TRANSPORT_ABORTED') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function isStreamFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('TRANSPORT_');
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

function lowerCase(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') out[k.toLowerCase()] = v;
  return out;
}

function statusText(code: number): string {
  const texts: Record<number, string> = { 200: 'OK', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed' };
  return texts[code] ?? '';
}
