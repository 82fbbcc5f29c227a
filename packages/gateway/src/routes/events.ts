/**
 * Ref update event streams (Server-Sent Events):
 *
 *   GET /<name>.git/events          the ref updates of one repository
 *   GET /events[?repo=a&repo=b]     of all (or some) repositories
 *
 * The reply names the subscription; the adapter subscribes it to the hub when it writes the reply
 * (and refuses it with 503 then if the hub is full or closing). `Last-Event-ID` (or the
 * `lastEventId` query parameter, for clients that cannot set headers) asks for a replay.
 */

import { type GatewayReply, notFound } from '../reply.js';
import { decodeRepoName } from '../repo-name.js';
import type { GatewayRequest } from '../request.js';
import type { Route } from '../router.js';
import type { GatewayContext } from './context.js';

function eventsReply(request: GatewayRequest, repos: string[] | undefined, params: URLSearchParams): GatewayReply {
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

/** `GET /events`: every repository, or those named by `repo` parameters (each must exist). */
export function allEventsRoute({ backend, access }: GatewayContext): Route {
  return {
    methods: ['GET'],
    allow: 'GET',
    handle(request, { params }) {
      const repos = params.getAll('repo').map((r) => decodeRepoName(encodeURIComponent(r)));
      const denied = access.events(request, params.get('token'));
      if (denied !== undefined) return denied;
      return (async () => {
        for (const repo of repos) if (!(await backend.exists(repo))) return notFound();
        return eventsReply(request, repos.length === 0 ? undefined : repos, params);
      })();
    },
  };
}

/** `GET /<name>.git/events`: one repository. */
export function repositoryEventsRoute({ backend, access }: GatewayContext): Route {
  return {
    methods: ['GET'],
    allow: 'GET',
    handle(request, { params, repo }) {
      const denied = access.events(request, params.get('token'));
      if (denied !== undefined) return denied;
      return (async () => {
        if (!(await backend.exists(repo))) return notFound();
        return eventsReply(request, [repo], params);
      })();
    },
  };
}
