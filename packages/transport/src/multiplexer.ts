/**
 * Many duplex streams over one frame link (one per bus): routes frames to streams, fails every
 * stream of a lost peer, and flushes the streams' coalescing buffers and send queues together on
 * one macrotask tick, round-robin. The two sides of opening a stream are in files of their own,
 * each installed on first use, so a bundle that only opens or only listens leaves the other out:
 * open.ts (`openOn`: opens waiting for an answer, optimistic opens) and accept.ts (`listenOn`:
 * listeners, answers to the peers' opens).
 */
import type { Acceptor } from './accept.js';
import { TransportError } from './errors.js';
import { type Frame, MAX_WINDOW, MIN_PAYLOAD, PROTOCOL_VERSION, parseFrame } from './frames.js';
import type { FrameLink } from './link.js';
import type { Opener } from './open.js';
import type { Stream, StreamHost } from './stream.js';

export { DEFAULT_OPEN_TIMEOUT, type OpenOptions } from './open.js';
export { DEFAULT_WINDOW } from './window.js';

/** Room left in a bus message for the frame around a data payload. */
const FRAME_OVERHEAD = 1024;

export interface TransportStats {
  /** Open streams. */
  streams: number;
  /** Bytes received and not yet read, over all streams. */
  queuedBytes: number;
  /** Bytes sent and not yet granted back, over all streams. */
  inFlightBytes: number;
  /** Our opens the peer has not answered yet (optimistic ones included). */
  pendingOpens: number;
}

export interface PeerStreams {
  /** Streams we opened (frames from the peer carry i = 0). */
  opened: Map<number, Stream>;
  /** Streams the peer opened (frames from the peer carry i = 1). */
  accepted: Map<number, Stream>;
}

/**
 * Runs `fn` in a microtask, once what the current task queued before it has run. A reaction on
 * a settled promise: `queueMicrotask` in Node wraps each callback in an async resource.
 */
const settled = Promise.resolve();
function afterThisTask(fn: () => void): void {
  void settled.then(fn);
}

/**
 * Runs `fn` on the next macrotask: setImmediate where there is one (Node), else a message to
 * ourselves on a private MessageChannel (browsers: no 4 ms clamp as with nested setTimeout).
 */
const scheduleMacrotask: (fn: () => void) => void = (() => {
  const g = globalThis as { setImmediate?: (fn: () => void) => unknown };
  if (typeof g.setImmediate === 'function') {
    const setImmediate = g.setImmediate;
    return (fn: () => void) => {
      setImmediate(fn);
    };
  }
  if (typeof MessageChannel === 'function') {
    let channel: MessageChannel | undefined;
    const queue: (() => void)[] = [];
    return (fn: () => void) => {
      if (channel === undefined) {
        channel = new MessageChannel();
        channel.port1.onmessage = () => {
          for (const task of queue.splice(0)) task();
        };
      }
      queue.push(fn);
      if (queue.length === 1) channel.port2.postMessage(null);
    };
  }
  return (fn: () => void) => {
    setTimeout(fn, 0);
  };
})();

export class Multiplexer {
  readonly link: FrameLink;
  #unsubscribe: () => void;
  #peers = new Map<string, PeerStreams>();
  /** The opening side, once something was opened (see open.ts). */
  opener: Opener | undefined;
  /** The accepting side, once somebody listens (see accept.ts). */
  acceptor: Acceptor | undefined;
  #flushQueue: Stream[] = [];
  /** Buffers handed to the bus for transfer (see StreamHost.claim). */
  #claimed = new WeakSet<ArrayBuffer>();
  /** Whether the tick (deferred accepts, then the streams' flushes) is scheduled. */
  #tickScheduled = false;
  /**
   * Whether the task that scheduled the tick is over (set from a microtask): a frame arriving
   * after that belongs to a later task and runs the tick first (see #onFrame).
   */
  #tickDue = false;
  /** Whether a macrotask for the tick is queued (at most one at a time). */
  #macrotaskQueued = false;
  closed = false;
  /** What every stream of this multiplexer calls back (one object, no closures per stream). */
  readonly host: StreamHost = {
    send: (stream, frame, transfer) => {
      // A deferred accept goes ahead of anything else to that peer.
      const acceptor = this.acceptor;
      if (acceptor !== undefined && acceptor.accepts.size !== 0) acceptor.sendAccepts(stream.peer);
      this.link.send(stream.peer, frame, transfer ?? []);
    },
    claim: (buffer) => {
      if (this.#claimed.has(buffer)) return false;
      this.#claimed.add(buffer);
      return true;
    },
    scheduleFlush: (stream) => {
      this.#flushQueue.push(stream);
      this.scheduleTick();
    },
    flushLink: () => this.link.flush?.(),
    finished: (stream) => {
      if (stream.slot !== undefined) stream.slot.open--;
      // An optimistic stream that is gone before its answer came: the open is no longer pending
      // (the answer, if it still comes, finds no open and is answered with an abort).
      if (stream.side === 1) this.opener?.finished(stream);
      const streams = this.#peers.get(stream.peer);
      if (streams === undefined) return;
      const map = stream.side === 1 ? streams.opened : streams.accepted;
      if (map.get(stream.id) === stream) map.delete(stream.id);
      if (streams.opened.size === 0 && streams.accepted.size === 0) this.#peers.delete(stream.peer);
    },
  };

  constructor(link: FrameLink) {
    this.link = link;
    this.#unsubscribe = link.subscribe(
      (peer, frame) => this.#onFrame(peer, frame),
      (peer, reason) => this.#onLost(peer, reason),
    );
  }

