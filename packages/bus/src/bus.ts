/**
 * The bus: named peers over Endpoints, unicast and broadcast events, hub routing, request/response
 * RPC, origin checks, limits, peer liveness, and comlink-compatible channels. This file is the
 * facade; each concept lives in its own file, working on the state of bus-state.ts:
 *
 *   bus-types.ts   the public shapes: options, Bus, payloads typed by a BusSchema
 *   handshake.ts   connect: hello / ack / refuse             (handshake-frame.ts: the frames)
 *   link.ts        a link per direct peer: batching and posting
 *   peers.ts       established links, liveness, what is settled when a peer is lost
 *   routing.ts     routes, hub forwarding and announcements
 *   rpc.ts         outgoing requests, an object the bus holds: pending table, deadline timer
 *                  (pending-table.ts, request-id.ts)
 *   incoming.ts    handlers and the requests they serve (incoming-request.ts)
 *   channels.ts    comlink-compatible endpoints and their backlog
 *   receive.ts     data frames checked and dispatched by kind
 *   drop-reporter.ts  drops caused by peers, reported without flooding
 *   transferring.ts   handler results that transfer parts (withTransfer)
 *
 * Wire format (structured clone, one postMessage per batch):
 *   handshake frame = { $gitportBus: "hello" | "ack", id, v, hub }
 *                   | { $gitportBus: "refuse", id, code, message }
 *   data frame      = Envelope                        (a lone envelope: its first element is a number)
 *                   | Envelope[]                      (all envelopes queued in one microtask)
 *   Envelope        = [kind, sequence, name?, id?, payload?, source?, target?, hops?]
 *                     (an array: cheaper to clone than an object; wire.ts names the slots and kinds)
 */

import { BusState } from './bus-state.js';
import type { Bus, BusOptions, BusSchema, Handler, MessageMeta, Peer } from './bus-types.js';
import { channelEndpoint } from './channels.js';
import type { OnOptions } from './emitter.js';
import type { ChannelEndpoint, Endpoint } from './endpoint.js';
import { BusError } from './errors.js';
import { connect } from './handshake.js';
import { handle } from './incoming.js';
import type { Link } from './link.js';
import { disconnect, forget, lose, sendBye } from './peers.js';
import { route as routeBinding } from './routing.js';
import { type Envelope, Kind as KindBinding } from './wire.js';

export type {
  Bus,
  BusOptions,
  BusSchema,
  EventName,
  EventPattern,
  EventPayload,
  Handler,
  HandlerMeta,
  MessageMeta,
  MethodName,
  MethodPayload,
  MethodResult,
  Peer,
} from './bus-types.js';
export { PROTOCOL_VERSION } from './handshake-frame.js';
export { Transferring, withTransfer } from './transferring.js';

// Imported bindings read per message, copied once into module constants (see link.ts).
const Kind = KindBinding;
const route = routeBinding;

/**
 * Runs `fn` in a microtask. A reaction on a settled promise rather than `queueMicrotask`, which in
 * Node wraps every callback in an async resource (several allocations and hooks per call).
 * `fn` must not throw (it would surface as an unhandled rejection).
 */
const settled = Promise.resolve();
function afterThisTask(fn: () => void): void {
  void settled.then(fn);
}

class BusImpl extends BusState implements Bus {
  get peers(): ReadonlyMap<string, Peer> {
    return this.peerMap;
  }

  get pendingRequests(): number {
    return this.rpc.pending.size;
  }

  connect(endpoint: Endpoint, options: { signal?: AbortSignal; timeout?: number } = {}): Promise<Peer> {
    return connect(this, endpoint, options);
  }

  disconnect(peer: string): void {
    disconnect(this, peer);
  }

  send(peer: string, event: string, payload: unknown, options?: { transfer?: Transferable[] }): void {
    if (typeof event !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'an event name must be a string');
    const link = route(this, peer);
    const size = this.checkSize(event, payload);
    link.enqueue(link.envelope(peer, Kind.event, event, undefined, payload), options?.transfer, size);
  }

  signal(event: string, payload: unknown): void {
    if (typeof event !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'an event name must be a string');
    if (this.closed) throw new BusError('BUS_CLOSED', 'the bus is closed');
    if (this.routes.size === 0) return;
    const size = this.checkSize(event, payload);
    for (const [peer, link] of this.routes) {
      link.enqueue(link.envelope(peer, Kind.event, event, undefined, payload), undefined, size);
    }
  }

  // A listener or handler declares its payload's type (see Bus); the bus hands it what arrived.

  on(event: string, listener: (payload: never, meta: MessageMeta) => void, options?: OnOptions): () => void {
    return this.events.on(event, listener as (payload: unknown, meta: MessageMeta) => void, options);
  }

  handle(name: string, fn: Handler<never>): () => void {
    return handle(this, name, fn as Handler);
  }

  request<T = unknown>(
    peer: string,
    name: string,
    payload: unknown,
    options?: { timeout?: number; signal?: AbortSignal; transfer?: Transferable[] },
  ): Promise<T> {
    return this.rpc.request<T>(peer, name, payload, options);
  }

  endpoint(peer: string, channel: string): ChannelEndpoint {
    return channelEndpoint(this, peer, channel);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const error = new BusError('BUS_CLOSED', 'the bus was closed');
    for (const handshake of [...this.handshakes]) handshake.fail(error);
    for (const link of [...this.links.values()]) {
      try {
        sendBye(link);
      } catch {
        // a peer that cannot hear the bye finds out by its port closing or its heartbeats
      }
      lose(this, link, error);
    }
    this.rpc.close(error);
    this.drops.close();
    for (const request of this.incoming.values()) request.abort(error);
    this.incoming.clear();
    this.channels.clear();
    this.channelBuffers.clear();
    this.events.clear();
    this.connectedListeners.clear();
    this.lostListeners.clear();
  }

  // The steps one concept takes in another's name (see bus-state.ts).

  lose(link: Link, reason: BusError): void {
    lose(this, link, reason);
  }

  forget(peer: string, reason: BusError): void {
    forget(this, peer, reason);
  }

  undeliverable(link: Link, envelope: Envelope, cause: unknown): void {
    this.rpc.undeliverable(link, envelope, cause);
  }

  route(peer: string): Link {
    return route(this, peer);
  }

  queueTick(): void {
    if (this.tickQueued) return;
    this.tickQueued = true;
    afterThisTask(this.tick);
  }

  /** The deferred work of a task: flush what was queued, and clear the request timer if idle. */
  private readonly tick = (): void => {
    this.tickQueued = false;
    this.flush();
    this.rpc.idle();
  };
}

/**
 * Creates a bus. Nothing happens (no timer, no listener) until `connect`. `createBus<S>()` types
 * payloads by name after the schema `S` (see BusSchema); without it the bus is untyped.
 */
// biome-ignore lint/suspicious/noExplicitAny: the untyped default (see Bus).
export function createBus<S extends BusSchema = any>(options: BusOptions): Bus<S> {
  return new BusImpl(options);
}

/** A bus that forwards envelopes between its peers (`isHub: true`). */
// biome-ignore lint/suspicious/noExplicitAny: the untyped default (see Bus).
export function createHub<S extends BusSchema = any>(options: Omit<BusOptions, 'isHub'>): Bus<S> {
  return new BusImpl({ ...options, isHub: true });
}
