/**
 * `GET|HEAD /healthz`: 200 `ok` while the gateway takes git requests, 503 with the reason (and
 * `Retry-After`) while it is closing, its backend is down, or one of its limits is reached, so a
 * load balancer sends the next client elsewhere. While a shared event log (Redis) is unreachable
 * it answers 200 `degraded: <reason>`: git is still served, only other gateways' events are not.
 */
import { refuse, text } from '../reply.js';
import type { Route } from '../router.js';
import type { GatewayContext } from './context.js';
import type { Discovery } from './discovery.js';
import type { Rpc } from './rpc.js';

export function healthRoute(context: GatewayContext, rpc: Rpc, discovery: Discovery): Route {
  const { backend, limits } = context;
  /** Why the gateway cannot take git requests now, or undefined when it can. */
  const saturation = (): string | undefined => {
    if (context.closed()) return 'shutting down';
    if (!backend.healthy()) return 'backend unavailable';
    if (rpc.working >= limits.maxConcurrentRequests) return 'git requests saturated';
    if (rpc.pendingBodies >= limits.maxPendingBodies) return 'request bodies saturated';
    if (discovery.queued >= limits.maxQueuedDiscoveries) return 'discovery saturated';
    return undefined;
  };
  return {
    methods: ['GET', 'HEAD'],
    allow: 'GET, HEAD',
    handle() {
      const reason = saturation();
      if (reason !== undefined) return refuse(503, 'GATEWAY_UNAVAILABLE', reason, { 'retry-after': '1' });
      const degraded = context.degraded();
      return degraded === undefined ? text(200, 'ok') : text(200, `degraded: ${degraded}`);
    },
  };
}
