/**
 * What the gateway reads of a request: a WHATWG Request satisfies `GatewayRequest`, and the
 * node:http adapter builds one without copying. Plus the parsing every route shares: the target's
 * path and query, and the `Git-Protocol` header.
 */
import type { GitService } from './backend.js';
import type { BodySource } from './body.js';

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

/** Splits a request target (absolute or origin-form) into the raw path and query. */
export function splitTarget(url: string): { path: string; query: string } {
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
export function queryParams(query: string): URLSearchParams {
  return DISCOVERY_QUERIES.get(query) ?? new URLSearchParams(query);
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

/** The protocol a request speaks to a service: push is always v0. */
export function protocolOf(request: GatewayRequest, service: GitService): 'version=2' | 'version=1' | null {
  if (service === 'git-receive-pack') return null;
  return protocolVersion(request.headers.get('git-protocol'));
}
