/**
 * An isomorphic-git `http` client (`{ request(GitHttpRequest): Promise<GitHttpResponse> }`)
 * that carries smart-HTTP requests over a transport stream to a gitport host instead of the
 * network. Each request is one stream (stateless smart HTTP: gitprotocol-http):
 *
 *   client -> host   pkt-line( JSON { method, repository, service, path, query, headers } )
 *                    request body bytes (raw), then end of stream
 *   host -> client   pkt-line( JSON { statusCode, statusMessage, headers } )
 *                    response body bytes (raw), then end of stream
 *
 * isomorphic-git only accepts http(s) URLs, so a URL names the peer and the repository:
 * `http://<peer>.gitport/<name>.git` by default (the peer may be percent-encoded), or whatever
 * a `resolve` function maps. Paths after the repository are git's smart-HTTP paths:
 * `info/refs?service=git-upload-pack|git-receive-pack`, `git-upload-pack`, `git-receive-pack`.
 */
import type { Bus } from '@gitport/bus';
import { encodeData, PacketReader, packetText } from '@gitport/pktline';
import { open } from '@gitport/transport';
import { GitportError } from './errors.js';
import { HTTP_STREAM } from './wire.js';

/** The largest request or response head (JSON) accepted. */
export const MAX_HTTP_HEAD = 16 * 1024;

export type SmartHttpPath = 'info/refs' | 'git-upload-pack' | 'git-receive-pack';

export interface HttpRequestHead {
  method: string;
  repository: string;
  path: SmartHttpPath;
  /** The query string without `?` (`service=git-upload-pack`). */
  query: string;
  headers: Record<string, string>;
}

export interface HttpResponseHead {
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string>;
}

export interface ResolvedUrl {
  peer: string;
  repository: string;
  path: SmartHttpPath;
  query: string;
}

export type UrlResolver = (url: string) => { peer: string; repository: string } | undefined;

const SMART_PATH = /^(.*?)\/(info\/refs|git-upload-pack|git-receive-pack)(?:\?(.*))?$/;

/** The default mapping: `http(s)://<peer>.gitport[:port]/<name>[.git]`. */
export const defaultResolver: UrlResolver = (base) => {
  const match = /^https?:\/\/([^/?#]+)\.gitport(?::\d+)?\/([^?#]+?)(?:\.git)?\/?$/i.exec(base);
  if (!match) return undefined;
  try {
    return { peer: decodeURIComponent(match[1]!), repository: decodeURIComponent(match[2]!) };
  } catch {
    return undefined;
  }
};

/** Splits a request URL into the repository URL (given to the resolver) and the smart-HTTP path. */
export function resolveUrl(url: string, resolve: UrlResolver = defaultResolver): ResolvedUrl {
  const match = SMART_PATH.exec(url);
  const target = match ? resolve(match[1]!) : undefined;
  if (!match || !target) {
    throw new GitportError('HTTP_BAD_URL', `not a gitport smart-HTTP URL: ${url}`);
  }
  return { ...target, path: match[2] as SmartHttpPath, query: match[3] ?? '' };
}

const encoder = new TextEncoder();

export function encodeHead(head: HttpRequestHead | HttpResponseHead): Uint8Array {
  return encodeData(encoder.encode(JSON.stringify(head)));
}

/** Reads the JSON head pkt-line that starts a request or response stream. */
export async function readHead<T>(reader: PacketReader, what: string): Promise<T> {
  const packet = await reader.read();
  const text = packet ? packetText(packet) : undefined;
  if (text === undefined || text.length > MAX_HTTP_HEAD) {
    throw new GitportError('HTTP_BAD_REQUEST', `expected an ${what} head`);
  }
  try {
    const value = JSON.parse(text) as T;
    if (typeof value !== 'object' || value === null) throw new Error('not an object');
    return value;
  } catch (error) {
    throw new GitportError('HTTP_BAD_REQUEST', `malformed ${what} head`, { cause: error });
  }
}

/** isomorphic-git's request and response shapes (structurally). */
export interface GitHttpRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: AsyncIterable<Uint8Array> | Iterable<Uint8Array> | Uint8Array;
  signal?: AbortSignal;
  onProgress?: unknown;
}

export interface GitHttpResponse {
  url: string;
  method: string;
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string>;
  body: AsyncIterableIterator<Uint8Array>;
}

export interface HttpClient {
  request(request: GitHttpRequest): Promise<GitHttpResponse>;
}

export interface HttpClientOptions {
  /** Maps a repository URL to a peer and repository; default `http://<peer>.gitport/<name>.git`. */
  resolve?: UrlResolver;
  /** The transport receive window for response bodies. */
  window?: number;
}

async function* bodyChunks(body: GitHttpRequest['body']): AsyncIterable<Uint8Array> {
  if (body === undefined) return;
  if (body instanceof Uint8Array) {
    yield body;
    return;
  }
  yield* body as AsyncIterable<Uint8Array>;
}

/** The isomorphic-git `http` plugin over a bus. */
export function httpClient(bus: Bus, options: HttpClientOptions = {}): HttpClient {
  return {
    async request(request) {
      const method = (request.method ?? 'GET').toUpperCase();
      const target = resolveUrl(request.url, options.resolve);
      const stream = await open(bus, target.peer, HTTP_STREAM, {
        ...(options.window !== undefined ? { window: options.window } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
      });
      const onAbort = () => stream.abort(request.signal?.reason);
      request.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        await stream.write(
          encodeHead({
            method,
            repository: target.repository,
            path: target.path,
            query: target.query,
            headers: request.headers ?? {},
          }),
        );
        // The body is sent while the response is read: the host may answer before it has it all.
        const sending = (async () => {
          for await (const chunk of bodyChunks(request.body)) {
            if (chunk.byteLength > 0) await stream.write(chunk);
          }
          await stream.end();
        })();
        sending.catch((error) => stream.abort(error));
        const reader = new PacketReader(stream);
        const head = await readHead<HttpResponseHead>(reader, 'HTTP response');
        const rest = reader.rest()[Symbol.asyncIterator]();
        const body: AsyncIterableIterator<Uint8Array> = {
          next: async () => {
            const step = await rest.next();
            if (step.done) request.signal?.removeEventListener('abort', onAbort);
            return step;
          },
          return: async () => {
            request.signal?.removeEventListener('abort', onAbort);
            stream.abort(new GitportError('ABORTED', 'response body cancelled'));
            return { done: true, value: undefined };
          },
          [Symbol.asyncIterator]() {
            return this;
          },
        };
        return {
          url: request.url,
          method,
          statusCode: head.statusCode,
          statusMessage: head.statusMessage,
          headers: head.headers,
          body,
        };
      } catch (error) {
        request.signal?.removeEventListener('abort', onAbort);
        stream.abort(error);
        throw error;
      }
    },
  };
}
