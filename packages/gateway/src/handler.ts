/**
 * The gateway as a web-standard `fetch(Request) => Promise<Response>` handler (so it runs on
 * Node through the node:http adapter, and on any runtime with WHATWG Request/Response).
 *
 * Routes (DESIGN.md, gitprotocol-http "Smart Clients"):
 *
 *   GET  /<name>.git/info/refs?service=git-upload-pack | git-receive-pack
 *   POST /<name>.git/git-upload-pack
 *   POST /<name>.git/git-receive-pack
 *   GET  /<name>.git/events          SSE, ref updates of one repository
 *   GET  /events[?repo=a&repo=b]     SSE, ref updates of all (or some) repositories
 *   GET  /healthz
 *
 * Discovery replies are `Content-Type: application/x-<service>-advertisement` with, in v0/v1, the
 * `PKT-LINE("# service=<service>\n") 0000` header before the advertisement; v2 (a `Git-Protocol:
 * version=2` header, fetch only) gets the capability advertisement alone. RPC replies are
 * `application/x-<service>-result`. Every git reply carries `Cache-Control: no-cache`.
 */

import type { GitBackend, GitService } from './backend.js';
import { type BodySource, collect, gunzipBody, limitBody, peek } from './body.js';
import { GatewayError, isGatewayError } from './errors.js';
import { decodeRepoName } from './repo-name.js';
import { SseHub, type SseHubOptions, type SubscribeOptions } from './sse-hub.js';

/** The parts of a Request the gateway reads; a WHATWG Request satisfies it. */
export interface GatewayRequest {
  readonly method: string;
  /** Absolute URL or origin-form target (`/path?query`), undecoded. */
  readonly url: string;
  readonly headers: { get(name: string): string | null };
  readonly body: BodySource | null;
  readonly signal: AbortSignal;
}

export type ReplyBody =
  | { kind: 'none' }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'stream'; chunks: AsyncIterable<Uint8Array> }
  | { kind: 'events'; options: SubscribeOptions };

/** A response before it becomes a WHATWG Response (the node adapter writes it directly). */
export interface GatewayReply {
  status: number;
  headers: Record<string, string>;
  body: ReplyBody;
}

export interface GatewayLimits {
  /** Request body bytes on the wire (default 1 GiB). */
  maxBodyBytes?: number;
  /** Upload-pack request bytes, after inflation (default 32 MiB). */
  maxUploadRequestBytes?: number;
  /** gzip-inflated bytes of any body (default 32 MiB). */
  maxInflatedBytes?: number;
  /** Longest pause between request body chunks in ms (default 30 000). */
  bodyIdleMs?: number;
  /** Upload-pack and receive-pack requests in flight at once (default 64); more get 503. */
  maxConcurrentRequests?: number;
}

export interface GatewayOptions {
  backend: GitBackend;
  /** The secret for pushes and, with `private`, reads: Bearer token or the Basic password. */
  token?: string;
  /** Reads need the token too; without it repositories are 404. */
  private?: boolean;
  /** Pushes without a token. */
  allowAnonymousPush?: boolean;
  /** Origins allowed by CORS (`*` allows any). */
  cors?: readonly string[];
  limits?: GatewayLimits;
  /** The SSE hub (created from `sse` when absent). */
  hub?: SseHub;
  sse?: SseHubOptions;
  /** The realm of the Basic challenge. */
  realm?: string;
}

