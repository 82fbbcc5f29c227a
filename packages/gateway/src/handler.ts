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
  /** The client's network address when the adapter knows it (for per-client limits). */
  readonly clientAddress?: string;
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
  /** Longest pause between request body chunks in ms (default 30 000); a longer one gets 408. */
  bodyIdleMs?: number;
  /**
   * The slowest a request body may arrive, bytes per second (default 1 024; 0: no minimum). A body
   * may wait for its client `bodyIdleMs` plus one second per this many bytes received; past that
   * it gets 408 (time the gateway itself spends not reading does not count).
   */
  minBodyBytesPerSecond?: number;
  /** The longest a whole request body may take, ms from its first read (default 3 600 000); then 408. */
  bodyTimeoutMs?: number;
  /**
   * Upload-pack and receive-pack requests doing work at once (default 64); more get 503. A request
   * counts once its body is in: an upload-pack request from the moment it has been read whole, a
   * receive-pack request (whose pack streams into the backend) from the end of its body until its
   * response ends. Requests still sending their body count in `maxPendingBodies` instead.
   */
  maxConcurrentRequests?: number;
  /** Upload-pack and receive-pack requests still sending their body at once (default 256); more get 503. */
  maxPendingBodies?: number;
  /**
   * Of those, how many one client address may have (default 32; 0: no per-client limit, e.g.
   * behind a proxy that makes every client one address). Requests without a known address are
   * not counted per client.
   */
  maxPendingBodiesPerClient?: number;
  /** Discoveries (`info/refs`) not answered from the cache that run at once (default 32). */
  maxConcurrentDiscoveries?: number;
  /** Discoveries waiting for one of those at once (default 1 024); more get 503. */
  maxQueuedDiscoveries?: number;
}

