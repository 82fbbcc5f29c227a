/**
 * The bus's public shapes: its options, the `Bus` interface, and what listeners and handlers are
 * given. The implementation composes the concept files (see bus.ts).
 */
import type { OnOptions } from './emitter.js';
import type { ChannelEndpoint, Endpoint } from './endpoint.js';
import type { BusError } from './errors.js';

export interface Peer {
  readonly id: string;
  /** The hub through which this peer is reached; absent for a direct connection. */
  readonly via?: string;
}

export interface BusOptions {
  /** This bus's peer id (non-empty, at most 256 characters). */
  id: string;
  /** Origin patterns (see originMatcher) accepted on messages that carry a browser origin. */
  allowedOrigins?: string[];
  /** Directly connected peers at most (default 100). */
  maxPeers?: number;
  /** Outgoing requests pending at once at most, and incoming ones whose async handler is still running (default 1000). */
  maxPendingRequests?: number;
  /** Largest message, as counted by messageSize (default 16 MiB). */
  maxMessageSize?: number;
  /** Default request timeout in ms (default 30000; 0 or Infinity: none). */
  requestTimeout?: number;
  /** Forward envelopes between peers that are not directly connected. */
  isHub?: boolean;
  /** Hops an envelope may take through hubs (default 4). */
  maxHops?: number;
  /** Heartbeat period in ms for endpoints without a close event (default 2000). */
  heartbeatInterval?: number;
  /** Missed heartbeat periods before such a peer is lost (default 3). */
  heartbeatMisses?: number;
  /** Default handshake timeout in ms (default 10000). */
  connectTimeout?: number;
  /**
   * Where errors with no caller go (a listener that threw, a message dropped); default
   * reportError/console.error. Messages dropped because of what a peer sent are reported one by one
   * up to 20 a second; past that they are counted, and the count is reported once the second is
   * over (BusError `BUS_REPORTS_SUPPRESSED`), so a peer cannot flood the log.
   */
  onError?: (error: unknown) => void;
}

export interface MessageMeta {
  readonly from: string;
  readonly event: string;
}

export interface HandlerMeta {
  readonly from: string;
  /** Aborted when the requester cancels or times out, the requester is lost, or the bus closes. */
  readonly signal: AbortSignal;
}

export type Handler = (payload: unknown, meta: HandlerMeta) => unknown;

export interface Bus {
  readonly id: string;
  readonly maxMessageSize: number;
  readonly isHub: boolean;
  readonly closed: boolean;
  connect(endpoint: Endpoint, options?: { signal?: AbortSignal; timeout?: number }): Promise<Peer>;
  readonly peers: ReadonlyMap<string, Peer>;
  send(peer: string, event: string, payload: unknown, options?: { transfer?: Transferable[] }): void;
  signal(event: string, payload: unknown): void;
  on(event: string, listener: (payload: unknown, meta: MessageMeta) => void, options?: OnOptions): () => void;
  onPeer(kind: 'connected' | 'lost', listener: (peer: string, reason?: BusError) => void): () => void;
  handle(name: string, fn: Handler): () => void;
  request<T = unknown>(
    peer: string,
    name: string,
    payload: unknown,
    options?: { timeout?: number; signal?: AbortSignal; transfer?: Transferable[] },
  ): Promise<T>;
  /** A comlink-compatible Endpoint carried over the bus to `peer`, separate per `channel` name. */
  endpoint(peer: string, channel: string): ChannelEndpoint;
  /** Disconnects one directly connected peer (it sees the bus as lost). */
  disconnect(peer: string): void;
  /** Number of outgoing requests still pending. */
  readonly pendingRequests: number;
  /**
   * Posts what this task queued (sends, signals, answers) now instead of when the task's
   * microtasks are done: before work that holds the thread, say.
   */
  flush(): void;
  close(): void;
}

/** Told when a peer becomes reachable, or is lost (with the reason). */
export type PeerListener = (peer: string, reason?: BusError) => void;
