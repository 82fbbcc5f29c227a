/**
 * Cross-origin rules. A listed origin is reflected with credentials allowed; `*` allows any other
 * origin without credentials (a wildcard never comes with credentials: any site could otherwise
 * act with the user's cookie). A preflight (`OPTIONS`) from an origin not allowed is 403, and so
 * is a POST from a page of another origin that CORS does not allow (a form, a no-cors fetch),
 * unless it comes from the server's own origin.
 */
import { type GatewayReply, refuse } from '../reply.js';
import type { GatewayRequest } from '../request.js';

export type CorsHeaders = Readonly<Record<string, string>>;

export interface CrossOrigin {
  /** The CORS headers of the reply to this request, undefined when it gets none. */
  headers(request: GatewayRequest): CorsHeaders | undefined;
  /** The reply to a preflight request with those headers. */
  preflight(cors: CorsHeaders | undefined): GatewayReply;
  /** A request from a web page of an origin that is neither allowed nor the server's own. */
  foreign(request: GatewayRequest): boolean;
}

/** The origin of a request's `Origin` header is the server's own (same scheme-less host:port). */
function sameOrigin(origin: string, host: string | null): boolean {
  if (host === null) return false;
  const scheme = origin.indexOf('://');
  return scheme > 0 && origin.slice(scheme + 3).toLowerCase() === host.toLowerCase();
}

export function createCrossOrigin(allowed: readonly string[] = []): CrossOrigin {
  const origins = new Set(allowed);
  const any = origins.has('*');
  return {
    headers(request): CorsHeaders | undefined {
      if (origins.size === 0) return undefined;
      const origin = request.headers.get('origin');
      if (origin === null) return undefined;
      if (origins.has(origin)) {
        return {
          'access-control-allow-origin': origin,
          'access-control-allow-credentials': 'true',
          vary: 'Origin',
        };
      }
      if (any) return { 'access-control-allow-origin': '*' };
      return undefined;
    },
    preflight(cors) {
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
    },
    foreign(request) {
      const origin = request.headers.get('origin');
      if (origin === null || origins.has(origin) || any) return false;
      return !sameOrigin(origin, request.headers.get('host'));
    },
  };
}

/** Adds the CORS headers; a reply's headers may be shared (cached discovery replies), so they are copied. */
export function withCors(reply: GatewayReply, cors: CorsHeaders | undefined): GatewayReply {
  if (cors === undefined) return reply;
  return { status: reply.status, headers: { ...reply.headers, ...cors }, body: reply.body };
}
