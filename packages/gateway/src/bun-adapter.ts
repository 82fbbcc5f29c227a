/**
 * The gateway on `Bun.serve`, Bun's own HTTP server, beside the node:http adapter: the same
 * handler (`dispatch`), its replies turned into web Responses.
 *
 * - A reply ready at once (a cached advertisement, a refusal) becomes a Response in the same
 *   call, with no promise.
 * - Streamed replies (upload-pack and receive-pack results) are pulled as the client reads; a
 *   client that disconnects aborts the request's signal and cancels the stream, which aborts
 *   the work.
 * - `Bun.serve` closes a connection that stays quiet for `idleTimeout` seconds (10 by default),
 *   which would cut an event stream between heartbeats: an event stream's request has no idle
 *   timeout at all, other requests get `idleTimeout` (120 s by default, as on node:http).
 * - Request bodies are limited by the gateway (a typed 413, 408 for a stalled body), so Bun's
 *   own body size limit is lifted unless one is given.
 * - `close()` keeps the node adapter's contract: stop accepting, end event streams, let requests
 *   in flight finish for up to the grace time, then close what is left and the backend.
 */
import { type BunRuntime, type BunServer, requireBun } from './bun-adapter-runtime.js';
import type { Gateway, GatewayReply, GatewayRequest } from './index.js';
import { toResponse } from './response.js';

// the `@gitport/gateway/bun` entry: the adapter and the runtime check it starts with
export {
  type BunServer,
  compareVersions,
  isBun,
  MIN_BUN_VERSION,
  requireBunVersion,
} from './bun-adapter-runtime.js';

export interface BunServeGatewayOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Quiet time allowed on a connection, ms (default 120 000; rounded up to whole seconds, at most 255 s; SSE exempt). */
  idleTimeout?: number;
  /** Requests in flight are given this long to finish on close, ms (default 30 000). */
  closeGraceMs?: number;
  /** Bun's own cap on a request body, bytes (default: none, the gateway's `maxBodyBytes` applies). */
  maxRequestBodySize?: number;
}

export interface RunningBunServer {
  readonly server: BunServer;
  readonly host: string;
  readonly port: number;
  /** `http://HOST:PORT` */
  readonly url: string;
  /** Stops accepting, ends event streams, waits for requests in flight (up to the grace time). */
  close(): Promise<void>;
}

/** The longest idle timeout Bun.serve accepts, seconds. */
const MAX_IDLE_SECONDS = 255;

/**
 * A Bun Request as the gateway reads it: the client's address and the body are looked up on
 * first use (discovery needs neither).
 */
class BunRequest implements GatewayRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;

  constructor(
    private readonly request: Request,
    private readonly server: BunServer,
  ) {
    this.method = request.method;
    this.url = request.url;
    this.headers = request.headers;
  }

  get body(): ReadableStream<Uint8Array> | null {
    return this.request.body;
  }

  /** Aborted by Bun when the client disconnects before the response is complete. */
  get signal(): AbortSignal {
    return this.request.signal;
  }

  get clientAddress(): string | undefined {
    return this.server.requestIP(this.request)?.address;
  }
}

/** A `Bun.serve` `fetch` handler running the gateway. */
export function createBunFetch(
  gateway: Gateway,
): (request: Request, server: BunServer) => Response | Promise<Response> {
  return (request, server) => {
    const reply = gateway.dispatch(new BunRequest(request, server));
    if (!(reply instanceof Promise)) return respond(reply, request, server, gateway);
    return reply.then((ready) => respond(ready, request, server, gateway));
  };
}

function respond(reply: GatewayReply, request: Request, server: BunServer, gateway: Gateway): Response {
  const body = reply.body;
  if (body.kind === 'bytes') {
    return new Response(body.bytes as Uint8Array<ArrayBuffer>, { status: reply.status, headers: reply.headers });
  }
  // an event stream is quiet between heartbeats: Bun must not close it for that
  if (body.kind === 'events' && gateway.hub.accepting) server.timeout(request, 0);
  return toResponse(reply, gateway.hub, request.signal);
}

function failed(error: Error): Response {
  console.error('gitport gateway: unhandled', error);
  return new Response('internal error\n', {
    status: 500,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-gitport-error': 'GATEWAY_INTERNAL' },
  });
}

/**
 * Starts `Bun.serve` running the gateway. Throws GATEWAY_NOT_BUN off Bun and
 * GATEWAY_RUNTIME_TOO_OLD on a Bun older than MIN_BUN_VERSION.
 */
export async function serveBun(gateway: Gateway, options: BunServeGatewayOptions = {}): Promise<RunningBunServer> {
  const bun: BunRuntime = requireBun();
  const idleMs = options.idleTimeout ?? 120_000;
  const server = bun.serve({
    hostname: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    idleTimeout: Math.min(MAX_IDLE_SECONDS, Math.max(1, Math.ceil(idleMs / 1000))),
    maxRequestBodySize: options.maxRequestBodySize ?? Number.MAX_SAFE_INTEGER,
    development: false,
    fetch: createBunFetch(gateway),
    error: failed,
  });
  const host = server.hostname;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    server,
    host,
    port: server.port,
    url: `http://${shownHost}:${server.port}`,
    close() {
      closing ??= (async () => {
        const stopped = server.stop(false);
        await gateway.close();
        const grace = options.closeGraceMs ?? 30_000;
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          stopped,
          new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              void server.stop(true).then(resolve, resolve);
            }, grace);
          }),
        ]);
        clearTimeout(timer);
        await gateway.backend.close();
      })();
      return closing;
    },
  };
}