export interface GatewayOptions {
  backend: GitBackend;
  /** The secret for pushes and, with `private`, reads: Bearer token or the Basic password. */
  token?: string;
  /** Reads need the token too; without it repositories are 404. */
  private?: boolean;
  /** Pushes without a token. */
  allowAnonymousPush?: boolean;
  /**
   * Origins allowed by CORS. A listed origin is reflected with credentials allowed; `*` allows any
   * other origin without credentials (`Access-Control-Allow-Origin: *`, never with credentials).
   */
  cors?: readonly string[];
  limits?: GatewayLimits;
  /** The SSE hub (created from `sse` when absent). */
  hub?: SseHub;
  sse?: SseHubOptions;
  /** The realm of the Basic challenge. */
  realm?: string;
  /** Pages served besides git (the demo page, demo-page.ts): a reply, or undefined for the gateway's routes. */
  page?: (request: GatewayRequest) => Promise<GatewayReply> | undefined;
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
  /** Upload-pack and receive-pack requests running: sending their body or doing work. */
  readonly inFlight: number;
  /** Of those, the ones that count in `maxConcurrentRequests` (body in, work running). */
  readonly working: number;
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

/** A refusal with its stable code in the `x-gitport-error` header. */
function refuse(status: number, code: string, message: string, headers: Record<string, string> = {}): GatewayReply {
  return text(status, message, { 'x-gitport-error': code, ...headers });
}

/** Refusals for load: the client should come back (git retries nothing itself, a person or a script does). */
function busy(code: string, message: string): GatewayReply {
  return refuse(503, code, message, { 'retry-after': '1' });
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

/**
 * The protocol version a `Git-Protocol` header asks for, as the one value the backend needs:
 * `version=2`, `version=1` or null (v0). Like git's `determine_protocol_version_server`, the
 * highest `version=<n>` among the colon-separated keys wins and unknown versions are ignored, so
 * the cache and the backend see at most three values whatever the client sends.
 */
export function protocolVersion(header: string | null): 'version=2' | 'version=1' | null {
  if (header === null) return null;
  if (header === 'version=2') return 'version=2';
  let version = 0;
  for (const item of header.split(':')) {
    const value = item.trim();
    if (value === 'version=2') return 'version=2';
    if (value === 'version=1') version = 1;
  }
  return version === 1 ? 'version=1' : null;
}

/** The origin of a request's `Origin` header is the server's own (same scheme-less host:port). */
function sameOrigin(origin: string, host: string | null): boolean {
  if (host === null) return false;
  const scheme = origin.indexOf('://');
  return scheme > 0 && origin.slice(scheme + 3).toLowerCase() === host.toLowerCase();
}

/** Runs `fn` once the current event-loop turn's I/O callbacks have run. */
const nextTurn: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0);

export function createGateway(options: GatewayOptions): Gateway {
  const backend = options.backend;
  const hub = options.hub ?? new SseHub(options.sse);
  const limits = {
    maxBodyBytes: options.limits?.maxBodyBytes ?? 1 << 30,
    maxUploadRequestBytes: options.limits?.maxUploadRequestBytes ?? 32 << 20,
    maxInflatedBytes: options.limits?.maxInflatedBytes ?? 32 << 20,
    bodyIdleMs: options.limits?.bodyIdleMs ?? 30_000,
    minBodyBytesPerSecond: options.limits?.minBodyBytesPerSecond ?? 1024,
    bodyTimeoutMs: options.limits?.bodyTimeoutMs ?? 3_600_000,
    maxConcurrentRequests: options.limits?.maxConcurrentRequests ?? 64,
    maxPendingBodies: options.limits?.maxPendingBodies ?? 256,
    maxPendingBodiesPerClient: options.limits?.maxPendingBodiesPerClient ?? 32,
    maxConcurrentDiscoveries: options.limits?.maxConcurrentDiscoveries ?? 32,
    maxQueuedDiscoveries: options.limits?.maxQueuedDiscoveries ?? 1024,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isFinite(value) || value < 0) {
      throw new GatewayError('GATEWAY_BAD_ARGUMENT', `limits.${name} must be a number >= 0`);
    }
  }
  const token = options.token !== undefined && options.token !== '' ? options.token : undefined;
  if (options.private && token === undefined) {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'a private gateway needs a token');
  }
  const corsOrigins = new Set(options.cors ?? []);
  const realm = (options.realm ?? 'gitport').replace(/["\\\r\n]/g, '');
  const unsubscribeBackend = backend.onRefUpdate((event) => hub.publish(event));
  /** RPCs sending their body (not yet counted in `working`). */
  let pendingBodies = 0;
  /** The same, per client address (addresses with none are not kept). */
  const pendingByClient = new Map<string, number>();
  /** RPCs with their body in and their work running (`maxConcurrentRequests`). */
  let working = 0;
  let discoveries = 0;
  const discoveryQueue: (() => void)[] = [];
  let closed = false;
  /**
   * Cached discovery is answered after a check of the refs on disk made after the request
   * arrived. The first discovery of an event-loop turn is checked and answered at once, and so
   * are the others of the same synchronous run (the pipelined requests of one socket read, which
   * the cache answers from that check); the ones that arrive later in the turn (other sockets'
   * reads) wait in `turnDiscoveries` and are answered together when the turn ends, after one
   * check that began after every one of them arrived.
   */
  let turnChecked = false;
  let inCheckedRun = false;
  const turnDiscoveries: (() => void)[] = [];
  const endRun = () => {
    inCheckedRun = false;
  };
  const endTurn = () => {
    turnChecked = false;
    // one synchronous loop: the first lookup of a repository checks the disk, the rest share it
    const waiting = turnDiscoveries.splice(0);
    for (const answer of waiting) answer();
  };

  /**
   * Whether the request carries the token. Only the Authorization header counts, except for an
   * event stream (`events`: a GET an EventSource makes, which cannot set headers), which may use
   * `?token=` or the `gitport_token` cookie: a cookie is sent by the browser on any cross-site
   * request, so honouring it for a push or any POST would be a cross-site request forgery.
   */
  const authorized = (request: GatewayRequest, events: { query: string | null } | undefined): boolean => {
    if (token === undefined) return false;
    const presented =
      presentedToken(request.headers.get('authorization')) ??
      (events === undefined ? undefined : (events.query ?? cookieToken(request.headers.get('cookie'))));
    return presented !== undefined && equalSecret(presented, token);
  };

  const corsHeaders = (request: GatewayRequest): Record<string, string> | undefined => {
    if (corsOrigins.size === 0) return undefined;
    const origin = request.headers.get('origin');
    if (origin === null) return undefined;
    if (corsOrigins.has(origin)) {
      return {
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        vary: 'Origin',
      };
    }
    // a wildcard never comes with credentials: any site could otherwise act with the user's cookie
    if (corsOrigins.has('*')) return { 'access-control-allow-origin': '*' };
    return undefined;
  };

  /** A POST from a web page of another origin that CORS does not allow (a form, a no-cors fetch). */
  const foreignOrigin = (request: GatewayRequest): boolean => {
    const origin = request.headers.get('origin');
    if (origin === null || corsOrigins.has(origin) || corsOrigins.has('*')) return false;
    return !sameOrigin(origin, request.headers.get('host'));
  };

  /** Why the gateway cannot take git requests now, or undefined when it can. */
  const saturation = (): string | undefined => {
    if (closed) return 'shutting down';
    if (!backend.healthy()) return 'backend unavailable';
    if (working >= limits.maxConcurrentRequests) return 'git requests saturated';
    if (pendingBodies >= limits.maxPendingBodies) return 'request bodies saturated';
    if (discoveryQueue.length >= limits.maxQueuedDiscoveries) return 'discovery saturated';
    return undefined;
  };

  /** Routing: synchronous up to the first I/O (a cached advertisement needs none). */
  function route(request: GatewayRequest): GatewayReply | Promise<GatewayReply> {
    const { path, query } = splitTarget(request.url);
    const method = request.method.toUpperCase();
    const page = options.page?.(request);
    if (page !== undefined) return page;
    if (path === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD')
        return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: 'GET, HEAD' });
      const reason = saturation();
      return reason === undefined
        ? text(200, 'ok')
        : refuse(503, 'GATEWAY_UNAVAILABLE', reason, { 'retry-after': '1' });
    }
    const params = fastParams(query);
    if (path === '/events') {
      if (method !== 'GET') return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: 'GET' });
      const repos = params.getAll('repo').map((r) => decodeRepoName(encodeURIComponent(r)));
      if (options.private && !authorized(request, { query: params.get('token') }))
        return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
      return allEvents(request, repos, params);
    }
    // /<name>.git/<rest>
    const slash = path.indexOf('/', 1);
    const first = slash < 0 ? path.slice(1) : path.slice(1, slash);
    const rest = slash < 0 ? '' : path.slice(slash);
    if (!first.endsWith('.git')) return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
    const repo = repoName(first.slice(0, -4));

    let service: GitService;
    let kind: 'advertise' | 'rpc' | 'events';
    if (rest === '/info/refs') {
      if (method !== 'GET' && method !== 'HEAD')
        return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: 'GET' });
      const s = params.get('service');
      if (s !== 'git-upload-pack' && s !== 'git-receive-pack') {
        return refuse(
          403,
          'GATEWAY_DUMB_PROTOCOL',
          'only the smart HTTP protocol is served (?service=git-upload-pack or git-receive-pack)',
        );
      }
      service = s;
      kind = 'advertise';
    } else if (rest === '/git-upload-pack' || rest === '/git-receive-pack') {
      if (method !== 'POST') return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: 'POST' });
      service = rest.slice(1) as GitService;
      kind = 'rpc';
      // what git sends; a page of another site can send neither without a CORS preflight
      if (request.headers.get('content-type') !== `application/x-${service}-request`) {
        return refuse(415, 'GATEWAY_BAD_CONTENT_TYPE', `expected content-type application/x-${service}-request`);
      }
      if (foreignOrigin(request)) return refuse(403, 'GATEWAY_ORIGIN_REFUSED', 'origin not allowed');
    } else if (rest === '/events') {
      if (method !== 'GET') return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: 'GET' });
      service = 'git-upload-pack';
      kind = 'events';
    } else {
      return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
    }

    if (service === 'git-receive-pack' && !options.allowAnonymousPush) {
      if (token === undefined) {
        return refuse(
          403,
          'GATEWAY_PUSH_DISABLED',
          'pushing is disabled: start the server with --token or --allow-anonymous-push',
        );
      }
      if (!authorized(request, undefined)) {
        return refuse(401, 'GATEWAY_UNAUTHORIZED', 'authentication required', {
          'www-authenticate': `Basic realm="${realm}", charset="UTF-8"`,
        });
      }
    } else if (
      options.private &&
      !authorized(request, kind === 'events' ? { query: params.get('token') } : undefined)
    ) {
      return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
    }
    if (kind === 'advertise' && method !== 'HEAD') {
      // fast path: a cached advertisement the refs on disk still match (checked now) needs no I/O
      const lookup = backend.cachedAdvertisement;
      if (lookup !== undefined) {
        const protocol = protocolOf(request, service);
        if (turnChecked && !inCheckedRun) {
          return new Promise<GatewayReply>((resolve, reject) => {
            turnDiscoveries.push(() => {
              try {
                const cached = lookup.call(backend, repo, service, protocol);
                resolve(
                  cached !== undefined
                    ? advertiseReply(service, protocol, cached, false)
                    : serve(request, repo, service, kind, params),
                );
              } catch (error) {
                reject(error);
              }
            });
          });
        }
        if (!turnChecked) {
          turnChecked = true;
          nextTurn(endTurn);
        }
        if (!inCheckedRun) {
          inCheckedRun = true;
          queueMicrotask(endRun);
        }
        const cached = lookup.call(backend, repo, service, protocol);
        if (cached !== undefined) return advertiseReply(service, protocol, cached, false);
      }
    }
    return serve(request, repo, service, kind, params);
  }

  async function allEvents(request: GatewayRequest, repos: string[], params: URLSearchParams): Promise<GatewayReply> {
    for (const repo of repos) if (!(await backend.exists(repo))) return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
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
    if (kind === 'advertise') return advertise(request, repo, service);
    if (!(await backend.exists(repo))) return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
    if (kind === 'events') return events(request, [repo], params);
    if (closed) return refuse(503, 'GATEWAY_CLOSED', 'shutting down');
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

  function protocolOf(request: GatewayRequest, service: GitService): 'version=2' | 'version=1' | null {
    if (service === 'git-receive-pack') return null;
    return protocolVersion(request.headers.get('git-protocol'));
  }

  /**
   * Discovery that the cache could not answer at once: at most `maxConcurrentDiscoveries` run,
   * `maxQueuedDiscoveries` wait (first come, first served), the rest get 503 at once.
   */
  async function advertise(request: GatewayRequest, repo: string, service: GitService): Promise<GatewayReply> {
    if (closed) return refuse(503, 'GATEWAY_CLOSED', 'shutting down');
    if (discoveries < limits.maxConcurrentDiscoveries) discoveries++;
    else if (discoveryQueue.length >= limits.maxQueuedDiscoveries) {
      return busy('GATEWAY_BUSY', 'too many discovery requests');
    } else {
      // the slot is handed over by the discovery that ends (`discoveries` stays as it is)
      await new Promise<void>((resolve) => discoveryQueue.push(resolve));
    }
    try {
      if (request.signal.aborted) return refuse(400, 'GATEWAY_ABORTED', 'request aborted');
      if (!(await backend.exists(repo))) return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
      const protocol = protocolOf(request, service);
      // no client signal: one advertisement load serves every request waiting for it
      const ad = await backend.advertise(repo, service, { protocol, signal: NEVER });
      return advertiseReply(service, protocol, ad, request.method.toUpperCase() === 'HEAD');
    } finally {
      const next = discoveryQueue.shift();
      if (next !== undefined) next();
      else discoveries--;
    }
  }

  function advertiseReply(service: GitService, protocol: string | null, ad: Uint8Array, head: boolean): GatewayReply {
    const v2 = protocol === 'version=2';
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
    const declared = request.headers.get('content-length');
    if (declared !== null && Number(declared) > limits.maxBodyBytes) {
      return refuse(413, 'GATEWAY_BODY_TOO_LARGE', `request body exceeds ${limits.maxBodyBytes} bytes`);
    }
    const encoding = (request.headers.get('content-encoding') ?? '').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'gzip' && encoding !== 'x-gzip' && encoding !== 'identity') {
      return refuse(415, 'GATEWAY_BAD_ENCODING', 'unsupported content-encoding');
    }
    // a request sending its body holds no backend slot: a slow client cannot starve the others
    if (pendingBodies >= limits.maxPendingBodies) return busy('GATEWAY_BUSY', 'too many requests sending a body');
    const client = limits.maxPendingBodiesPerClient > 0 ? request.clientAddress : undefined;
    const ofClient = client === undefined ? 0 : (pendingByClient.get(client) ?? 0);
    if (ofClient >= limits.maxPendingBodiesPerClient && client !== undefined) {
      return busy('GATEWAY_BUSY', 'too many requests sending a body from this address');
    }
    if (working >= limits.maxConcurrentRequests) return busy('GATEWAY_BUSY', 'too many requests');
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    pendingBodies++;
    if (client !== undefined) pendingByClient.set(client, ofClient + 1);
    let receiving = true;
    let counted = false;
    /** The body is in (or abandoned): it stops counting as pending, and maybe starts counting as work. */
    const bodyIn = (count: boolean) => {
      if (!receiving) return;
      receiving = false;
      pendingBodies--;
      if (client !== undefined) {
        const left = (pendingByClient.get(client) ?? 1) - 1;
        if (left <= 0) pendingByClient.delete(client);
        else pendingByClient.set(client, left);
      }
      if (count) {
        working++;
        counted = true;
      }
    };
    const release = () => {
      bodyIn(false);
      if (counted) {
        counted = false;
        working--;
      }
      request.signal.removeEventListener('abort', onAbort);
    };
    try {
      let body: AsyncIterable<Uint8Array> = limitBody(
        request.body ?? empty(),
        {
          maxBytes: limits.maxBodyBytes,
          idleMs: limits.bodyIdleMs,
          minBytesPerSecond: limits.minBodyBytesPerSecond,
          timeoutMs: limits.bodyTimeoutMs,
        },
        controller.signal,
      );
      if (encoding === 'gzip' || encoding === 'x-gzip') body = gunzipBody(body, limits.maxInflatedBytes);
      if (service === 'git-upload-pack') {
        // upload-pack requests are wants and haves: small, read whole so errors get a status
        const whole = await collect(
          limitBody(
            body,
            { maxBytes: limits.maxUploadRequestBytes, code: 'GATEWAY_BODY_TOO_LARGE' },
            controller.signal,
          ),
        );
        if (isProbe(whole)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        bodyIn(false);
        if (closed) {
          release();
          return refuse(503, 'GATEWAY_CLOSED', 'shutting down');
        }
        if (working >= limits.maxConcurrentRequests) {
          release();
          return busy('GATEWAY_BUSY', 'too many requests');
        }
        working++;
        counted = true;
        body = once(whole);
      } else {
        const peeked = await peek(body, 5);
        if (peeked.ended && isProbe(peeked.head)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        // the pack streams into the backend; the push counts as work once all of it is in
        body = onEnd(peeked.body, () => bodyIn(true));
      }
      const tracked = trackErrors(body);
      try {
        const output = (
          await backend.rpc(repo, service, tracked.body, {
            protocol: protocolOf(request, service),
            signal: controller.signal,
          })
        )[Symbol.asyncIterator]();
        // wait for the first byte so a failure before it still gets a proper status
        const first = await output.next();
        return rpcReply(service, { kind: 'stream', chunks: guard(first, output, release, controller) });
      } catch (error) {
        // the request body failing (too large, idle, bad gzip) is the cause the client should see
        throw tracked.error() ?? error;
      }
    } catch (error) {
      // the backend's iterable (if any) has ended by throwing: its work is over
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
    // bugs are reported with their stack; load (503) and bad input are answered, not logged
    if ((!isGatewayError(error) || error.status === 500) && !request.signal.aborted) reportError(error);
    if (!isGatewayError(error)) return refuse(500, 'GATEWAY_INTERNAL', 'internal error');
    const headers: Record<string, string> = error.status === 503 ? { 'retry-after': '1' } : {};
    return refuse(error.status === 499 ? 400 : error.status, error.code, error.message, headers);
  }

  function preflight(cors: Record<string, string> | undefined): GatewayReply {
    if (cors === undefined) return refuse(403, 'GATEWAY_ORIGIN_REFUSED', 'origin not allowed');
    return {
      status: 204,
      headers: {
        ...cors,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'content-type, content-encoding, git-protocol, authorization, last-event-id',
        'access-control-max-age': '600',
      },
      body: { kind: 'none' },
    };
  }

  return {
    hub,
    backend,
    get inFlight() {
      return pendingBodies + working;
    },
    get working() {
      return working;
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

/** Calls `ended` once the source has ended without error. */
async function* onEnd(source: AsyncIterable<Uint8Array>, ended: () => void): AsyncGenerator<Uint8Array> {
  yield* source;
  ended();
}

/**
 * The response body over the backend's output, its first step already taken. Runs `release`
 * exactly once, when the backend's work is over: the output ended (done or thrown), or was
 * cancelled and its `return()` settled (the backend settles it only once the work has stopped),
 * so the concurrency slot counts work, not connections. Cancelling also aborts the work.
 */
function guard(
  first: IteratorResult<Uint8Array>,
  output: AsyncIterator<Uint8Array>,
  release: () => void,
  controller: AbortController,
): AsyncIterableIterator<Uint8Array> {
  let head: IteratorResult<Uint8Array> | undefined = first;
  let ended = false;
  const end = () => {
    ended = true;
    release();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (ended) return { done: true, value: undefined };
      let step = head;
      head = undefined;
      try {
        step ??= await output.next();
      } catch (error) {
        end();
        throw error;
      }
      if (step.done === true) end();
      return step;
    },
    async return() {
      if (!ended) {
        ended = true;
        controller.abort(new GatewayError('GATEWAY_ABORTED', 'response not delivered', { status: 499 }));
        try {
          await output.return?.();
        } catch {
          // the work failed while stopping: it has stopped all the same
        } finally {
          release();
        }
      }
      return { done: true, value: undefined };
    },
  };
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
  const refused = full
    ? refuse(503, 'GATEWAY_BUSY', 'too many event subscribers', { 'retry-after': '5' })
    : refuse(503, 'GATEWAY_CLOSED', 'shutting down', { 'retry-after': '5' });
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