  get stats(): TransportStats {
    let streams = 0;
    let queuedBytes = 0;
    let inFlightBytes = 0;
    for (const peer of this.#peers.values()) {
      for (const map of [peer.opened, peer.accepted]) {
        for (const stream of map.values()) {
          const s = stream.stats;
          streams++;
          queuedBytes += s.queuedBytes;
          inFlightBytes += s.inFlightBytes;
        }
      }
    }
    return { streams, queuedBytes, inFlightBytes, pendingOpens: this.opener?.pending.size ?? 0 };
  }

  /** Fails every stream and pending open, and detaches from the link. */
  close(reason?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.#unsubscribe();
    const error = new TransportError('TRANSPORT_CLOSED', 'the transport was closed', { cause: reason });
    this.opener?.close(error);
    this.acceptor?.accepts.clear();
    for (const peer of [...this.#peers.keys()]) this.#failPeer(peer, error);
  }

  // ---------------------------------------------------------------- frames in

  #onFrame(peer: string, raw: unknown): void {
    if (this.#tickDue) this.#tick();
    const frame = parseFrame(raw);
    if (frame === undefined) return;
    switch (frame.t) {
      case 'open':
        if (frame.v !== PROTOCOL_VERSION) {
          this.refuse(peer, frame.s, 'TRANSPORT_PROTOCOL', `unsupported protocol version ${frame.v}`);
        } else if (this.acceptor === undefined) {
          this.refuseUnheard(peer, frame);
        } else {
          this.acceptor.onOpen(peer, frame);
        }
        return;
      case 'accept':
        if (this.opener === undefined) this.abandon(peer, frame.s);
        else this.opener.onAccept(peer, frame);
        return;
      case 'refuse':
        this.opener?.onRefuse(peer, frame);
        return;
      default: {
        const streams = this.#peers.get(peer);
        const stream =
          streams === undefined ? undefined : (frame.i === 1 ? streams.accepted : streams.opened).get(frame.s);
        stream?.receive(frame);
      }
    }
  }

  /** Refuses an open on a name nobody listens on. */
  refuseUnheard(peer: string, frame: Extract<Frame, { t: 'open' }>): void {
    this.refuse(peer, frame.s, 'TRANSPORT_NO_LISTENER', `nobody listens on ${frame.n}`);
  }

  /** Answers an accept of an open we no longer wait for. */
  abandon(peer: string, id: number): void {
    this.trySend(peer, { t: 'abort', s: id, i: 1, e: { name: 'Error', message: 'open abandoned' } });
  }

  refuse(peer: string, id: number, code: string, message: string): void {
    this.trySend(peer, { t: 'refuse', s: id, c: code, m: message });
  }

  #onLost(peer: string, reason?: unknown): void {
    // Our own bus closing is a close; anything else (worker gone, port closed, bye) a loss.
    const error =
      (reason as { code?: unknown } | undefined)?.code === 'BUS_CLOSED'
        ? new TransportError('TRANSPORT_CLOSED', `the bus was closed: ${peer} is out of reach`, { cause: reason })
        : new TransportError('TRANSPORT_PEER_LOST', `lost the connection to ${peer}`, { cause: reason });
    this.opener?.lost(peer, error);
    this.acceptor?.accepts.delete(peer);
    this.#failPeer(peer, error);
  }

  #failPeer(peer: string, error: TransportError): void {
    const streams = this.#peers.get(peer);
    if (streams === undefined) return;
    this.#peers.delete(peer);
    for (const stream of [...streams.opened.values(), ...streams.accepted.values()]) stream.fail(error, false);
  }

  // ---------------------------------------------------------------- helpers

  streamsOf(peer: string): PeerStreams {
    let streams = this.#peers.get(peer);
    if (streams === undefined) {
      streams = { opened: new Map(), accepted: new Map() };
      this.#peers.set(peer, streams);
    }
    return streams;
  }

  trySend(peer: string, frame: Frame): boolean {
    try {
      this.link.send(peer, frame, []);
      return true;
    } catch {
      return false;
    }
  }

  /** The largest data payload our side of the link carries in one message. */
  get maxPayload(): number {
    const limit = this.link.maxMessageSize - FRAME_OVERHEAD;
    return Number.isFinite(limit) ? Math.max(MIN_PAYLOAD, Math.min(MAX_WINDOW, Math.floor(limit))) : MAX_WINDOW;
  }

  /**
   * The one tick: sends the deferred accepts, then flushes the streams that buffered or queued
   * data (each stream's frames go behind its accept anyway, see #host.send). It runs at the next
   * macrotask, or before the next incoming frame if that comes first. A port that keeps
   * receiving can hold the macrotask back a long way (Node dispatches at least 1000 queued port
   * messages before its event loop moves on), and a small write must not wait behind a bulk
   * transfer on the same connection.
   */
  scheduleTick(): void {
    if (this.#tickScheduled) return;
    this.#tickScheduled = true;
    afterThisTask(this.#armTick);
    if (this.#macrotaskQueued) return;
    this.#macrotaskQueued = true;
    scheduleMacrotask(this.#onMacrotask);
  }

  #armTick = (): void => {
    if (this.#tickScheduled) this.#tickDue = true;
  };

  #onMacrotask = (): void => {
    this.#macrotaskQueued = false;
    if (this.#tickScheduled) this.#tick();
  };

  #tick = (): void => {
    this.#tickScheduled = false;
    this.#tickDue = false;
    const acceptor = this.acceptor;
    if (acceptor !== undefined && acceptor.accepts.size !== 0) {
      for (const peer of [...acceptor.accepts.keys()]) acceptor.sendAccepts(peer);
    }
    const queue = this.#flushQueue;
    if (queue.length === 0) return;
    this.#flushQueue = [];
    for (let k = 0; k < queue.length; k++) queue[k]!.sendQueued();
  };
}
