/**
 * Access rules. Reads are open unless the gateway is private (then a repository is 404 to a
 * request without the token, so its existence does not leak); a push needs the token unless
 * anonymous pushes are allowed, and asks for it with a Basic challenge, which is what makes git
 * send credentials.
 *
 * The token is presented in the Authorization header (Bearer, or the password of Basic auth).
 * Only an event stream (a GET an EventSource makes, which cannot set headers) may present it in
 * `?token=` or the `gitport_token` cookie: a cookie is sent by the browser on any cross-site
 * request, so honouring it for a push or any POST would be a cross-site request forgery.
 */
import type { GitService } from '../backend.js';
import { GatewayError } from '../errors.js';
import { type GatewayReply, notFound, refuse } from '../reply.js';
import type { GatewayRequest } from '../request.js';

export interface AccessOptions {
  /** The secret for pushes and, with `private`, reads. */
  token?: string;
  private?: boolean;
  allowAnonymousPush?: boolean;
  /** The realm of the Basic challenge. */
  realm?: string;
}

export interface Access {
  /** The refusal of a request to a service (discovery or RPC), undefined when it may go on. */
  service(request: GatewayRequest, service: GitService): GatewayReply | undefined;
  /** The refusal of an event stream request, undefined when it may go on. */
  events(request: GatewayRequest, queryToken: string | null): GatewayReply | undefined;
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

/** Compares in time independent of where the strings differ. */
function equalSecret(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

export function createAccess(options: AccessOptions): Access {
  const token = options.token !== undefined && options.token !== '' ? options.token : undefined;
  if (options.private && token === undefined) {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'a private gateway needs a token');
  }
  const realm = (options.realm ?? 'gitport').replace(/["\\\r\n]/g, '');
  const challenge = { 'www-authenticate': `Basic realm="${realm}", charset="UTF-8"` };

  const presents = (presented: string | undefined): boolean =>
    token !== undefined && presented !== undefined && equalSecret(presented, token);

  return {
    service(request, service) {
      if (service === 'git-receive-pack' && !options.allowAnonymousPush) {
        if (token === undefined) {
          return refuse(
            403,
            'GATEWAY_PUSH_DISABLED',
            'pushing is disabled: start the server with --token or --allow-anonymous-push',
          );
        }
        if (!presents(presentedToken(request.headers.get('authorization')))) {
          return refuse(401, 'GATEWAY_UNAUTHORIZED', 'authentication required', challenge);
        }
        return undefined;
      }
      if (options.private && !presents(presentedToken(request.headers.get('authorization')))) return notFound();
      return undefined;
    },
    events(request, queryToken) {
      if (!options.private) return undefined;
      const presented =
        presentedToken(request.headers.get('authorization')) ??
        queryToken ??
        cookieToken(request.headers.get('cookie'));
      return presents(presented) ? undefined : notFound();
    },
  };
}
