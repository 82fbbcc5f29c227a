/**
 * What a bus knows: its options, its links and routes, its listeners, handlers and requests. The
 * concept files (handshake, link, routing, rpc, incoming, channels, peers, receive) work on this
 * state through plain functions, except the requests, an object of their own (`rpc`) that the
 * bus holds; the few steps one of them takes in another's name (`lose`, `forget`, `undeliverable`,
 * `queueTick`, `route`) are methods the facade (bus.ts) provides, so the files import one another
 * in one direction only.
 */
import type { BusOptions, Handler, MessageMeta, Peer, PeerListener } from './bus-types.js';
import { DropReporter } from './drop-reporter.js';
import { EmitterCore } from './emitter.js';
import type { AnyMessageListener, BusMessageEvent } from './endpoint.js';
import { BusError } from './errors.js';
import type { IncomingRequest } from './incoming-request.js';
import type { Link, LinkOwner } from './link.js';
import { originMatcher } from './origin.js';
import { Rpc, type RpcOwner } from './rpc.js';
import { messageSize as messageSizeBinding } from './size.js';
import type { Envelope } from './wire.js';

// Imported bindings read per message, copied once into module constants (see link.ts).
const messageSize = messageSizeBinding;

/** Peer ids are 1 to MAX_ID_LENGTH characters. */
export const MAX_ID_LENGTH = 256;

/** A handshake in progress (see handshake.ts), failed at once when the bus closes. */
export interface Handshake {
  fail(error: BusError): void;
}

interface ErrorReportingGlobal {
  reportError?: (e: unknown) => void;
  console?: { error(...a: unknown[]): void };
  Bun?: unknown;
  Deno?: unknown;
}

/**
 * Reports an error nobody awaits without ending the program. A browser's `reportError` logs it
 * (with its stack, in the devtools' error list) and goes on. Bun's treats it as an uncaught
 * exception: the process (or the worker) exits unless the application installed a handler, and
 * Deno's did the same until a recent release. There, as in Node (which has no `reportError`), it
 * goes to `console.error`: a hub that drops frames still in flight to a peer that just died must
 * not take its process down.
 */
function defaultOnError(error: unknown): void {
  const g = globalThis as ErrorReportingGlobal;
  if (typeof g.reportError === 'function' && g.Bun === undefined && g.Deno === undefined) g.reportError(error);
  else g.console?.error('[gitport/bus]', error);
}

export abstract class BusState implements LinkOwner, RpcOwner {
  readonly id: string;
  readonly maxMessageSize: number;
  readonly isHub: boolean;
  closed = false;
  readonly maxPeers: number;
  readonly maxPending: number;
  readonly requestTimeout: number;
  readonly maxHops: number;
  readonly heartbeatInterval: number;
  readonly heartbeatMisses: number;
  readonly connectTimeout: number;
  readonly originAllowed: ((origin: string) => boolean) | undefined;
  readonly reportError: (error: unknown) => void;
  readonly drops: DropReporter;

  readonly links = new Map<string, Link>();
  readonly routes = new Map<string, Link>();
  readonly peerMap = new Map<string, Peer>();
  /** Links from here to each peer we route to: 1 for a direct link, more behind hubs (see onAnnounce). */
  readonly distance = new Map<string, number>();
  readonly events = new EmitterCore<MessageMeta>();
  readonly connectedListeners = new Set<PeerListener>();
  readonly lostListeners = new Set<PeerListener>();
  readonly handlers = new Map<string, Handler>();
  /** The requests this bus made and waits on (rpc.ts). */
  readonly rpc: Rpc = new Rpc(this);
  readonly incoming = new Map<string, IncomingRequest>();
  readonly channels = new Map<string, Set<AnyMessageListener>>();
  readonly channelBuffers = new Map<string, unknown[]>();
  readonly handshakes = new Set<Handshake>();
  /** Links with envelopes waiting: flushed once the frame being received is done, else at the next tick. */
  readonly toFlush: Link[] = [];
  /** True while a received frame is dispatched. */
  receiving = false;
  /** Whether the tick is queued: one microtask per task does every deferred flush and the idle check. */
  tickQueued = false;

  constructor(options: BusOptions) {
    if (typeof options?.id !== 'string' || options.id.length === 0 || options.id.length > MAX_ID_LENGTH) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'a bus needs an id of 1 to 256 characters');
    }
    this.id = options.id;
    this.maxPeers = options.maxPeers ?? 100;
    this.maxPending = options.maxPendingRequests ?? 1000;
    this.maxMessageSize = options.maxMessageSize ?? 16 * 1024 * 1024;
    this.requestTimeout = options.requestTimeout ?? 30_000;
    this.isHub = options.isHub ?? false;
    this.maxHops = options.maxHops ?? 4;
    this.heartbeatInterval = options.heartbeatInterval ?? 2000;
    this.heartbeatMisses = options.heartbeatMisses ?? 3;
    this.connectTimeout = options.connectTimeout ?? 10_000;
    this.originAllowed = options.allowedOrigins === undefined ? undefined : originMatcher(options.allowedOrigins);
    this.reportError = options.onError ?? defaultOnError;
    this.drops = new DropReporter(this.reportError);
  }

  /** A direct link is gone: forget it and every peer reached through it (peers.ts). */
  abstract lose(link: Link, reason: BusError): void;
  /** A peer is out of reach: settle what waits on it (peers.ts). */
  abstract forget(peer: string, reason: BusError): void;
  /** Structured clone refused `envelope` (rpc.ts). */
  abstract undeliverable(link: Link, envelope: Envelope, cause: unknown): void;
  /** Runs the deferred work of this task once its microtasks are done (bus.ts). */
  abstract queueTick(): void;
  /** The link to `peer`; throws BUS_CLOSED or BUS_UNKNOWN_PEER (routing.ts). */
  abstract route(peer: string): Link;

  /** Posts what every scheduled link holds. */
  flush(): void {
    const links = this.toFlush;
    while (links.length > 0) links.pop()!.post();
  }

  /** The message's size (see messageSize); throws BUS_MESSAGE_TOO_LARGE above maxMessageSize. */
  checkSize(name: string, payload: unknown): number {
    const size = messageSize(payload, this.maxMessageSize) + name.length;
    if (size > this.maxMessageSize) {
      throw new BusError(
        'BUS_MESSAGE_TOO_LARGE',
        `message "${name}" is larger than maxMessageSize (${this.maxMessageSize})`,
        { data: { size, limit: this.maxMessageSize } },
      );
    }
    return size;
  }

  /** Whether a message may be taken from its origin (see `allowedOrigins`). */
  checkOrigin(event: BusMessageEvent): boolean {
    const origin = event.origin;
    // Ports and workers carry no origin (capability-based); window messages always do.
    if (origin === undefined || origin === '') return true;
    return this.originAllowed!(origin);
  }

  onPeer(kind: 'connected' | 'lost', listener: PeerListener): () => void {
    const set = kind === 'connected' ? this.connectedListeners : this.lostListeners;
    const entry = (peer: string, reason?: BusError): void => listener(peer, reason);
    set.add(entry);
    return () => set.delete(entry);
  }

  notify(listeners: Set<PeerListener>, peer: string, reason: BusError | undefined): void {
    for (const listener of [...listeners]) {
      try {
        listener(peer, reason);
      } catch (error) {
        this.reportError(error);
      }
    }
  }
}
