/**
 * The bus: named peers over Endpoints, unicast and broadcast events, hub routing, request/response
 * RPC, origin checks, limits, peer liveness, and comlink-compatible channels.
 *
 * Wire format (structured clone, one postMessage per batch):
 *   handshake frame = { $gitportBus: "hello" | "ack", id, v, hub }
 *                   | { $gitportBus: "refuse", id, code, message }
 *   data frame      = Envelope                        (a lone envelope: its first element is a number)
 *                   | Envelope[]                      (all envelopes queued in one microtask)
 *   Envelope        = [kind, q, e?, i?, p?, s?, t?, h?] (an array: cheaper to clone than an object)
 *     q             sequence number (per link, strictly increasing)
 *     e             event or handler name, channel name; distances of the peers announced (kind pj)
 *     i             request id
 *     p             payload, wire error (kind re), peer ids (kinds pj, pl)
 *     s, t, h       source, target, hops left: left out between direct neighbours
 *   kind            = 0 event | 1 request | 2 response | 3 error response | 4 cancel
 *                   | 5 channel message | 6 peers joined | 7 peers left (from a hub)
 *                   | 8 heartbeat ping | 9 heartbeat pong | 10 bye
 *
 * Handshake: each side posts `hello` (retried with backoff until answered: a window may not listen
 * yet). A side that accepts the other (from its `hello` or `ack`: same protocol version, distinct
 * ids, `maxPeers` not reached, origin allowed) posts `ack` once, and again for every later `hello`;
 * a side is connected when it has accepted the other and received its `ack`. A side that does not
 * accept posts `refuse`, and both `connect` calls reject with BusError `BUS_HANDSHAKE` or
 * `BUS_TOO_MANY_PEERS` (a window whose origin is not allowed is ignored: its connect times out).
 *
 * Trust: an envelope is accepted from a link only if its source is the link's peer, or a peer the
 * link's hub announced. A response settles a request only if it comes from the peer the request went
 * to, with the request's unguessable id (53 random bits).
 */

import { EmitterCore, type OnOptions } from './emitter.js';
import type { AnyMessageListener, BusMessageEvent, ChannelEndpoint, Endpoint, MessageListener } from './endpoint.js';
import { BusError, errorFromWire, errorToWire, type WireError } from './errors.js';
import { originMatcher } from './origin.js';
import { messageSize } from './size.js';
import { type Envelope, Kind, Slot, TRANSFER } from './wire.js';

export const PROTOCOL_VERSION = 3;
const TAG = '$gitportBus';
const MAX_ID_LENGTH = 256;
const CHANNEL_BUFFER = 256;
const CHANNEL_BUFFER_KEYS = 256;
/** Drops caused by peers reported one by one per window (see `onError`), and the window in ms. */
const DROP_REPORTS = 20;
const DROP_WINDOW = 1000;

/** A batch is posted at once when it reaches this many bytes (messageSize) or messages. */
const BATCH_BYTES = 256 * 1024;
const BATCH_MESSAGES = 1024;

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

/** A handler result that transfers (rather than copies) some of its parts. */
export class Transferring<T = unknown> {
  constructor(
    readonly value: T,
    readonly transfer: Transferable[],
  ) {}
}

/** Wraps a handler's result so that `transfer` is moved to the requester instead of copied. */
export function withTransfer<T>(value: T, transfer: Transferable[]): Transferring<T> {
  return new Transferring(value, transfer);
}

interface HandshakeFrame {
  [TAG]: 'hello' | 'ack' | 'refuse';
  id: unknown;
  v?: unknown;
  hub?: unknown;
  code?: unknown;
  message?: unknown;
}

function isHandshake(data: unknown): data is HandshakeFrame {
  return typeof data === 'object' && data !== null && !Array.isArray(data) && Object.hasOwn(data, TAG);
}

/**
 * Runs `fn` in a microtask. A reaction on a settled promise rather than `queueMicrotask`, which in
 * Node wraps every callback in an async resource (several allocations and hooks per call).
 * `fn` must not throw (it would surface as an unhandled rejection).
 */
const settled = Promise.resolve();
function afterThisTask(fn: () => void): void {
  void settled.then(fn);
}

function unref(timer: unknown): void {
  const t = timer as { unref?: () => void } | undefined;
  if (t !== undefined && t !== null && typeof t.unref === 'function') t.unref();
}

function defaultOnError(error: unknown): void {
  const g = globalThis as { reportError?: (e: unknown) => void; console?: { error(...a: unknown[]): void } };
  if (typeof g.reportError === 'function') g.reportError(error);
  else g.console?.error('[gitport/bus]', error);
}

