/**
 * The router's matching and the order of its refusals: unknown paths, bad repository names,
 * unknown suffixes and methods, before any route runs.
 */
import { describe, expect, it } from 'vitest';
import { isGatewayError } from './errors.js';
import { type GatewayReply, text } from './reply.js';
import type { GatewayRequest } from './request.js';
import { createRouter, type Route, type RouteMatch } from './router.js';

const seen: { route: string; match: RouteMatch }[] = [];

function route(name: string, methods: string[], allow = methods.join(', ')): Route {
  return {
    methods,
    allow,
    handle(_request, match) {
      seen.push({ route: name, match });
      return text(200, name);
    },
  };
}

const router = createRouter({
  paths: { '/healthz': route('health', ['GET', 'HEAD']), '/events': route('all-events', ['GET']) },
  repository: { '/info/refs': route('discovery', ['GET', 'HEAD'], 'GET'), '/events': route('events', ['GET']) },
});

function request(method: string, url: string): GatewayRequest {
  return { method, url, headers: { get: () => null }, body: null, signal: new AbortController().signal };
}

function send(method: string, url: string): GatewayReply {
  seen.length = 0;
  const reply = router(request(method, url));
  if (reply instanceof Promise) throw new Error('the test routes answer synchronously');
  return reply;
}

const status = (reply: GatewayReply) => [reply.status, reply.headers['x-gitport-error'], reply.headers.allow];

describe('router', () => {
  it('matches fixed paths and repository routes, with the decoded name and the query', () => {
    expect(send('get', 'http://host:1/healthz').status).toBe(200);
    expect(seen.map((s) => [s.route, s.match.method, s.match.repo])).toEqual([['health', 'GET', '']]);
    send('GET', '/my%2Drepo.git/info/refs?service=git-upload-pack#frag');
    expect(seen.map((s) => [s.route, s.match.repo, s.match.params.get('service')])).toEqual([
      ['discovery', 'my-repo', 'git-upload-pack'],
    ]);
    send('GET', '/events?repo=a&repo=b');
    expect(seen[0]?.match.params.getAll('repo')).toEqual(['a', 'b']);
  });

  it('refuses an unknown path, a bad name, an unknown suffix and another method, in that order', () => {
    expect(status(send('GET', '/nothing/info/refs'))).toEqual([404, 'GATEWAY_NOT_FOUND', undefined]);
    expect(status(send('GET', '/demo.git'))).toEqual([404, 'GATEWAY_NOT_FOUND', undefined]);
    expect(status(send('GET', '/demo.git/objects/info/packs'))).toEqual([404, 'GATEWAY_NOT_FOUND', undefined]);
    let thrown: unknown;
    try {
      send('DELETE', '/..%2fetc.git/nothing');
    } catch (error) {
      thrown = error;
    }
    expect(isGatewayError(thrown) && thrown.code).toBe('GATEWAY_BAD_NAME');
    expect(status(send('POST', '/demo.git/info/refs'))).toEqual([405, 'GATEWAY_METHOD_NOT_ALLOWED', 'GET']);
    expect(status(send('POST', '/healthz'))).toEqual([405, 'GATEWAY_METHOD_NOT_ALLOWED', 'GET, HEAD']);
    expect(seen).toEqual([]);
  });

  it('refuses a fixed path that would be read as a repository', () => {
    expect(() => createRouter({ paths: { '/x.git': route('x', ['GET']) }, repository: {} })).toThrow(
      expect.objectContaining({ code: 'GATEWAY_BAD_ARGUMENT' }),
    );
  });
});
