/**
 * The client half of smart HTTP (gitprotocol-http(5)) over the global `fetch` of browsers,
 * Node and Bun: the `HttpFetch` that `@gitport/protocol` drives for one remote URL.
 *
 *   GET  $GIT_URL/info/refs?service=git-upload-pack    discovery (redirects followed)
 *   POST $GIT_URL/git-upload-pack                      one stateless round (no redirects)
 *   POST $GIT_URL/git-receive-pack                     the push
 *
 * What it does as git's remote-curl does:
 * - redirects: the discovery GET follows them, and the URL it ends at (less its
 *   `/info/refs?...`) becomes the base of every later request of the remote
 *   (`http.followRedirects=initial`); a POST that is redirected fails;
 * - auth: credentials in the URL (`http://user:pass@host/...`), a fixed `headers` map, or
 *   `onAuth`, asked after a 401 and again (up to three times) while the server refuses what it
 *   returned; credentials that worked are sent with every later request of the remote;
 * - upload-pack request bodies over 1 KiB go gzip-compressed (`Content-Encoding: gzip`, which
 *   git http-backend and the gitport gateway accept) where `CompressionStream` exists;
 * - request bodies stream where the runtime can send a streamed body over HTTP/1.1 (Node,
 *   Bun); browsers only stream uploads over HTTP/2, so there a body is sent whole;
 * - response bodies always stream (pull-based: the reader's pace drives the download).
 *
 * Every failure is a GitportError: `HTTP_UNAUTHORIZED` (401), `HTTP_FORBIDDEN` (403),
 * `REPO_NOT_FOUND` (404), `HTTP_FAILED` (another status), each with `data: { status, url,
 * message }` where `message` is the server's text; `HTTP_NETWORK` when no answer came at all
 * (refused, reset, DNS, a CORS refusal in a browser); `ABORTED` when the signal fired.
 */
import type { HttpFetch, HttpRequest, HttpResponse } from '@gitport/protocol';
import { GitportError } from './errors.js';

export type HttpCredentials =
  | { username: string; password?: string }
  /** Headers sent as they are (`Authorization: Bearer ...`, a cookie). */
  | { headers: Record<string, string> };

export interface AuthChallenge {
  /** The remote's URL (as given, without credentials). */
  url: string;
  /** 401: what the server answered. */
  status: number;
  /** The server's message (the response text, at most 1 KiB). */
  message: string;
  /** The `WWW-Authenticate` header, when the server sent one. */
  challenge?: string;
  /** 1 for the first 401 of the remote, then 2, 3 while the returned credentials are refused. */
  attempt: number;
}

export interface HttpRemoteOptions {
  /** Headers sent with every request (after git's own, so they can replace them). */
  headers?: Record<string, string>;
  /** Credentials sent from the first request on. */
  auth?: HttpCredentials;
  /** Asked for credentials after a 401; return undefined to give up (the call fails with `HTTP_UNAUTHORIZED`). */
  onAuth?: (challenge: AuthChallenge) => HttpCredentials | undefined | Promise<HttpCredentials | undefined>;
  /** The fetch to use; default the global one. */
  fetch?: typeof globalThis.fetch;
  /** Gzip upload-pack request bodies over 1 KiB where CompressionStream exists (default true). */
  gzip?: boolean;
  /**
   * Stream request bodies (`duplex: 'half'`) instead of sending them whole. Default: true on
   * Node and Bun; false in browsers, which stream uploads only over HTTP/2.
   */
  streamRequestBodies?: boolean;
}

/**
 * One remote's HTTP client: credentials that worked and the redirected base are kept across its
 * operations.
 */
export interface SmartHttpClient {
  /** The `HttpFetch` of one operation; `onBytes` hears its running count of response bytes. */
  fetcher(onBytes?: (loaded: number) => void): HttpFetch;
  /** The remote's URL without credentials (what protocol requests are built from). */
  readonly url: string;
  /** Where requests go now: `url`, or where the discovery GET was redirected. */
  readonly base: string;
}

const MAX_AUTH_ATTEMPTS = 3;
const GZIP_THRESHOLD = 1024;
const MAX_MESSAGE = 1024;

/** `url` without its userinfo, and the credentials it held. */
export function splitCredentials(url: string): { url: string; auth?: HttpCredentials } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new GitportError('HTTP_BAD_URL', `not a URL: ${url}`, { cause: error });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new GitportError('HTTP_BAD_URL', `not an http(s) URL: ${url}`);
  }
  if (parsed.username === '' && parsed.password === '') return { url: url.replace(/\/+$/, '') };
  const auth = { username: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) };
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.href.replace(/\/+$/, ''), auth };
}