// Request ids: 53 random bits (the most a number holds exactly), from a pooled buffer of
// crypto.getRandomValues (a global in browsers and Node >= 19). A number clones and hashes for less
// than a string of the same randomness, on both sides of every call.
const pool = new Uint32Array(2 * 1024);
let poolAt = pool.length;
function randomId(): number {
  if (poolAt === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const high = pool[poolAt]! & 0x1fffff;
  const low = pool[poolAt + 1]!;
  poolAt += 2;
  return high * 0x1_0000_0000 + low;
}

/** A message of `kind` to `peer` that structured clone refused. */
function cannotClone(kind: number, peer: string, cause: unknown): BusError {
  return new BusError('BUS_DATA_CLONE', `cannot post a kind ${kind} message to ${peer}`, { cause });
}

/** A request id as received: the requester's opaque token, echoed back as it came. */
function validId(id: unknown): id is RequestId {
  return typeof id === 'number' ? Number.isSafeInteger(id) : typeof id === 'string' && id.length <= 64;
}

class Link {
  /** Envelopes waiting for the next flush: `first` alone while there is one (no array for a lone call), else `queue`. */
  queued = 0;
  first: Envelope | undefined;
  queue: Envelope[] | null = null;
  queuedBytes = 0;
  transfers: Transferable[] | null = null;
  scheduled = false;
  seqOut = 0;
  seqIn = 0;
  alive = true;
  missed = 0;
  dead = false;
  heartbeat: ReturnType<typeof setInterval> | undefined;
  offClose: (() => void) | undefined;
  constructor(
    readonly peer: string,
    readonly endpoint: Endpoint,
    readonly remoteHub: boolean,
    readonly listener: MessageListener,
  ) {}
}

/** Where `capture`, the executor every request's promise shares, leaves its resolving functions. */
const captured: { resolve: ((value: never) => void) | undefined; reject: ((error: unknown) => void) | undefined } = {
  resolve: undefined,
  reject: undefined,
};
function capture(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  captured.resolve = resolve;
  captured.reject = reject;
}

/** A request id: ours are numbers (see randomId); a peer's may be a short string too. */
type RequestId = number | string;

class Pending {
  /** performance.now() deadline, or Infinity. */
  deadline = Number.POSITIVE_INFINITY;
  name = '';
  onAbort: (() => void) | undefined;
  constructor(
    readonly peer: string,
    readonly resolve: (value: never) => void,
    readonly reject: (error: unknown) => void,
    readonly signal: AbortSignal | undefined,
  ) {}
}

/**
 * Pending requests by id. The first one has a slot of its own and only the others go in a Map: a
 * Map allocates as entries come and go (a new table whenever it shrinks or fills with deleted
 * entries), and one call at a time would otherwise pay that on every call.
 */
class PendingTable {
  private loneId = Number.NaN;
  private lone: Pending | undefined;
  private readonly more = new Map<number, Pending>();

  get size(): number {
    return (this.lone === undefined ? 0 : 1) + this.more.size;
  }

  get(id: number): Pending | undefined {
    return id === this.loneId ? this.lone : this.more.get(id);
  }

  /** Adds a request under an id not pending (see request). */
  add(id: number, pending: Pending): void {
    if (this.lone === undefined) {
      this.loneId = id;
      this.lone = pending;
    } else {
      this.more.set(id, pending);
    }
  }

  delete(id: number): void {
    if (id === this.loneId) {
      this.loneId = Number.NaN;
      this.lone = undefined;
    } else {
      this.more.delete(id);
    }
  }

  /** A copy of the entries, to settle while iterating. */
  entries(): [number, Pending][] {
    const all: [number, Pending][] = this.lone === undefined ? [] : [[this.loneId, this.lone]];
    for (const entry of this.more) all.push(entry);
    return all;
  }
}

class IncomingRequest implements HandlerMeta {
  private controller: AbortController | undefined;
  private abortReason: BusError | undefined;
  constructor(readonly from: string) {}
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }
  abort(reason: BusError): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}

interface Handshake {
  fail(error: BusError): void;
}

class BusImpl implements Bus {
  readonly id: string;
  readonly maxMessageSize: number;
  readonly isHub: boolean;
  closed = false;
  private readonly maxPeers: number;
  private readonly maxPending: number;
  private readonly requestTimeout: number;
  private readonly maxHops: number;
  private readonly heartbeatInterval: number;
  private readonly heartbeatMisses: number;
  private readonly connectTimeout: number;
  private readonly originAllowed: ((origin: string) => boolean) | undefined;
  private readonly reportError: (error: unknown) => void;

