/**
 * The host of host.ts without the protocol servers: `serve` gets upload-pack and receive-pack
 * (and smart HTTP's handlers, through `httpPart`) from loaders, so that `gitport` brings them
 * with the host and `gitport/node` when the first request needs them.
 */

import type { Bus } from '@gitport/bus';
import { ZERO_ID } from '@gitport/pack/internal/object';
import { encodeText, PacketReader, packetText } from '@gitport/pktline';
import type { PushCommand, ReceivePackOptions, Repository, UploadPackOptions } from '@gitport/protocol';
import { peerErrorMessage } from '@gitport/protocol/internal/errors';
import type {
  advertiseRefsHttp,
  handleReceivePackHttp,
  handleUploadPackHttp,
  protocolFromHeader,
  rpcResultHeaders,
} from '@gitport/protocol/internal/http';
import type { serveReceivePack } from '@gitport/protocol/internal/receive-pack';
import type { serveUploadPack } from '@gitport/protocol/internal/upload-pack';
import { type DuplexStream, listen } from '@gitport/transport';
import { exposeControl } from './control.js';
import { GitportError } from './errors.js';
import { GIT_STREAM, parseGitRequest } from './git-request.js';
import { encodeHead, type HttpRequestHead, readHead } from './http-plugin.js';
import { type HostedRepository, type RepositoryRegistry, staticRepositories } from './registry.js';
import { HTTP_STOP, HTTP_STREAM, REF_UPDATE_EVENT, type RefUpdateEvent } from './wire.js';
import { yieldingStore } from './yielding-store.js';

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
 * What a host needs of the protocol servers, given as loaders so that an entry may bring them in
 * when the first request arrives (`gitport/node`) or with the host (`gitport`).
 */
export type Load<T> = () => T | Promise<T>;
export interface UploadServer {
  serveUploadPack: typeof serveUploadPack;
}
export interface ReceiveServer {
  serveReceivePack: typeof serveReceivePack;
}
export interface HttpServer {
  advertiseRefsHttp: typeof advertiseRefsHttp;
  handleUploadPackHttp: typeof handleUploadPackHttp;
  handleReceivePackHttp: typeof handleReceivePackHttp;
  protocolFromHeader: typeof protocolFromHeader;
  rpcResultHeaders: typeof rpcResultHeaders;
}

/** The push side of a stateful session: receive-pack, its failures reported, its ref updates published. */
export type ReceiveService = (
  repo: Repository,
  conn: Connection,
  options: HostOptions,
  context: HostContext,
  where: { peer: string; service: string; repository: string },
) => Promise<void>;

type Connection = Parameters<typeof serveUploadPack>[1];

/** The push side of `host` and `hostGit`, with receive-pack from `load`. */
export const receiveWith =
  (load: Load<ReceiveServer>): ReceiveService =>
  async (repo, conn, options, context, where) => {
    const result = await (await load()).serveReceivePack(repo, conn, { ...options.receivePack });
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
export type HostPart = (context: HostContext) => { stop(): void; work?(): number };

/** The control API (comlink), as a part of `host`. */
export const serveControl: HostPart = (context) => ({
  stop: exposeControl(context.bus, {
    registry: context.registry,
    manage: context.options.manage !== false,
    onRefUpdate: context.onRefUpdate,
  }),
});

/**
 * A host of `repositories` on the bus with its `parts`: git's stateful sessions, upload-pack
 * from `upload`, receive-pack through `receive` (refused without it).
 */
export function serve(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions,
  parts: HostPart[],
  upload: Load<UploadServer>,
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
        await (await upload()).serveUploadPack(repo as Repository, conn, { ...options.uploadPack, protocol });
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
export const httpPart =
  (load: Load<HttpServer>): HostPart =>
  ({ bus, registry, options, listenOptions, report, published }) => {
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
        const { advertiseRefsHttp, handleReceivePackHttp, handleUploadPackHttp, protocolFromHeader, rpcResultHeaders } =
          await load();
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
