/**
 * What every route module shares: the backend, the SSE hub, the limits, the access and
 * cross-origin rules, and whether the gateway is closing.
 */
import type { GitBackend } from '../backend.js';
import type { Limits } from '../limits.js';
import type { SseHub } from '../sse-hub.js';
import type { Access } from './auth.js';
import type { CrossOrigin } from './cors.js';

export interface GatewayContext {
  readonly backend: GitBackend;
  readonly hub: SseHub;
  readonly limits: Limits;
  readonly access: Access;
  readonly crossOrigin: CrossOrigin;
  /** Whether the gateway is closing: new work is refused with 503. */
  closed(): boolean;
  /** Why the shared event log is not working (git is still served), or undefined. */
  degraded(): string | undefined;
}