/** The request headers credentials stand for. */
export function credentialHeaders(auth: HttpCredentials | undefined): Record<string, string> {
  if (auth === undefined) return {};
  if ('headers' in auth) return auth.headers;
  const bytes = new TextEncoder().encode(`${auth.username}:${auth.password ?? ''}`);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return { Authorization: `Basic ${btoa(binary)}` };
}

function runsOnServer(): boolean {
  const versions = (globalThis as { process?: { versions?: Record<string, string> } }).process?.versions;
  return typeof versions?.node === 'string' || typeof versions?.bun === 'string';
}

/** The smart-HTTP client of the repository at `remoteUrl`. */
export function smartHttpClient(remoteUrl: string, options: HttpRemoteOptions = {}): SmartHttpClient {
  const { url, auth: urlAuth } = splitCredentials(remoteUrl);
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw new GitportError('HTTP_NETWORK', 'no fetch in this runtime');
  const stream = options.streamRequestBodies ?? runsOnServer();
  const gzip = options.gzip !== false && typeof CompressionStream === 'function';
  let credentials = options.auth ?? urlAuth;
  let base = url;
  let attempts = 0;

  const fetcher = (onBytes?: (loaded: number) => void): HttpFetch => {
    let loaded = 0;
    return async (request) => {
      const discovery = request.method === 'GET' && request.url.startsWith(`${url}/info/refs`);
      const target = base + request.url.slice(url.length);
      let body = await requestBody(request, stream, gzip);
      for (;;) {
        const headers: Record<string, string> = {
          ...request.headers,
          ...body.headers,
          ...options.headers,
          ...credentialHeaders(credentials),
        };
        let response: Response;
        try {
          response = await fetchImpl(target, {
            method: request.method,
            headers,
            ...(body.data !== undefined ? { body: body.data as BodyInit } : {}),
            ...(body.data instanceof ReadableStream ? { duplex: 'half' } : {}),
            redirect: discovery ? 'follow' : 'manual',
            ...(request.signal ? { signal: request.signal } : {}),
          } as RequestInit);
        } catch (error) {
          if (request.signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: request.signal.reason });
          throw new GitportError('HTTP_NETWORK', `${request.method} ${target} failed: ${describe(error)}`, {
            cause: error,
            data: { url: target },
          });
        }
        // a request sent ahead of an answer it depends on is sent again after that answer, with
        // whatever credentials the answer needed: it asks for none itself
        if (
          response.status === 401 &&
          options.onAuth !== undefined &&
          attempts < MAX_AUTH_ATTEMPTS &&
          body.replayable &&
          request.speculative !== true
        ) {
          const message = await responseMessage(response);
          attempts++;
          const challenge = response.headers.get('www-authenticate');
          const given = await options.onAuth({
            url,
            status: 401,
            message,
            attempt: attempts,
            ...(challenge !== null ? { challenge } : {}),
          });
          if (given !== undefined) {
            credentials = given;
            body = await requestBody(request, stream, gzip, body);
            continue;
          }
          throw statusError(401, target, message);
        }
        if (response.status < 200 || response.status >= 300) {
          throw statusError(response.status, target, await responseMessage(response));
        }
        attempts = 0;
        if (discovery && response.redirected && response.url !== '') {
          const end = response.url.indexOf('/info/refs');
          if (end > 0) base = response.url.slice(0, end);
        }
        const headersOut: Record<string, string> = {};
        response.headers.forEach((value, name) => {
          headersOut[name] = value;
        });
        const reply: HttpResponse = {
          status: response.status,
          headers: headersOut,
          body: responseChunks(response, request.signal, (n) => {
            loaded += n;
            onBytes?.(loaded);
          }),
        };
        return reply;
      }
    };
  };

  return {
    fetcher,
    url,
    get base() {
      return base;
    },
  };
}

interface PreparedBody {
  data: Uint8Array | ReadableStream<Uint8Array> | undefined;
  headers: Record<string, string>;
  /** The same bytes can be sent again (after a 401). */
  replayable: boolean;
}

