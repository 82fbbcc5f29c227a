/**
 * The gateway's router: a request target is a fixed path (`/healthz`, `/events`) or a
 * repository's, `/<name>.git<suffix>` (`/info/refs`, `/git-upload-pack`, `/events`, ...), and
 * each route names the methods it answers. Matching is one map lookup (a fixed path's first
 * segment never ends in `.git`); a repository's name is validated once per raw segment, not per
 * request.
 *
 * The order of the checks is part of the contract: an unknown path is 404 before anything else, a
 * repository segment with a bad name is refused (GATEWAY_BAD_NAME, thrown) before its suffix is
 * looked at, a known route with another method is 405 with `Allow`, and only then does the route
 * run (its own checks come next: content type, origin, access, limits).
 */
import { GatewayError } from './errors.js';
import { type GatewayReply, notFound, refuse } from './reply.js';
import { decodeRepoName } from './repo-name.js';
import { type GatewayRequest, queryParams, splitTarget } from './request.js';

export interface RouteMatch {
  /** The request method, upper case. */
  readonly method: string;
  readonly params: URLSearchParams;
  /** The decoded repository name for a repository's route, '' for a fixed path. */
  readonly repo: string;
}

export interface Route {
  /** Methods the route answers (upper case); the others get 405. */
  readonly methods: readonly string[];
  /** The `Allow` header of that 405. */
  readonly allow: string;
  /** Synchronous up to the first I/O; may throw a GatewayError (the gateway answers it). */
  handle(request: GatewayRequest, match: RouteMatch): GatewayReply | Promise<GatewayReply>;
}

export interface Routes {
  /** Routes at a fixed path, by path. */
  readonly paths: Readonly<Record<string, Route>>;
  /** Routes under `/<name>.git`, by the rest of the path. */
  readonly repository: Readonly<Record<string, Route>>;
}

export type Router = (request: GatewayRequest) => GatewayReply | Promise<GatewayReply>;

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

export function createRouter(routes: Routes): Router {
  const paths = new Map(Object.entries(routes.paths));
  for (const path of paths.keys()) {
    // a repository's segment is looked for first: a fixed path must not look like one
    if (!path.startsWith('/') || path.split('/')[1]!.endsWith('.git')) {
      throw new GatewayError('GATEWAY_BAD_ARGUMENT', `a fixed route path cannot be a repository's: ${path}`);
    }
  }
  const repository = new Map(Object.entries(routes.repository));
  const run = (route: Route, request: GatewayRequest, method: string, query: string, repo: string) => {
    if (!route.methods.includes(method)) {
      return refuse(405, 'GATEWAY_METHOD_NOT_ALLOWED', 'method not allowed', { allow: route.allow });
    }
    return route.handle(request, { method, params: queryParams(query), repo });
  };
  return (request) => {
    const { path, query } = splitTarget(request.url);
    const method = request.method.toUpperCase();
    const slash = path.indexOf('/', 1);
    const first = slash < 0 ? path.slice(1) : path.slice(1, slash);
    if (!first.endsWith('.git')) {
      const fixed = paths.get(path);
      return fixed === undefined ? notFound() : run(fixed, request, method, query, '');
    }
    const repo = repoName(first.slice(0, -4));
    const route = repository.get(slash < 0 ? '' : path.slice(slash));
    if (route === undefined) return notFound();
    return run(route, request, method, query, repo);
  };
}