export interface Gateway {
  fetch(request: Request): Promise<Response>;
  /** The same routing, returning a reply the node adapter writes without building a Response. */
  handle(request: GatewayRequest): Promise<GatewayReply>;
  /**
   * The same routing again, answering synchronously when no I/O is needed (a cached
   * advertisement, /healthz, a refusal), and with a promise otherwise; never throws.
   */
  dispatch(request: GatewayRequest): GatewayReply | Promise<GatewayReply>;
  readonly hub: SseHub;
  readonly backend: GitBackend;
  /** Requests currently running. */
  readonly inFlight: number;
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const SERVICE_HEADERS: Record<GitService, Uint8Array> = {
  'git-upload-pack': encoder.encode('001e# service=git-upload-pack\n0000'),
  'git-receive-pack': encoder.encode('001f# service=git-receive-pack\n0000'),
};
const NO_CACHE = 'no-cache, max-age=0, must-revalidate';
/**
 * Discovery replies by advertisement (a cached advertisement is the same array each time), per
 * flavour: v0/v1 with the `# service=` header, v2 without. They are shared: never mutated.
 */
const discoveryReplies = new WeakMap<Uint8Array, { v0?: GatewayReply; v2?: GatewayReply }>();
const NEVER = new AbortController().signal;
const PROBE = '0000';

function text(status: number, message: string, headers: Record<string, string> = {}): GatewayReply {
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': NO_CACHE, ...headers },
    body: { kind: 'bytes', bytes: encoder.encode(`${message}\n`) },
  };
}

/** Splits a request target (absolute or origin-form) into the raw path and query. */
function splitTarget(url: string): { path: string; query: string } {
  let start = 0;
  if (url.charCodeAt(0) !== 47 /* / */) {
    const scheme = url.indexOf('://');
    start = scheme < 0 ? 0 : url.indexOf('/', scheme + 3);
    if (start < 0) return { path: '/', query: '' };
  }
  const q = url.indexOf('?', start);
  const hash = url.indexOf('#', start);
  const end = hash < 0 ? url.length : hash;
  if (q < 0 || q > end) return { path: url.slice(start, end), query: '' };
  return { path: url.slice(start, q), query: url.slice(q + 1, end) };
}

/** Query parameters; the two discovery queries git sends skip the general parser. */
const DISCOVERY_QUERIES = new Map(
  ['git-upload-pack', 'git-receive-pack'].map((service) => [`service=${service}`, new URLSearchParams({ service })]),
);
function fastParams(query: string): URLSearchParams {
  return DISCOVERY_QUERIES.get(query) ?? new URLSearchParams(query);
}

/** Validated names by raw path segment (bounded): a repository's name is checked once, not per request. */
const validNames = new Map<string, string>();
function repoName(segment: string): string {
  const known = validNames.get(segment);
  if (known !== undefined) return known;
  const name = decodeRepoName(segment);
  if (validNames.size >= 4096) validNames.clear();
  validNames.set(segment, name);
  return name;
}

