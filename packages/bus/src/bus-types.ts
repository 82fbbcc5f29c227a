/**
 * The bus's public shapes: its options, the `Bus` interface, and what listeners and handlers are
 * given. The implementation composes the concept files (see bus.ts).
 */
import type { OnOptions } from './emitter.js';
import type { ChannelEndpoint, Endpoint } from './endpoint.js';
import type { BusError } from './errors.js';
import type { Transferring } from './transferring.js';

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
   * reportError in a browser, console.error elsewhere (Bun's reportError would end the process).
   * Messages dropped because of what a peer sent are reported one by one
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

/**
 * A handler: takes the request's payload, returns the result (or a promise of it), optionally
 * wrapped by `withTransfer`. What it throws reaches the requester as a `BusError` with `remote: true`.
 */
export type Handler<P = unknown, R = unknown> = (
  payload: P,
  meta: HandlerMeta,
) => R | Transferring<R> | PromiseLike<R | Transferring<R>>;

/**
 * The names a bus's users may declare, to have payloads typed by name: `events` maps an event name
 * to its payload; `methods` maps a handler name to a function type from the request's payload to
 * its result (a promise of the result is the same result). Either may be left out: its names are
 * then any string, with `unknown` payloads. It is a declaration, not a check: a peer that does not
 * share it can send anything, so validate what untrusted peers send.
 *
 * ```ts
 * interface Api {
 *   events: { progress: { pct: number } };
 *   methods: { sum(terms: [number, number]): number };
 * }
 * const bus = createBus<Api>({ id: 'main' });
 * ```
 */
export interface BusSchema {
  events?: object;
  methods?: object;
}

type IsAny<T> = 0 extends 1 & T ? true : false;
type UntypedEvents = Record<string, unknown>;
type UntypedMethods = Record<string, (payload: unknown) => unknown>;
type EventsOf<S> =
  IsAny<S> extends true ? UntypedEvents : S extends { events: infer E extends object } ? E : UntypedEvents;
type MethodsOf<S> =
  IsAny<S> extends true ? UntypedMethods : S extends { methods: infer M extends object } ? M : UntypedMethods;

/** The event names of schema `S` (any string on an untyped bus). */
export type EventName<S> = keyof EventsOf<S> & string;
/**
 * The payload of event `E` of schema `S`; for a pattern (`ns:*`, `*`), the payload of any event it
 * matches; `unknown` on an untyped bus.
 */
export type EventPayload<S, E extends string> = E extends keyof EventsOf<S>
  ? EventsOf<S>[E]
  : E extends '*'
    ? EventsOf<S>[EventName<S>]
    : E extends `${infer Prefix}:*`
      ? EventsOf<S>[Extract<EventName<S>, `${Prefix}:${string}`>]
      : unknown;
/** What `on` listens to: an event name, or a pattern (`ns:*` for every name starting with `ns:`, `*` for all). */
export type EventPattern<S> = EventName<S> | '*' | `${string}:*`;
/** The handler names of schema `S` (any string on an untyped bus). */
export type MethodName<S> = keyof MethodsOf<S> & string;
/** The request payload of handler `N` of schema `S` (`unknown` on an untyped bus). */
export type MethodPayload<S, N extends string> = N extends keyof MethodsOf<S>
  ? MethodsOf<S>[N] extends (payload: infer P) => unknown
    ? P
    : unknown
  : unknown;
/** The result of handler `N` of schema `S` (`unknown` on an untyped bus). */
export type MethodResult<S, N extends string> = N extends keyof MethodsOf<S>
  ? MethodsOf<S>[N] extends (payload: never) => infer R
    ? Awaited<R>
    : unknown
  : unknown;

/**
 * A bus. `Bus` alone is untyped: any name, `unknown` payloads (a listener or handler may still
 * declare its payload's type, and `request<T>` its result's). `Bus<S>` types payloads by name after
 * the schema `S` (see BusSchema). Either converts to the other, so a typed bus goes wherever a `Bus`
 * is taken.
 */
// biome-ignore lint/suspicious/noExplicitAny: `any` as the default is what lets every Bus<S> convert to Bus and back.
export interface Bus<S extends BusSchema = any> {
  readonly id: string;
  readonly maxMessageSize: number;
  readonly isHub: boolean;
  readonly closed: boolean;
  connect(endpoint: Endpoint, options?: { signal?: AbortSignal; timeout?: number }): Promise<Peer>;
  readonly peers: ReadonlyMap<string, Peer>;
  send<E extends EventName<S>>(
    peer: string,
    event: E,
    payload: EventPayload<S, E>,
    options?: { transfer?: Transferable[] },
  ): void;
  signal<E extends EventName<S>>(event: E, payload: EventPayload<S, E>): void;
  on<E extends EventPattern<S>, P extends EventPayload<S, E> = EventPayload<S, E>>(
    event: E,
    listener: (payload: P, meta: MessageMeta) => void,
    options?: OnOptions,
  ): () => void;
  onPeer(kind: 'connected' | 'lost', listener: (peer: string, reason?: BusError) => void): () => void;
  handle<N extends MethodName<S>, P extends MethodPayload<S, N> = MethodPayload<S, N>>(
    name: N,
    fn: Handler<P, MethodResult<S, N>>,
  ): () => void;
  /** Resolves with the handler's result: typed by the schema, or as `T` when given. */
  request<T = never, N extends MethodName<S> = MethodName<S>>(
    peer: string,
    name: N,
    payload: MethodPayload<S, N>,
    options?: { timeout?: number; signal?: AbortSignal; transfer?: Transferable[] },
  ): Promise<[T] extends [never] ? MethodResult<S, N> : T>;
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
