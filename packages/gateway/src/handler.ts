/**
 * The gateway as a web-standard `fetch(Request) => Promise<Response>` handler (so it runs on
 * Node through the node:http adapter of `@gitport/gateway/node`, and on any runtime with WHATWG
 * Request/Response): a router over the route modules in `routes/`.
 *
 *   GET  /<name>.git/info/refs?service=git-upload-pack | git-receive-pack    routes/discovery.ts
 *   POST /<name>.git/git-upload-pack                                         routes/rpc.ts
 *   POST /<name>.git/git-receive-pack                                        routes/rpc.ts
 *   GET  /<name>.git/events          SSE, ref updates of one repository     routes/events.ts
 *   GET  /events[?repo=a&repo=b]     SSE, ref updates of all (or some)       routes/events.ts
 *   GET  /healthz                                                            routes/health.ts
 *
 * Around every route: CORS (`OPTIONS` preflights first, the CORS headers on every reply,
 * routes/cors.ts), and errors thrown by a route become refusals with their stable code (a bug is
 * a logged 500). Access rules are in routes/auth.ts. Every git reply carries
 * `Cache-Control: no-cache`.
 */
import type { GitBackend } from './backend.js';
import { isGatewayError } from './errors.js';
import type { RefEventLog } from './event-log.js';
import { type GatewayLimits, resolveLimits } from './limits.js';
import { type GatewayReply, refuse } from './reply.js';
import type { GatewayRequest } from './request.js';
import { toResponse } from './response.js';
import { createRouter } from './router.js';
import { createAccess } from './routes/auth.js';
import type { GatewayContext } from './routes/context.js';
import { createCrossOrigin, withCors } from './routes/cors.js';
import { createDiscovery } from './routes/discovery.js';
import { allEventsRoute, repositoryEventsRoute } from './routes/events.js';
import { healthRoute } from './routes/health.js';
import { createRpc } from './routes/rpc.js';
import { SseHub, type SseHubOptions } from './sse-hub.js';

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
  /**
   * A log shared with other gateways (`redisEventLog(url)` from `@gitport/gateway/node`) that
   * carries ref updates and replays them; default: the hub alone, one process.
   */
  eventLog?: (hub: SseHub) => RefEventLog;
  /** Pages served besides git (the demo page, demo-page.ts): a reply, or undefined for the gateway's routes. */
  page?: (request: GatewayRequest) => Promise<GatewayReply> | undefined;
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
  /** Upload-pack and receive-pack requests running: sending their body or doing work. */
  readonly inFlight: number;
  /** Of those, the ones that count in `maxConcurrentRequests` (body in, work running). */
  readonly working: number;
  close(): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const backend = options.backend;
  const hub = options.hub ?? new SseHub(options.sse);
  let closed = false;
  const log = options.eventLog?.(hub);
  if (log !== undefined) hub.replayFrom = log;
  const context: GatewayContext = {
    backend,
    hub,
    limits: resolveLimits(options.limits),
    access: createAccess(options),
    crossOrigin: createCrossOrigin(options.cors),
    closed: () => closed,
    degraded: () => log?.degraded,
  };
  const unsubscribeBackend = backend.onRefUpdate((event) => (log ?? hub).publish(event));
  // other gateways' updates (and gaps after an outage) drop this one's cached advertisements
  const unsubscribeLog = log?.onEvent?.((event) => backend.refsChanged?.(event?.repo));
  const rpc = createRpc(context);
  const discovery = createDiscovery(context);
  const route = createRouter({
    paths: {
      '/healthz': healthRoute(context, rpc, discovery),
      '/events': allEventsRoute(context),
    },
    repository: {
      '/info/refs': discovery.route,
      '/git-upload-pack': rpc.uploadPack,
      '/git-receive-pack': rpc.receivePack,
      '/events': repositoryEventsRoute(context),
    },
  });
  const crossOrigin = context.crossOrigin;

  function dispatch(request: GatewayRequest): GatewayReply | Promise<GatewayReply> {
    const cors = crossOrigin.headers(request);
    if (request.method.toUpperCase() === 'OPTIONS') return crossOrigin.preflight(cors);
    let routed: GatewayReply | Promise<GatewayReply>;
    try {
      routed = options.page?.(request) ?? route(request);
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

  return {
    hub,
    backend,
    get inFlight() {
      return rpc.pendingBodies + rpc.working;
    },
    get working() {
      return rpc.working;
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
      unsubscribeLog?.();
      hub.close();
      await log?.close?.();
    },
  };
}

/** A route's error as a refusal: its status and code, or a 500 for a bug. */
function failed(request: GatewayRequest, error: unknown): GatewayReply {
  // bugs are reported with their stack; load (503) and bad input are answered, not logged
  if ((!isGatewayError(error) || error.status === 500) && !request.signal.aborted) reportError(error);
  if (!isGatewayError(error)) return refuse(500, 'GATEWAY_INTERNAL', 'internal error');
  const headers: Record<string, string> = error.status === 503 ? { 'retry-after': '1' } : {};
  return refuse(error.status === 499 ? 400 : error.status, error.code, error.message, headers);
}

function reportError(error: unknown): void {
  // a bug, not bad input: keep the server up and say what happened
  console.error('gitport gateway: internal error', error);
}