/** The request's body as fetch takes it: whole (gzipped when worth it) or streamed. */
async function requestBody(
  request: HttpRequest,
  stream: boolean,
  gzip: boolean,
  previous?: PreparedBody,
): Promise<PreparedBody> {
  if (previous?.replayable) return previous;
  const source = request.body;
  if (source === undefined) return { data: undefined, headers: {}, replayable: true };
  const upload = request.url.endsWith('/git-upload-pack');
  if (source instanceof Uint8Array || upload || !stream) {
    const bytes = source instanceof Uint8Array ? source : await collect(source);
    if (upload && gzip && bytes.byteLength > GZIP_THRESHOLD) {
      return { data: await gzipped(bytes), headers: { 'Content-Encoding': 'gzip' }, replayable: true };
    }
    return { data: bytes, headers: {}, replayable: true };
  }
  return { data: toReadableStream(source), headers: {}, replayable: false };
}

async function collect(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    parts.push(chunk);
    size += chunk.byteLength;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

async function gzipped(bytes: Uint8Array): Promise<Uint8Array> {
  const compressed = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(compressed).arrayBuffer());
}

/** An async iterable as a pull-based ReadableStream (the iterator is closed on cancel). */
function toReadableStream(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const step = await it.next();
        if (step.done) controller.close();
        else controller.enqueue(step.value);
      },
      async cancel(reason) {
        await it.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * A response body's chunks, read with a reader (not every runtime's streams are async iterable).
 * `return()` cancels the body even before the first read, so a response given up unread frees
 * its connection.
 */
function responseChunks(
  response: Response,
  signal: AbortSignal | undefined,
  count: (bytes: number) => void,
): AsyncIterableIterator<Uint8Array> {
  const body = response.body;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let over = body === null;
  const finish = () => {
    over = true;
    reader?.releaseLock();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next(): Promise<IteratorResult<Uint8Array>> {
      if (over) return { done: true, value: undefined };
      reader ??= (body as ReadableStream<Uint8Array>).getReader();
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (error) {
        await reader.cancel().catch(() => {});
        finish();
        if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: signal.reason });
        throw new GitportError('HTTP_NETWORK', `the response of ${response.url} broke off: ${describe(error)}`, {
          cause: error,
        });
      }
      if (step.done) {
        finish();
        return { done: true, value: undefined };
      }
      count(step.value.byteLength);
      return { done: false, value: step.value };
    },
    async return(): Promise<IteratorResult<Uint8Array>> {
      if (!over) {
        over = true;
        if (reader !== undefined) {
          await reader.cancel().catch(() => {});
          reader.releaseLock();
        } else await body?.cancel().catch(() => {});
      }
      return { done: true, value: undefined };
    },
  };
}

/** The server's text about a failure: the body's first KiB, trimmed (a JSON `message` if it is one). */
async function responseMessage(response: Response): Promise<string> {
  let text = '';
  try {
    const reader = response.body?.getReader();
    if (reader) {
      const parts: Uint8Array[] = [];
      let size = 0;
      while (size < MAX_MESSAGE) {
        const step = await reader.read();
        if (step.done) break;
        parts.push(step.value);
        size += step.value.byteLength;
      }
      await reader.cancel().catch(() => {});
      const bytes = new Uint8Array(size);
      let at = 0;
      for (const part of parts) {
        bytes.set(part, at);
        at += part.byteLength;
      }
      text = new TextDecoder().decode(bytes.subarray(0, MAX_MESSAGE)).trim();
    }
  } catch {
    // the status alone says what happened
  }
  if (text.startsWith('{')) {
    try {
      const value = JSON.parse(text) as { message?: unknown; error?: unknown };
      const message = value.message ?? value.error;
      if (typeof message === 'string') return message;
    } catch {
      // not JSON after all: the text as it is
    }
  }
  return text || response.statusText;
}

function statusError(status: number, url: string, message: string): GitportError {
  const data = { status, url, message };
  const said = message === '' ? '' : `: ${message}`;
  if (status === 401) return new GitportError('HTTP_UNAUTHORIZED', `authentication failed for ${url}${said}`, { data });
  if (status === 403) return new GitportError('HTTP_FORBIDDEN', `access to ${url} refused${said}`, { data });
  if (status === 404) return new GitportError('REPO_NOT_FOUND', `repository not found at ${url}${said}`, { data });
  if (status === 0 || (status >= 300 && status < 400)) {
    return new GitportError('HTTP_FAILED', `${url} redirected a request that git sends only once`, { data });
  }
  return new GitportError('HTTP_FAILED', `HTTP ${status} from ${url}${said}`, { data });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
}
