/**
 * The gateway's router: a request target is a fixed path (`/healthz`, `/events`) or a
 * repository's, `/<name>.git<suffix>` (`/info/refs`, `/git-upload-pack`, `/events`, ...), and
 * each route names the methods it answers. Matching is two map lookups; a repository's name is
 * validated once per raw segment, not per request.
 *
 * The order of the checks is part of the contract: an unknown path is 404 before anything else, a
 * repository segment with a bad name is 400 (GATEWAY_BAD_NAME, thrown) before its suffix is
 * looked at, a known route with another method is 405 with `Allow`, and only then does the route
 * run (its own checks come next: content type, origin, access, limits).
 */
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
    const fixed = paths.get(path);
    if (fixed !== undefined) return run(fixed, request, method, query, '');
    const slash = path.indexOf('/', 1);
    const first = slash < 0 ? path.slice(1) : path.slice(1, slash);
    if (!first.endsWith('.git')) return notFound();
    const repo = repoName(first.slice(0, -4));
    const route = repository.get(slash < 0 ? '' : path.slice(slash));
    if (route === undefined) return notFound();
    return run(route, request, method, query, repo);
  };
}