function equalSecret(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/** The token a request presents: Bearer, the password (or lone user) of Basic auth. */
export function presentedToken(authorization: string | null): string | undefined {
  if (authorization === null) return undefined;
  const space = authorization.indexOf(' ');
  if (space < 0) return undefined;
  const scheme = authorization.slice(0, space).toLowerCase();
  const value = authorization.slice(space + 1).trim();
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return undefined;
  let decoded: string;
  try {
    decoded = atob(value);
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) return decoded;
  const password = decoded.slice(colon + 1);
  return password === '' ? decoded.slice(0, colon) : password;
}

function cookieToken(cookie: string | null): string | undefined {
  if (cookie === null) return undefined;
  for (const part of cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq >= 0 && part.slice(0, eq).trim() === 'gitport_token') {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

const GIT_PROTOCOL = /^[A-Za-z0-9=:._-]{1,256}$/;

export function createGateway(options: GatewayOptions): Gateway {
  const backend = options.backend;
  const hub = options.hub ?? new SseHub(options.sse);
  const limits = {
    maxBodyBytes: options.limits?.maxBodyBytes ?? 1 << 30,
    maxUploadRequestBytes: options.limits?.maxUploadRequestBytes ?? 32 << 20,
    maxInflatedBytes: options.limits?.maxInflatedBytes ?? 32 << 20,
    bodyIdleMs: options.limits?.bodyIdleMs ?? 30_000,
    maxConcurrentRequests: options.limits?.maxConcurrentRequests ?? 64,
  };
  const token = options.token !== undefined && options.token !== '' ? options.token : undefined;
  if (options.private && token === undefined) {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'a private gateway needs a token');
  }
  const corsOrigins = new Set(options.cors ?? []);
  const realm = (options.realm ?? 'gitport').replace(/["\\\r\n]/g, '');
  const unsubscribeBackend = backend.onRefUpdate((event) => hub.publish(event));
  let inFlight = 0;
  let closed = false;

  const authorized = (request: GatewayRequest, allowQuery: string | undefined): boolean => {
    if (token === undefined) return false;
    const presented =
      presentedToken(request.headers.get('authorization')) ??
      (allowQuery !== undefined ? allowQuery : undefined) ??
      cookieToken(request.headers.get('cookie'));
    return presented !== undefined && equalSecret(presented, token);
  };

  const corsHeaders = (request: GatewayRequest): Record<string, string> | undefined => {
    if (corsOrigins.size === 0) return undefined;
    const origin = request.headers.get('origin');
    if (origin === null) return undefined;
    if (!corsOrigins.has('*') && !corsOrigins.has(origin)) return undefined;
    return {
      'access-control-allow-origin': origin,
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    };
  };

  /** Routing: synchronous up to the first I/O (a cached advertisement needs none). */
  function route(request: GatewayRequest): GatewayReply | Promise<GatewayReply> {
    const { path, query } = splitTarget(request.url);
    const method = request.method.toUpperCase();
    if (path === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD') return text(405, 'method not allowed', { allow: 'GET, HEAD' });
      return backend.healthy() && !closed ? text(200, 'ok') : text(503, 'unavailable');
    }
    const params = fastParams(query);
    if (path === '/events') {
      if (method !== 'GET') return text(405, 'method not allowed', { allow: 'GET' });
      const repos = params.getAll('repo').map((r) => decodeRepoName(encodeURIComponent(r)));
      if (options.private && !authorized(request, params.get('token') ?? undefined)) return text(404, 'not found');
      return allEvents(request, repos, params);
    }
    // /<name>.git/<rest>
    const slash = path.indexOf('/', 1);
    const first = slash < 0 ? path.slice(1) : path.slice(1, slash);
    const rest = slash < 0 ? '' : path.slice(slash);
    if (!first.endsWith('.git')) return text(404, 'not found');
    const repo = repoName(first.slice(0, -4));

    let service: GitService;
    let kind: 'advertise' | 'rpc' | 'events';
    if (rest === '/info/refs') {
      if (method !== 'GET' && method !== 'HEAD') return text(405, 'method not allowed', { allow: 'GET' });
      const s = params.get('service');
      if (s !== 'git-upload-pack' && s !== 'git-receive-pack') {
        return text(403, 'only the smart HTTP protocol is served (?service=git-upload-pack or git-receive-pack)');
      }
      service = s;
      kind = 'advertise';
    } else if (rest === '/git-upload-pack' || rest === '/git-receive-pack') {
      if (method !== 'POST') return text(405, 'method not allowed', { allow: 'POST' });
      service = rest.slice(1) as GitService;
      kind = 'rpc';
    } else if (rest === '/events') {
      if (method !== 'GET') return text(405, 'method not allowed', { allow: 'GET' });
      service = 'git-upload-pack';
      kind = 'events';
    } else {
      return text(404, 'not found');
    }

    if (service === 'git-receive-pack' && !options.allowAnonymousPush) {
      if (token === undefined) {
        return text(403, 'pushing is disabled: start the server with --token or --allow-anonymous-push');
      }
      if (!authorized(request, undefined)) {
        return text(401, 'authentication required', { 'www-authenticate': `Basic realm="${realm}", charset="UTF-8"` });
      }
    } else if (
      options.private &&
      !authorized(request, kind === 'events' ? (params.get('token') ?? undefined) : undefined)
    ) {
      return text(404, 'not found');
    }
    if (kind === 'advertise' && request.method !== 'HEAD') {
      // fast path: a fresh cached advertisement means the repository was there a moment ago
      const protocol = protocolOf(request, service);
      const cached = backend.cachedAdvertisement?.(repo, service, protocol);
      if (cached !== undefined) return advertiseReply(service, protocol, cached, false);
    }
    return serve(request, repo, service, kind, params);
  }

  async function allEvents(request: GatewayRequest, repos: string[], params: URLSearchParams): Promise<GatewayReply> {
    for (const repo of repos) if (!(await backend.exists(repo))) return text(404, 'not found');
    return events(request, repos.length === 0 ? undefined : repos, params);
  }

  /** The part of routing that needs the backend: the repository must exist. */
  async function serve(
    request: GatewayRequest,
    repo: string,
    service: GitService,
    kind: 'advertise' | 'rpc' | 'events',
    params: URLSearchParams,
  ): Promise<GatewayReply> {
    if (!(await backend.exists(repo))) return text(404, 'not found');
    if (kind === 'events') return events(request, [repo], params);
    if (closed) return text(503, 'shutting down');
    // advertisements come from a cache with one revalidation per key at a time: only RPCs hold the backend
    if (kind === 'advertise') return advertise(request, repo, service);
    if (inFlight >= limits.maxConcurrentRequests) return text(503, 'too many requests', { 'retry-after': '1' });
    return rpc(request, repo, service);
  }

  function events(request: GatewayRequest, repos: string[] | undefined, params: URLSearchParams): GatewayReply {
    const lastEventId = request.headers.get('last-event-id') ?? params.get('lastEventId');
    return {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      },
      body: { kind: 'events', options: { repos, lastEventId } },
    };
  }

  function protocolOf(request: GatewayRequest, service: GitService): string | null {
    if (service === 'git-receive-pack') return null;
    const value = request.headers.get('git-protocol');
    return value !== null && GIT_PROTOCOL.test(value) ? value : null;
  }

  async function advertise(request: GatewayRequest, repo: string, service: GitService): Promise<GatewayReply> {
    const protocol = protocolOf(request, service);
    // no client signal: one advertisement load serves every request waiting for it
    const ad = await backend.advertise(repo, service, { protocol, signal: NEVER });
    return advertiseReply(service, protocol, ad, request.method.toUpperCase() === 'HEAD');
  }

  function advertiseReply(service: GitService, protocol: string | null, ad: Uint8Array, head: boolean): GatewayReply {
    const v2 = protocol?.split(':').includes('version=2') === true;
    // a cached advertisement is the same array each time: its reply (prefix, headers) is built once
    const key = v2 ? 'v2' : 'v0';
    let replies = discoveryReplies.get(ad);
    if (replies === undefined) {
      replies = {};
      discoveryReplies.set(ad, replies);
    }
    let reply = replies[key];
    if (reply === undefined) {
      let bytes = ad;
      if (!v2) {
        const header = SERVICE_HEADERS[service];
        bytes = new Uint8Array(header.byteLength + ad.byteLength);
        bytes.set(header, 0);
        bytes.set(ad, header.byteLength);
      }
      reply = {
        status: 200,
        headers: Object.freeze({
          'content-type': `application/x-${service}-advertisement`,
          'cache-control': NO_CACHE,
          expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
          pragma: 'no-cache',
          'content-length': String(bytes.byteLength),
        }) as Record<string, string>,
        body: { kind: 'bytes', bytes },
      };
      replies[key] = reply;
    }
    if (!head) return reply;
    const { 'content-length': _, ...headers } = reply.headers;
    return { status: 200, headers, body: { kind: 'none' } };
  }

  async function rpc(request: GatewayRequest, repo: string, service: GitService): Promise<GatewayReply> {
    const contentType = request.headers.get('content-type');
    if (contentType !== null && contentType !== `application/x-${service}-request`) {
      return text(415, `expected content-type application/x-${service}-request`);
    }
    const declared = request.headers.get('content-length');
    if (declared !== null && Number(declared) > limits.maxBodyBytes) {
      return text(413, `request body exceeds ${limits.maxBodyBytes} bytes`);
    }
    const encoding = (request.headers.get('content-encoding') ?? '').toLowerCase();
    if (encoding !== '' && encoding !== 'gzip' && encoding !== 'x-gzip' && encoding !== 'identity') {
      return text(415, `unsupported content-encoding ${encoding}`);
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    inFlight++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      inFlight--;
      request.signal.removeEventListener('abort', onAbort);
    };
    try {
      let body: AsyncIterable<Uint8Array> = limitBody(
        request.body ?? empty(),
        { maxBytes: limits.maxBodyBytes, idleMs: limits.bodyIdleMs },
        controller.signal,
      );
      if (encoding === 'gzip' || encoding === 'x-gzip') body = gunzipBody(body, limits.maxInflatedBytes);
      if (service === 'git-upload-pack') {
        // upload-pack requests are wants and haves: small, read whole so errors get a status
        const whole = await collect(
          limitBody(
            body,
            { maxBytes: limits.maxUploadRequestBytes, idleMs: 0, code: 'GATEWAY_BODY_TOO_LARGE' },
            controller.signal,
          ),
        );
        if (isProbe(whole)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        body = once(whole);
      } else {
        const peeked = await peek(body, 5);
        if (peeked.ended && isProbe(peeked.head)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        body = peeked.body;
      }
      const tracked = trackErrors(body);
      try {
        const output = await backend.rpc(repo, service, tracked.body, {
          protocol: protocolOf(request, service),
          signal: controller.signal,
        });
        // wait for the first byte so a failure before it still gets a proper status
        const first = await peek(output, 1);
        return rpcReply(service, { kind: 'stream', chunks: guard(first.body, release, controller) });
      } catch (error) {
        // the request body failing (too large, idle, bad gzip) is the cause the client should see
        throw tracked.error() ?? error;
      }
    } catch (error) {
      controller.abort(error);
      release();
      throw error;
    }
  }

  function dispatch(request: GatewayRequest): GatewayReply | Promise<GatewayReply> {
    const cors = corsHeaders(request);
    if (request.method.toUpperCase() === 'OPTIONS') return preflight(cors);
    let routed: GatewayReply | Promise<GatewayReply>;
    try {
      routed = route(request);
    } catch (error) {
      return withCors(failed(request, error), cors);
    }
    if (routed instanceof Promise) {
      return routed.then(
        (reply) => withCors(reply, cors),
        (error) => withCors(failed(request, error), cors),
      );
    }
    return withCors(routed, cors);
  }

  function failed(request: GatewayRequest, error: unknown): GatewayReply {
    if ((!isGatewayError(error) || error.status >= 500) && !request.signal.aborted) reportError(error);
    return isGatewayError(error)
      ? text(error.status === 499 ? 400 : error.status, error.message)
      : text(500, 'internal error');
  }

  function preflight(cors: Record<string, string> | undefined): GatewayReply {
    if (cors === undefined) return text(403, 'origin not allowed');
    return {
      status: 204,
      headers: {
        ...cors,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'content-type, git-protocol, authorization, last-event-id',
        'access-control-max-age': '600',
      },
      body: { kind: 'none' },
    };
  }

  return {
    hub,
    backend,
    get inFlight() {
      return inFlight;
    },
    dispatch,
    async handle(request) {
      return dispatch(request);
    },
    async fetch(request) {
      return toResponse(await dispatch(request), hub, request.signal);
    },
    async close() {
      if (closed) return;
      closed = true;
      unsubscribeBackend();
      hub.close();
    },
  };
}

function reportError(error: unknown): void {
  // a bug, not bad input: keep the server up and say what happened
  console.error('gitport gateway: internal error', error);
}

/** Adds the CORS headers; a reply's headers may be shared (cached discovery replies), so they are copied. */
function withCors(reply: GatewayReply, cors: Record<string, string> | undefined): GatewayReply {
  if (cors === undefined) return reply;
  return { status: reply.status, headers: { ...reply.headers, ...cors }, body: reply.body };
}

function rpcReply(service: GitService, body: ReplyBody): GatewayReply {
  return {
    status: 200,
    headers: { 'content-type': `application/x-${service}-result`, 'cache-control': NO_CACHE },
    body,
  };
}

function isProbe(bytes: Uint8Array): boolean {
  return bytes.byteLength === PROBE.length && bytes[0] === 48 && bytes[1] === 48 && bytes[2] === 48 && bytes[3] === 48;
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

async function* empty(): AsyncGenerator<Uint8Array> {}

/** Remembers the first error the body throws, so it can be reported instead of its consequences. */
function trackErrors(source: AsyncIterable<Uint8Array>): { body: AsyncIterable<Uint8Array>; error(): unknown } {
  let failure: unknown;
  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      yield* source;
    } catch (error) {
      failure ??= error;
      throw error;
    }
  }
  return { body: body(), error: () => failure };
}

/** Runs `release` exactly once when the response stream ends, fails or is cancelled. */
async function* guard(
  chunks: AsyncIterable<Uint8Array>,
  release: () => void,
  controller: AbortController,
): AsyncGenerator<Uint8Array> {
  let completed = false;
  try {
    yield* chunks;
    completed = true;
  } finally {
    if (!completed) controller.abort(new GatewayError('GATEWAY_ABORTED', 'response not delivered', { status: 499 }));
    release();
  }
}

/**
 * The reply to an events request the hub cannot take now (it is full, or closed): 503 with
 * `Retry-After`, keeping the CORS headers of the events reply. Undefined when it can. Every
 * adapter asks this at the moment it subscribes, so no subscriber slips in between.
 */
export function refuseEvents(
  hub: SseHub,
  reply: GatewayReply,
): (GatewayReply & { body: { kind: 'bytes'; bytes: Uint8Array } }) | undefined {
  if (hub.accepting) return undefined;
  const full = hub.size >= hub.maxSubscribers;
  const refused = text(503, full ? 'too many event subscribers' : 'shutting down', { 'retry-after': '5' });
  for (const [name, value] of Object.entries(reply.headers)) {
    if (name.startsWith('access-control-') || name === 'vary') refused.headers[name] = value;
  }
  return refused as GatewayReply & { body: { kind: 'bytes'; bytes: Uint8Array } };
}

/** Converts a reply into a WHATWG Response (pull-based: the client's pace drives the producer). */
export function toResponse(reply: GatewayReply, hub: SseHub, signal?: AbortSignal): Response {
  const init = { status: reply.status, headers: reply.headers };
  const body = reply.body;
  switch (body.kind) {
    case 'none':
      return new Response(null, init);
    case 'bytes':
      return new Response(body.bytes as Uint8Array<ArrayBuffer>, init);
    case 'events': {
      const refused = refuseEvents(hub, reply);
      if (refused !== undefined) return new Response(refused.body.bytes as Uint8Array<ArrayBuffer>, refused);
      return new Response(hub.stream({ ...body.options, signal }), init);
    }
    case 'stream': {
      const it = body.chunks[Symbol.asyncIterator]();
      const stream = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            try {
              const step = await it.next();
              if (step.done) controller.close();
              else controller.enqueue(step.value);
            } catch (error) {
              controller.error(error);
            }
          },
          cancel() {
            void it.return?.()?.catch(() => {});
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(stream, init);
    }
  }
}
