/**
 * The gateway's limits: what a client may send and how much work runs at once. Every one has a
 * default; a negative or non-finite value is a GATEWAY_BAD_ARGUMENT at construction.
 */
import { GatewayError } from './errors.js';

export interface GatewayLimits {
  /** Request body bytes on the wire (default 1 GiB). */
  maxBodyBytes?: number;
  /** Upload-pack request bytes, after inflation (default 32 MiB). */
  maxUploadRequestBytes?: number;
  /** gzip-inflated bytes of any body (default 32 MiB). */
  maxInflatedBytes?: number;
  /** Longest pause between request body chunks in ms (default 30 000); a longer one gets 408. */
  bodyIdleMs?: number;
  /**
   * The slowest a request body may arrive, bytes per second (default 1 024; 0: no minimum). A body
   * may wait for its client `bodyIdleMs` plus one second per this many bytes received; past that
   * it gets 408 (time the gateway itself spends not reading does not count).
   */
  minBodyBytesPerSecond?: number;
  /** The longest a whole request body may take, ms from its first read (default 3 600 000); then 408. */
  bodyTimeoutMs?: number;
  /**
   * Upload-pack and receive-pack requests doing work at once (default 64); more get 503. A request
   * counts once its body is in: an upload-pack request from the moment it has been read whole, a
   * receive-pack request (whose pack streams into the backend) from the end of its body until its
   * response ends. Requests still sending their body count in `maxPendingBodies` instead.
   */
  maxConcurrentRequests?: number;
  /** Upload-pack and receive-pack requests still sending their body at once (default 256); more get 503. */
  maxPendingBodies?: number;
  /**
   * Of those, how many one client address may have (default 32; 0: no per-client limit, e.g.
   * behind a proxy that makes every client one address). Requests without a known address are
   * not counted per client.
   */
  maxPendingBodiesPerClient?: number;
  /** Discoveries (`info/refs`) not answered from the cache that run at once (default 32). */
  maxConcurrentDiscoveries?: number;
  /** Discoveries waiting for one of those at once (default 1 024); more get 503. */
  maxQueuedDiscoveries?: number;
}

export type Limits = Readonly<Required<GatewayLimits>>;

/** The limits with their defaults filled in, checked. */
export function resolveLimits(limits: GatewayLimits = {}): Limits {
  const resolved = {
    maxBodyBytes: limits.maxBodyBytes ?? 1 << 30,
    maxUploadRequestBytes: limits.maxUploadRequestBytes ?? 32 << 20,
    maxInflatedBytes: limits.maxInflatedBytes ?? 32 << 20,
    bodyIdleMs: limits.bodyIdleMs ?? 30_000,
    minBodyBytesPerSecond: limits.minBodyBytesPerSecond ?? 1024,
    bodyTimeoutMs: limits.bodyTimeoutMs ?? 3_600_000,
    maxConcurrentRequests: limits.maxConcurrentRequests ?? 64,
    maxPendingBodies: limits.maxPendingBodies ?? 256,
    maxPendingBodiesPerClient: limits.maxPendingBodiesPerClient ?? 32,
    maxConcurrentDiscoveries: limits.maxConcurrentDiscoveries ?? 32,
    maxQueuedDiscoveries: limits.maxQueuedDiscoveries ?? 1024,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isFinite(value) || value < 0) {
      throw new GatewayError('GATEWAY_BAD_ARGUMENT', `limits.${name} must be a number >= 0`);
    }
  }
  return resolved;
}