  private readonly links = new Map<string, Link>();
  private readonly routes = new Map<string, Link>();
  private readonly peerMap = new Map<string, Peer>();
  /** Links from here to each peer we route to: 1 for a direct link, more behind hubs (see onAnnounce). */
  private readonly distance = new Map<string, number>();
  private readonly events = new EmitterCore<MessageMeta>();
  private readonly connectedListeners = new Set<(peer: string, reason?: BusError) => void>();
  private readonly lostListeners = new Set<(peer: string, reason?: BusError) => void>();
  private readonly handlers = new Map<string, Handler>();
  private readonly pending = new PendingTable();
  private readonly incoming = new Map<string, IncomingRequest>();
  private readonly channels = new Map<string, Set<AnyMessageListener>>();
  private readonly channelBuffers = new Map<string, unknown[]>();
  private readonly handshakes = new Set<Handshake>();
  /** One timer for every request deadline, armed for the earliest one. */
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** Drop reports in the current window (see `dropped`), those left unreported, and its start. */
  private dropReports = 0;
  private dropSuppressed = 0;
  private dropWindowAt = Number.NEGATIVE_INFINITY;
  private dropTimer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the idle timer check is due at the next tick (see settle). */
  private idleCheck = false;
  /** The lone request being posted (NaN, equal to no id: none), and its answer if the endpoint delivered one meanwhile. */
  private postingId = Number.NaN;
  private postingPeer = '';
  private postingAnswer: Envelope | undefined;
  /** Links with envelopes waiting: flushed once the frame being received is done, else at the next tick. */
  private readonly toFlush: Link[] = [];
  /** True while a received frame is dispatched. */
  private receiving = false;
  /** Whether `tick` is queued: one microtask per task does every deferred flush and the idle check. */
  private tickQueued = false;

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
  }

  get peers(): ReadonlyMap<string, Peer> {
    return this.peerMap;
  }

  get pendingRequests(): number {
    return this.pending.size;
  }

  // ---------------------------------------------------------------- connection

  connect(endpoint: Endpoint, options: { signal?: AbortSignal; timeout?: number } = {}): Promise<Peer> {
    if (this.closed) return Promise.reject(new BusError('BUS_CLOSED', 'the bus is closed'));
    const signal = options.signal;
    if (signal?.aborted) {
      return Promise.reject(new BusError('BUS_ABORTED', 'connect aborted', { cause: signal.reason }));
    }
    return new Promise<Peer>((resolve, reject) => {
      let link: Link | undefined;
      let accepted: string | undefined;
      let sentAck = false;
      let settled = false;
      let retry: ReturnType<typeof setTimeout> | undefined;
      let delay = 20;
      const hello = { [TAG]: 'hello', id: this.id, v: PROTOCOL_VERSION, hub: this.isHub };
      const cleanup = (): void => {
        settled = true;
        this.handshakes.delete(handshake);
        clearTimeout(retry);
        clearTimeout(deadline);
        signal?.removeEventListener('abort', onAbort);
      };
      const handshake: Handshake = {
        fail: (error) => {
          if (settled) return;
          cleanup();
          endpoint.removeEventListener('message', listener);
          reject(error);
        },
      };
      const onAbort = (): void =>
        handshake.fail(new BusError('BUS_ABORTED', 'connect aborted', { cause: signal?.reason }));
      const refuse = (code: string, message: string): void => {
        try {
          endpoint.postMessage({ [TAG]: 'refuse', id: this.id, code, message });
        } catch {
          // the refusal is a courtesy; our own connect fails below either way
        }
        handshake.fail(new BusError(code, message));
      };
      const listener: MessageListener = (event) => {
        if (link !== undefined) {
          this.receive(link, event);
          return;
        }
        if (settled || (this.originAllowed !== undefined && !this.checkOrigin(event))) return;
        const frame = event.data;
        if (!isHandshake(frame)) return;
        const kind = frame[TAG];
        if (kind === 'refuse') {
          const code = frame.code === 'BUS_TOO_MANY_PEERS' ? 'BUS_TOO_MANY_PEERS' : 'BUS_HANDSHAKE';
          handshake.fail(new BusError(code, `the peer refused the connection: ${String(frame.message)}`));
          return;
        }
        if (kind !== 'hello' && kind !== 'ack') return;
        const id = frame.id;
        if (frame.v !== PROTOCOL_VERSION) {
          refuse('BUS_HANDSHAKE', `protocol version mismatch: ours ${PROTOCOL_VERSION}, theirs ${String(frame.v)}`);
          return;
        }
        if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
          refuse('BUS_HANDSHAKE', 'invalid peer id');
          return;
        }
        if (id === this.id) {
          refuse('BUS_HANDSHAKE', `peer id ${JSON.stringify(id)} is our own id`);
          return;
        }
        if (this.links.has(id)) {
          refuse('BUS_HANDSHAKE', `a peer named ${JSON.stringify(id)} is already connected`);
          return;
        }
        if (this.links.size >= this.maxPeers) {
          refuse('BUS_TOO_MANY_PEERS', `maxPeers (${this.maxPeers}) reached`);
          return;
        }
        if (accepted !== undefined && accepted !== id) return; // a third party on a shared channel
        if (accepted === undefined) {
          // We accept them: say so once (again for every hello: they may have missed our ack).
          accepted = id;
          sentAck = false;
        }
        if (kind === 'hello' || !sentAck) {
          try {
            endpoint.postMessage({ [TAG]: 'ack', id: this.id, v: PROTOCOL_VERSION, hub: this.isHub });
            sentAck = true;
          } catch (error) {
            handshake.fail(new BusError('BUS_HANDSHAKE', 'cannot post on the endpoint', { cause: error }));
            return;
          }
        }
        if (kind !== 'ack') return; // connected once they have accepted us too
        cleanup();
        link = new Link(id, endpoint, frame.hub === true, listener);
        resolve(this.establish(link));
      };
      const deadline = setTimeout(
        () => handshake.fail(new BusError('BUS_TIMEOUT', 'the handshake timed out')),
        options.timeout ?? this.connectTimeout,
      );
      unref(deadline);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.handshakes.add(handshake);
      endpoint.addEventListener('message', listener);
      endpoint.start?.();
      const sendHello = (): void => {
        if (settled) return;
        try {
          endpoint.postMessage(hello);
        } catch (error) {
          handshake.fail(new BusError('BUS_HANDSHAKE', 'cannot post on the endpoint', { cause: error }));
          return;
        }
        retry = setTimeout(sendHello, delay);
        unref(retry);
        delay = Math.min(delay * 2, 1000);
      };
      sendHello();
    });
  }

  private establish(link: Link): Peer {
    const id = link.peer;
    const known = this.peerMap.has(id);
    this.links.set(id, link);
    this.routes.set(id, link);
    this.distance.set(id, 1);
    const peer: Peer = { id };
    this.peerMap.set(id, peer);
    const endpoint = link.endpoint;
    if (typeof endpoint.onClose === 'function') {
      link.offClose = endpoint.onClose(() =>
        this.lose(link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} is gone (endpoint closed)`)),
      );
    } else if (this.heartbeatInterval > 0 && this.heartbeatInterval !== Number.POSITIVE_INFINITY) {
      link.heartbeat = setInterval(() => this.beat(link), this.heartbeatInterval);
      unref(link.heartbeat);
    }
    if (this.isHub) {
      // The newcomer learns every peer this hub reaches, directly or through another hub; the
      // others learn the newcomer (and, through onAnnounce, whoever it announces in turn).
      const others = [...this.routes.keys()].filter((other) => other !== id);
      if (others.length > 0) this.announceJoined(link, others);
      for (const other of this.links.values()) {
        if (other !== link) this.announceJoined(other, [id]);
      }
    }
    if (!known) this.notify(this.connectedListeners, id, undefined);
    return peer;
  }

  private beat(link: Link): void {
    if (link.alive) {
      link.missed = 0;
    } else if (++link.missed >= this.heartbeatMisses) {
      this.lose(link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(link.peer)} missed its heartbeats`));
      return;
    }
    link.alive = false;
    this.enqueue(link, [Kind.ping, 0]);
  }

  private checkOrigin(event: BusMessageEvent): boolean {
    const origin = event.origin;
    // Ports and workers carry no origin (capability-based); window messages always do.
    if (origin === undefined || origin === '') return true;
    return this.originAllowed!(origin);
  }

  disconnect(peer: string): void {
    const link = this.links.get(peer);
    if (link === undefined) return;
    this.sendBye(link);
    this.lose(link, new BusError('BUS_PEER_LOST', `disconnected from ${JSON.stringify(peer)}`));
  }

  private sendBye(link: Link): void {
    this.enqueue(link, [Kind.bye, 0]);
    this.post(link);
  }

  /** A direct link is gone: forget it and every peer reached through it. */
  private lose(link: Link, reason: BusError): void {
    if (link.dead) return;
    link.dead = true;
    link.endpoint.removeEventListener('message', link.listener);
    clearInterval(link.heartbeat);
    link.offClose?.();
    link.queued = 0;
    link.first = undefined;
    link.queue = null;
    link.transfers = null;
    const id = link.peer;
    if (this.links.get(id) === link) this.links.delete(id);
    const gone: string[] = [];
    for (const [peer, route] of this.routes) if (route === link) gone.push(peer);
    for (const peer of gone) this.forget(peer, reason);
    if (this.isHub && !this.closed) {
      for (const other of this.links.values()) {
        this.announceLeft(other, gone);
      }
    }
  }

  private forget(peer: string, reason: BusError): void {
    this.routes.delete(peer);
    this.distance.delete(peer);
    this.peerMap.delete(peer);
    for (const [id, pending] of this.pending.entries()) {
      if (pending.peer === peer) this.settle(id, pending, false, reason);
    }
    const prefix = `${peer}\n`;
    for (const [key, request] of this.incoming) {
      if (key.startsWith(prefix)) {
        this.incoming.delete(key);
        request.abort(reason);
      }
    }
    for (const key of this.channelBuffers.keys()) if (key.startsWith(prefix)) this.channelBuffers.delete(key);
    this.notify(this.lostListeners, peer, reason);
  }

  private notify(
    listeners: Set<(peer: string, reason?: BusError) => void>,
    peer: string,
    reason: BusError | undefined,
  ): void {
    for (const listener of [...listeners]) {
      try {
        listener(peer, reason);
      } catch (error) {
        this.reportError(error);
      }
    }
  }

  onPeer(kind: 'connected' | 'lost', listener: (peer: string, reason?: BusError) => void): () => void {
    const set = kind === 'connected' ? this.connectedListeners : this.lostListeners;
    const entry = (peer: string, reason?: BusError): void => listener(peer, reason);
    set.add(entry);
    return () => set.delete(entry);
  }

  /**
   * Reports a message dropped because of what a peer sent: one by one up to DROP_REPORTS per
   * DROP_WINDOW, then counted, and the count reported when the window is over.
   */
  private dropped(error: BusError): void {
    const now = performance.now();
    if (now - this.dropWindowAt >= DROP_WINDOW) {
      this.dropWindowAt = now;
      this.dropReports = 0;
    }
    if (this.dropReports < DROP_REPORTS) {
      this.dropReports++;
      this.reportError(error);
      return;
    }
    if (this.dropSuppressed++ === 0) {
      this.dropTimer = setTimeout(() => this.reportSuppressed(), this.dropWindowAt + DROP_WINDOW - now);
      unref(this.dropTimer);
    }
  }

  private reportSuppressed(): void {
    const count = this.dropSuppressed;
    this.dropSuppressed = 0;
    this.dropTimer = undefined;
    if (count === 0) return;
    this.reportError(
      new BusError('BUS_REPORTS_SUPPRESSED', `${count} more dropped messages were not reported one by one`, {
        data: { count },
      }),
    );
  }

  // ---------------------------------------------------------------- sending

  /** An envelope to `target` over `link`: source, target and hops only when `link` leads to a hub. */
  private envelope(link: Link, target: string, k: number, e: unknown, i: unknown, p: unknown): Envelope {
    return link.peer === target ? [k, 0, e, i, p] : [k, 0, e, i, p, this.id, target, this.maxHops];
  }

  /** Queues an envelope on a link; everything queued in one microtask goes out in one postMessage. */
  private enqueue(link: Link, envelope: Envelope, transfer?: Transferable[], size = 0): void {
    if (link.dead) return;
    envelope[Slot.sequence] = ++link.seqOut;
    const queued = link.queued++;
    if (queued === 0) link.first = envelope;
    else if (queued === 1) link.queue = [link.first!, envelope];
    else link.queue!.push(envelope);
    if (transfer !== undefined && transfer.length > 0) {
      envelope[TRANSFER] = transfer;
      if (link.transfers === null) link.transfers = transfer.slice();
      else for (const t of transfer) link.transfers.push(t);
    }
    link.queuedBytes += size;
    if (link.queuedBytes >= BATCH_BYTES || link.queued >= BATCH_MESSAGES) {
      // Big batches cost more to clone than they save: post this one now.
      this.post(link);
      return;
    }
    if (!link.scheduled) {
      link.scheduled = true;
      // While a frame is being received, what it causes goes out once it is done; otherwise
      // everything queued in this task goes out in one postMessage per link at the next tick.
      this.toFlush.push(link);
      if (!this.receiving) this.queueTick();
    }
  }

  /** Posts what `link` holds (one envelope as it is, a batch as an array of them). */
  private post(link: Link): void {
    link.scheduled = false;
    link.queuedBytes = 0;
    const queued = link.queued;
    if (queued === 0 || link.dead) return;
    // A lone envelope goes as it is (one array less to clone), a batch as an array of envelopes.
    const frame = queued === 1 ? link.first! : link.queue!;
    const transfers = link.transfers;
    link.queued = 0;
    link.first = undefined;
    link.queue = null;
    link.transfers = null;
    try {
      this.postOn(link, frame, transfers);
    } catch (error) {
      if (queued === 1) this.undeliverable(link, frame, error);
      else {
        // One bad envelope must not sink the batch: post them one by one.
        for (const envelope of frame as Envelope[]) {
          try {
            if (this.postOn(link, envelope, envelope[TRANSFER]) !== undefined) return; // the peer is gone
          } catch (cause) {
            this.undeliverable(link, envelope, cause);
          }
        }
      }
    }
  }

  /**
   * Posts `frame` on `link`. An endpoint that cannot post at all (a closed port or channel) means the
   * peer is gone: the link is lost, and the reason returned. A DataCloneError is thrown to the caller,
   * which knows what the frame held.
   */
  private postOn(link: Link, frame: unknown, transfers: Transferable[] | null | undefined): BusError | undefined {
    try {
      if (transfers == null || transfers.length === 0) link.endpoint.postMessage(frame);
      else link.endpoint.postMessage(frame, transfers);
      return undefined;
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name === 'DataCloneError') throw error;
      const lost = new BusError('BUS_PEER_LOST', `cannot post to ${JSON.stringify(link.peer)}`, { cause: error });
      this.lose(link, lost);
      return lost;
    }
  }

  private undeliverable(link: Link, envelope: Envelope, cause: unknown): void {
    const kind = envelope[Slot.kind] as number;
    const error = cannotClone(kind, link.peer, cause);
    const id = envelope[Slot.id] as RequestId;
    if (kind === Kind.request) {
      const pending = this.pending.get(id as number);
      if (pending !== undefined) this.settle(id as number, pending, false, error);
    } else if (kind === Kind.response) {
      const to = (envelope[Slot.target] as string | undefined) ?? link.peer;
      this.enqueue(link, this.envelope(link, to, Kind.errorResponse, undefined, id, errorToWire(error)));
    } else {
      this.reportError(error);
    }
  }

  /** The message's size (see messageSize); throws BUS_MESSAGE_TOO_LARGE above maxMessageSize. */
  private checkSize(name: string, payload: unknown): number {
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

  private route(peer: string): Link {
    if (this.closed) throw new BusError('BUS_CLOSED', 'the bus is closed');
    const link = this.routes.get(peer);
    if (link === undefined) throw new BusError('BUS_UNKNOWN_PEER', `no peer named ${JSON.stringify(peer)}`);
    return link;
  }

  send(peer: string, event: string, payload: unknown, options?: { transfer?: Transferable[] }): void {
    if (typeof event !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'an event name must be a string');
    const link = this.route(peer);
    const size = this.checkSize(event, payload);
    this.enqueue(link, this.envelope(link, peer, Kind.event, event, undefined, payload), options?.transfer, size);
  }

  signal(event: string, payload: unknown): void {
    if (typeof event !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'an event name must be a string');
    if (this.closed) throw new BusError('BUS_CLOSED', 'the bus is closed');
    if (this.routes.size === 0) return;
    const size = this.checkSize(event, payload);
    for (const [peer, link] of this.routes) {
      this.enqueue(link, this.envelope(link, peer, Kind.event, event, undefined, payload), undefined, size);
    }
  }

  on(event: string, listener: (payload: unknown, meta: MessageMeta) => void, options?: OnOptions): () => void {
    return this.events.on(event, listener as (payload: unknown, meta: MessageMeta) => void, options);
  }

  // ---------------------------------------------------------------- RPC

  handle(name: string, fn: Handler): () => void {
    if (typeof name !== 'string' || name.length === 0) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'a handler name must be a non-empty string');
    }
    if (typeof fn !== 'function') throw new BusError('BUS_INVALID_ARGUMENT', 'a handler must be a function');
    if (this.handlers.has(name)) {
      throw new BusError('BUS_INVALID_ARGUMENT', `a handler named ${JSON.stringify(name)} already exists`);
    }
    this.handlers.set(name, fn);
    return () => {
      if (this.handlers.get(name) === fn) this.handlers.delete(name);
    };
  }

  request<T = unknown>(
    peer: string,
    name: string,
    payload: unknown,
    options?: { timeout?: number; signal?: AbortSignal; transfer?: Transferable[] },
  ): Promise<T> {
    let link: Link;
    let size: number;
    try {
      if (typeof name !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'a handler name must be a string');
      link = this.route(peer);
      if (this.pending.size >= this.maxPending) {
        throw new BusError('BUS_TOO_MANY_PENDING', `maxPendingRequests (${this.maxPending}) reached`);
      }
      if (options?.signal?.aborted) {
        throw new BusError('BUS_ABORTED', 'request aborted', { cause: options.signal.reason });
      }
      size = this.checkSize(name, payload);
    } catch (error) {
      return Promise.reject(error);
    }
    let id = randomId();
    while (this.pending.get(id) !== undefined) id = randomId();
    const signal = options?.signal;
    const timeout = options?.timeout ?? this.requestTimeout;
    const envelope = this.envelope(link, peer, Kind.request, name, id, payload);
    // The only request in flight, made outside a received frame with nothing else queued on its link
    // (one call at a time), is posted at once, before its bookkeeping, so the round trip starts
    // first and the rest overlaps it. Requests made while others are pending go out together, one
    // postMessage per tick.
    const lone = this.pending.size === 0 && !this.receiving && link.queued === 0;
    let early: Envelope | undefined;
    if (lone) {
      envelope[Slot.sequence] = ++link.seqOut;
      this.postingId = id;
      this.postingPeer = peer;
      try {
        const lost = this.postOn(link, envelope, options?.transfer);
        if (lost !== undefined) return Promise.reject(lost);
      } catch (error) {
        return Promise.reject(cannotClone(Kind.request, link.peer, error));
      } finally {
        this.postingId = Number.NaN;
        early = this.postingAnswer;
        this.postingAnswer = undefined;
      }
    }
    // The shared executor hands out the resolving functions: no closure made per request.
    const promise = new Promise<T>(capture);
    const pending = new Pending(peer, captured.resolve!, captured.reject!, signal);
    captured.resolve = captured.reject = undefined;
    if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
      pending.deadline = performance.now() + timeout;
      pending.name = name;
    }
    if (signal !== undefined) this.watch(id, pending, signal);
    this.pending.add(id, pending);
    if (!lone) this.enqueue(link, envelope, options?.transfer, size);
    else if (early !== undefined) {
      this.answer(id, pending, early);
      return promise;
    }
    // The deadline timer is armed once the request is on its way, and only if posting did not settle
    // it already (an untimed request has no deadline).
    if (pending.deadline < this.timerAt && this.pending.get(id) === pending) this.armTimer(pending.deadline);
    return promise;
  }

  /** Settles a pending request with a response or error response from its peer. */
  private answer(id: number, pending: Pending, envelope: Envelope): void {
    if (envelope[Slot.kind] === Kind.errorResponse) {
      this.settle(id, pending, false, errorFromWire(envelope[Slot.payload]));
    } else if (messageSize(envelope[Slot.payload], this.maxMessageSize) > this.maxMessageSize) {
      this.settle(id, pending, false, new BusError('BUS_MESSAGE_TOO_LARGE', 'the response was dropped: too large'));
    } else {
      this.settle(id, pending, true, envelope[Slot.payload]);
    }
  }

  private watch(id: number, pending: Pending, signal: AbortSignal): void {
    pending.onAbort = () => {
      if (this.pending.get(id) !== pending) return;
      this.settle(id, pending, false, new BusError('BUS_ABORTED', 'request aborted', { cause: signal.reason }));
      this.cancelRemote(pending.peer, id);
    };
    signal.addEventListener('abort', pending.onAbort, { once: true });
  }

  private armTimer(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.min(2_147_483_647, Math.max(0, at - performance.now())));
    unref(this.timer);
  }

  /** Times out every request past its deadline, then re-arms for the earliest one left. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [id, pending] of this.pending.entries()) {
      if (pending.deadline <= now) {
        this.settle(
          id,
          pending,
          false,
          new BusError('BUS_TIMEOUT', `request "${pending.name}" to ${pending.peer} timed out`),
        );
        this.cancelRemote(pending.peer, id);
      } else if (pending.deadline < next) {
        next = pending.deadline;
      }
    }
    if (next !== Number.POSITIVE_INFINITY && this.pending.size > 0) this.armTimer(next);
  }

  private cancelRemote(peer: string, id: number): void {
    const link = this.routes.get(peer);
    if (link !== undefined) this.enqueue(link, this.envelope(link, peer, Kind.cancel, undefined, id, undefined));
  }

  private settle(id: number, pending: Pending, ok: boolean, value: unknown): void {
    this.pending.delete(id);
    if (pending.onAbort !== undefined) pending.signal!.removeEventListener('abort', pending.onAbort);
    if (ok) pending.resolve(value as never);
    else pending.reject(value);
    if (this.pending.size === 0 && this.timer !== undefined) {
      // Nothing pending: no timer left behind. Checked at the next tick, after the caller's
      // continuation (queued by the resolve above) has run, so a caller issuing one request after
      // another keeps the timer, and that tick also posts the next request.
      this.idleCheck = true;
      this.queueTick();
    }
  }

  private queueTick(): void {
    if (this.tickQueued) return;
    this.tickQueued = true;
    afterThisTask(this.tick);
  }

  flush(): void {
    this.flushScheduled();
  }

  /** Posts what every scheduled link holds. */
  private flushScheduled(): void {
    const links = this.toFlush;
    while (links.length > 0) this.post(links.pop()!);
  }

  /** The deferred work of a task: flush what was queued, and clear the request timer if idle. */
  private readonly tick = (): void => {
    this.tickQueued = false;
    this.flushScheduled();
    if (this.idleCheck) {
      this.idleCheck = false;
      if (this.pending.size === 0 && this.timer !== undefined) {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
      }
    }
  };

  private onRequest(link: Link, from: string, envelope: Envelope): void {
    const id = envelope[Slot.id];
    if (!validId(id)) return;
    const name = envelope[Slot.name];
    const fn = typeof name === 'string' ? this.handlers.get(name) : undefined;
    if (fn === undefined) {
      this.respondError(link, from, id, new BusError('BUS_NO_HANDLER', `no handler named ${JSON.stringify(name)}`));
      return;
    }
    const payload = envelope[Slot.payload];
    if (messageSize(payload, this.maxMessageSize) + (name as string).length > this.maxMessageSize) {
      this.respondError(link, from, id, new BusError('BUS_MESSAGE_TOO_LARGE', 'the request was dropped: too large'));
      return;
    }
    if (this.incoming.size >= this.maxPending) {
      // Bounded on the serving side too: a peer cannot pile up unfinished handler calls.
      this.respondError(link, from, id, new BusError('BUS_TOO_MANY_PENDING', 'too many requests in progress'));
      return;
    }
    const meta = new IncomingRequest(from);
    let result: unknown;
    let thenable: boolean;
    try {
      result = fn(payload, meta);
      thenable = typeof (result as PromiseLike<unknown> | undefined)?.then === 'function';
    } catch (error) {
      this.respondError(link, from, id, error);
      return;
    }
    if (thenable) {
      const key = `${from}\n${id}`;
      this.incoming.set(key, meta);
      Promise.resolve(result as PromiseLike<unknown>).then(
        (value) => {
          if (this.incoming.get(key) !== meta) return;
          this.incoming.delete(key);
          this.respond(from, id, value);
        },
        (error: unknown) => {
          if (this.incoming.get(key) !== meta) return;
          this.incoming.delete(key);
          const route = this.routes.get(from);
          if (route !== undefined) this.respondError(route, from, id, error);
        },
      );
    } else {
      this.respond(from, id, result, link);
    }
  }

  private respond(to: string, id: RequestId, result: unknown, link = this.routes.get(to)): void {
    if (link === undefined || link.dead) return;
    let value = result;
    let transfer: Transferable[] | undefined;
    if (result instanceof Transferring) {
      value = result.value;
      transfer = result.transfer;
    }
    let size: number;
    try {
      size = this.checkSize('', value);
    } catch (error) {
      this.respondError(link, to, id, error);
      return;
    }
    this.enqueue(link, this.envelope(link, to, Kind.response, undefined, id, value), transfer, size);
  }

  private respondError(link: Link, to: string, id: RequestId, error: unknown): void {
    let wire: WireError;
    try {
      wire = errorToWire(error);
      if (messageSize(wire, this.maxMessageSize) > this.maxMessageSize) throw new Error('too large');
    } catch {
      wire = {
        name: 'BusError',
        message: 'the handler failed with an error that cannot be sent',
        code: 'BUS_REMOTE_ERROR',
      };
    }
    this.enqueue(link, this.envelope(link, to, Kind.errorResponse, undefined, id, wire));
  }

  // ---------------------------------------------------------------- receiving

  private receive(link: Link, event: BusMessageEvent): void {
    if (link.dead) return;
    if (this.originAllowed !== undefined && !this.checkOrigin(event)) return;
    link.alive = true;
    const data = event.data;
    if (Array.isArray(data)) {
      if (this.receiving) {
        this.receiveFrame(link, data);
        return;
      }
      this.receiving = true;
      try {
        this.receiveFrame(link, data);
      } finally {
        this.receiving = false;
        // (a flush may post to an endpoint that delivers at once, whose receive drains this list too)
        this.flushScheduled();
      }
    } else if (isHandshake(data) && data[TAG] === 'refuse' && data.id === link.peer) {
      this.lose(link, new BusError('BUS_HANDSHAKE', `the peer dropped the connection: ${String(data.message)}`));
    } else if (isHandshake(data) && data[TAG] === 'hello' && data.id === link.peer) {
      // The other side's hello retries (sent before our ack reached it): answer again.
      try {
        link.endpoint.postMessage({ [TAG]: 'ack', id: this.id, v: PROTOCOL_VERSION, hub: this.isHub });
      } catch (error) {
        this.lose(link, new BusError('BUS_PEER_LOST', `cannot post to ${JSON.stringify(link.peer)}`, { cause: error }));
      }
    }
  }

  private receiveFrame(link: Link, data: unknown[]): void {
    if (typeof data[0] === 'number') {
      // a lone envelope
      try {
        this.dispatch(link, data);
      } catch (error) {
        this.reportError(error);
      }
      return;
    }
    for (let i = 0; i < data.length; i++) {
      const envelope: unknown = data[i];
      if (!Array.isArray(envelope)) continue;
      try {
        this.dispatch(link, envelope);
      } catch (error) {
        this.reportError(error);
      }
      if (link.dead) return;
    }
  }

  private dispatch(link: Link, envelope: Envelope): void {
    const q = envelope[Slot.sequence];
    if (typeof q !== 'number' || !Number.isSafeInteger(q) || q <= link.seqIn) return; // malformed, replayed or reordered
    link.seqIn = q;
    // Between direct neighbours source and target are implied (the link's peer, us) and left out.
    let source = envelope[Slot.source];
    if (source === undefined) source = link.peer;
    else if (
      source !== link.peer &&
      !(link.remoteHub && typeof source === 'string' && this.routes.get(source) === link)
    ) {
      return; // a peer may speak only for itself, a hub for the peers it announced
    }
    const target = envelope[Slot.target];
    if (target !== undefined && target !== this.id) {
      if (this.isHub) this.forward(link, envelope, source as string, target);
      return;
    }
    const from = source as string;
    switch (envelope[Slot.kind]) {
      case Kind.event: {
        const name = envelope[Slot.name];
        if (typeof name !== 'string') return;
        const payload = envelope[Slot.payload];
        if (messageSize(payload, this.maxMessageSize) + name.length > this.maxMessageSize) {
          this.dropped(new BusError('BUS_MESSAGE_TOO_LARGE', `dropped event "${name}" from ${from}: too large`));
          return;
        }
        this.events.dispatch(name, payload, { from, event: name });
        return;
      }
      case Kind.request:
        this.onRequest(link, from, envelope);
        return;
      case Kind.response:
      case Kind.errorResponse: {
        const id = envelope[Slot.id];
        if (typeof id !== 'number') return; // ours are numbers
        const pending = this.pending.get(id);
        if (pending !== undefined) {
          if (pending.peer === from) this.answer(id, pending, envelope); // else not from whom we asked
        } else if (id === this.postingId && from === this.postingPeer) {
          // the answer to the lone request being posted (an endpoint that delivers at once)
          this.postingAnswer = envelope;
        }
        return;
      }
      case Kind.cancel: {
        const key = `${from}\n${String(envelope[Slot.id])}`;
        const request = this.incoming.get(key);
        if (request !== undefined) {
          this.incoming.delete(key);
          request.abort(new BusError('BUS_ABORTED', 'the requester cancelled'));
        }
        return;
      }
      case Kind.channel:
        this.onChannel(from, envelope);
        return;
      case Kind.peersJoined:
      case Kind.peersLeft:
        if (from === link.peer && link.remoteHub && Array.isArray(envelope[Slot.payload]))
          this.onAnnounce(link, envelope);
        return;
      case Kind.ping:
        this.enqueue(link, [Kind.pong, 0]);
        return;
      case Kind.bye:
        if (from === link.peer) {
          this.lose(link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(from)} closed its bus`));
        }
        return;
      default:
        return;
    }
  }

  private forward(from: Link, envelope: Envelope, source: string, to: unknown): void {
    const target = typeof to === 'string' ? this.routes.get(to) : undefined;
    const kind = envelope[Slot.kind];
    const hops = envelope[Slot.hops];
    let refusal: BusError | undefined;
    if (target === undefined || target === from) {
      refusal = new BusError('BUS_UNKNOWN_PEER', `hub ${this.id} cannot reach ${JSON.stringify(to)}`);
    } else if (!(typeof hops === 'number' && hops > 0)) {
      refusal = new BusError('BUS_HOP_LIMIT', `hop limit reached at hub ${this.id}`);
    } else if (
      (kind === Kind.event || kind === Kind.request || kind === Kind.channel) &&
      messageSize(envelope[Slot.payload], this.maxMessageSize) > this.maxMessageSize
    ) {
      refusal = new BusError(
        'BUS_MESSAGE_TOO_LARGE',
        `hub ${this.id} dropped a message larger than its maxMessageSize`,
      );
    }
    if (refusal === undefined) {
      // Only the wire slots go on (never more than a sender could put there), source filled in.
      const next: Envelope = [
        kind,
        0,
        envelope[Slot.name],
        envelope[Slot.id],
        envelope[Slot.payload],
        source,
        to,
        (hops as number) - 1,
      ];
      this.enqueue(target!, next, collectTransferables(envelope[Slot.payload]));
      return;
    }
    if (kind === Kind.request && typeof envelope[Slot.id] === 'string') {
      // Answer in the target's name: the requester reached it through us, so it trusts our word.
      this.enqueue(from, [
        Kind.errorResponse,
        0,
        undefined,
        envelope[Slot.id],
        errorToWire(refusal),
        to,
        source,
        this.maxHops,
      ]);
    } else {
      this.dropped(refusal);
    }
  }

  /**
   * Tells `link` that we reach `ids`, each with its distance from us (links to cross). The
   * distances ride in the name slot, so a bus that does not read them takes every peer as one hub away.
   */
  private announceJoined(link: Link, ids: string[]): void {
    const distances = ids.map((id) => this.distance.get(id) ?? 1);
    this.enqueue(link, [Kind.peersJoined, 0, distances, undefined, ids]);
  }

  /** Tells `link` that we no longer reach `ids`. */
  private announceLeft(link: Link, ids: string[]): void {
    this.enqueue(link, [Kind.peersLeft, 0, undefined, undefined, ids]);
  }

  /**
   * What a hub announced: peers it reaches (with their distance from it) or peers it no longer
   * reaches. A route is taken if we had none or it is shorter than ours; a departure is believed
   * only from the link we route through. A hub answers the departure of a peer it still reaches
   * another way with an announcement, so the other side finds that way (after a hub link drops in a
   * loop of hubs). Routes longer than a message's hops can travel are not taken, and a route the
   * next hub says has grown that long is dropped (the peer is out of reach): stale announcements
   * left circling a loop after a peer leaves it grow at each hub until they die out.
   */
  private onAnnounce(link: Link, envelope: Envelope): void {
    const ids = envelope[Slot.payload] as unknown[];
    const told = envelope[Slot.name];
    const distances = Array.isArray(told) && told.length === ids.length ? told : undefined;
    const joined = envelope[Slot.kind] === Kind.peersJoined;
    const changed: string[] = [];
    const stillHere: string[] = [];
    const outOfReach: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (typeof id !== 'string' || id === this.id) continue;
      if (joined) {
        const d = distances?.[i];
        const far = (Number.isSafeInteger(d) && (d as number) > 0 ? (d as number) : 1) + 1;
        const route = this.routes.get(id);
        if (far > this.maxHops + 1) {
          // No message could travel that far. If that is the way we reach the peer, it is out of reach.
          if (route === link && !this.links.has(id)) {
            outOfReach.push(id);
            this.forget(id, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} is out of reach`));
          }
          continue;
        }
        if (route === undefined) {
          if (this.peerMap.size >= this.maxPeers * 4) continue;
          this.routes.set(id, link);
          this.distance.set(id, far);
          this.peerMap.set(id, { id, via: link.peer });
          changed.push(id);
          this.notify(this.connectedListeners, id, undefined);
        } else if (
          !this.links.has(id) &&
          (route === link ? far !== this.distance.get(id) : far < this.distance.get(id)!)
        ) {
          // the same way, now longer or shorter; or a shorter way than ours (a direct link stays)
          this.routes.set(id, link);
          this.distance.set(id, far);
          if (this.peerMap.get(id)?.via !== link.peer) this.peerMap.set(id, { id, via: link.peer });
          changed.push(id);
        }
      } else if (this.routes.get(id) === link && !this.links.has(id)) {
        changed.push(id);
        this.forget(id, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} left hub ${link.peer}`));
      } else if (this.isHub && this.routes.has(id)) {
        stillHere.push(id);
      }
    }
    if (!this.isHub || this.closed) return;
    if (stillHere.length > 0) this.announceJoined(link, stillHere);
    // A hub passes on what changed here to everyone but the hub that told it.
    const left = joined ? outOfReach : changed;
    for (const other of this.links.values()) {
      if (other === link) continue;
      if (joined && changed.length > 0) this.announceJoined(other, changed);
      if (left.length > 0) this.announceLeft(other, left);
    }
  }

  // ---------------------------------------------------------------- channels (comlink)

  endpoint(peer: string, channel: string): ChannelEndpoint {
    if (typeof peer !== 'string' || typeof channel !== 'string') {
      throw new BusError('BUS_INVALID_ARGUMENT', 'endpoint(peer, channel) takes two strings');
    }
    const key = `${peer}\n${channel}`;
    const own = new Set<AnyMessageListener>();
    return {
      postMessage: (message, transfer) => {
        const link = this.route(peer);
        const size = this.checkSize(channel, message);
        this.enqueue(link, this.envelope(link, peer, Kind.channel, channel, undefined, message), transfer, size);
      },
      addEventListener: (type, listener) => {
        if (type !== 'message') return;
        let set = this.channels.get(key);
        if (set === undefined) {
          set = new Set();
          this.channels.set(key, set);
        }
        set.add(listener);
        own.add(listener);
        const buffered = this.channelBuffers.get(key);
        if (buffered !== undefined) {
          this.channelBuffers.delete(key);
          queueMicrotask(() => {
            for (const data of buffered) this.deliver(key, data);
          });
        }
      },
      removeEventListener: (type, listener) => {
        if (type !== 'message') return;
        own.delete(listener);
        const set = this.channels.get(key);
        if (set === undefined) return;
        set.delete(listener);
        if (set.size === 0) this.channels.delete(key);
      },
      start: () => {},
      close: () => {
        const set = this.channels.get(key);
        for (const listener of own) set?.delete(listener);
        own.clear();
        if (set?.size === 0) this.channels.delete(key);
      },
      onClose: (listener) =>
        this.onPeer('lost', (lost) => {
          if (lost === peer) listener();
        }),
    };
  }

  private onChannel(source: string, envelope: Envelope): void {
    const channel = envelope[Slot.name];
    if (typeof channel !== 'string') return;
    if (messageSize(envelope[Slot.payload], this.maxMessageSize) + channel.length > this.maxMessageSize) {
      this.dropped(new BusError('BUS_MESSAGE_TOO_LARGE', `dropped channel message from ${source}: too large`));
      return;
    }
    const key = `${source}\n${channel}`;
    if (this.channels.has(key)) {
      this.deliver(key, envelope[Slot.payload]);
      return;
    }
    // Nobody listens yet (comlink's expose may come a moment later): keep a bounded backlog.
    let buffer = this.channelBuffers.get(key);
    if (buffer === undefined) {
      if (this.channelBuffers.size >= CHANNEL_BUFFER_KEYS) {
        this.dropped(new BusError('BUS_TOO_MANY_PENDING', `dropped channel message from ${source}: no listener`));
        return;
      }
      buffer = [];
      this.channelBuffers.set(key, buffer);
    }
    if (buffer.length >= CHANNEL_BUFFER) {
      this.dropped(new BusError('BUS_TOO_MANY_PENDING', `dropped channel message from ${source}: backlog full`));
      return;
    }
    buffer.push(envelope[Slot.payload]);
  }

  private deliver(key: string, data: unknown): void {
    const set = this.channels.get(key);
    if (set === undefined) return;
    const event = { data };
    for (const listener of [...set]) {
      try {
        if (typeof listener === 'function') (listener as MessageListener)(event);
        else (listener as { handleEvent(event: BusMessageEvent): void }).handleEvent(event);
      } catch (error) {
        this.reportError(error);
      }
    }
  }

  // ---------------------------------------------------------------- closing

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const error = new BusError('BUS_CLOSED', 'the bus was closed');
    for (const handshake of [...this.handshakes]) handshake.fail(error);
    for (const link of [...this.links.values()]) {
      try {
        this.sendBye(link);
      } catch {
        // a peer that cannot hear the bye finds out by its port closing or its heartbeats
      }
      this.lose(link, error);
    }
    for (const [id, pending] of this.pending.entries()) this.settle(id, pending, false, error);
    if (this.dropTimer !== undefined) {
      clearTimeout(this.dropTimer);
      this.reportSuppressed();
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    for (const request of this.incoming.values()) request.abort(error);
    this.incoming.clear();
    this.channels.clear();
    this.channelBuffers.clear();
    this.events.clear();
    this.connectedListeners.clear();
    this.lostListeners.clear();
  }
}

/** Transferables inside a payload a hub forwards (ports must be transferred again, buffers are moved rather than copied). */
function collectTransferables(payload: unknown): Transferable[] | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const PortCtor = (globalThis as { MessagePort?: abstract new () => object }).MessagePort;
  if (PortCtor === undefined) return undefined;
  let found: Transferable[] | undefined;
  const seen = new Set<object>();
  const stack: unknown[] = [payload];
  let budget = 10_000;
  while (stack.length > 0 && budget-- > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    if (value instanceof PortCtor) (found ??= []).push(value as unknown as Transferable);
    else if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) continue;
    else if (Array.isArray(value)) for (const v of value) stack.push(v);
    else if (value instanceof Map) for (const [k, v] of value) stack.push(k, v);
    else if (value instanceof Set) for (const v of value) stack.push(v);
    else for (const key of Object.keys(value)) stack.push((value as Record<string, unknown>)[key]);
  }
  return found;
}

/** Creates a bus. Nothing happens (no timer, no listener) until `connect`. */
export function createBus(options: BusOptions): Bus {
  return new BusImpl(options);
}

/** A bus that forwards envelopes between its peers (`isHub: true`). */
export function createHub(options: Omit<BusOptions, 'isHub'>): Bus {
  return new BusImpl({ ...options, isHub: true });
}
