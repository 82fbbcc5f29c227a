/**
 * Many duplex streams over one frame link (one per bus): routes frames to streams, answers
 * open requests from the listeners, fails every stream of a lost peer, and flushes the
 * streams' coalescing buffers and send queues together on one macrotask tick, round-robin.
 * Remembers, per peer and name, what the last accept said, so later opens can be optimistic.
 */
import { reasonToWire, TransportError } from './errors.js';
import {
  type Frame,
  MAX_COUNT,
  MAX_WINDOW,
  MIN_PAYLOAD,
  OPTIMISTIC_CREDIT,
  PROTOCOL_VERSION,
  parseFrame,
} from './frames.js';
import type { FrameLink } from './link.js';
import { type DuplexStream, Stream, type StreamHost } from './stream.js';

/** The receive window a stream advertises unless told otherwise. */
export const DEFAULT_WINDOW = 1024 * 1024;
/** How long `open` waits for the peer to accept or refuse. */
export const DEFAULT_OPEN_TIMEOUT = 30_000;
/** Room left in a bus message for the frame around a data payload. */
const FRAME_OVERHEAD = 1024;

export interface ListenOptions {
  /** Receive window in bytes of each accepted stream (default 1 MiB). */
  window?: number;
  /**
   * How many streams of this listener may be open at once (default 256); more are refused
   * with TRANSPORT_TOO_MANY_STREAMS. With the window, it bounds what peers can make us queue.
   */
  maxStreams?: number;
}

/** Streams a listener accepts at once unless told otherwise. */
export const DEFAULT_MAX_STREAMS = 256;

export interface OpenOptions {
  /** Receive window in bytes (default 1 MiB). */
  window?: number;
  signal?: AbortSignal;
  /** Milliseconds to wait for the peer to accept (default 30 s). */
  timeout?: number;
}

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

interface PeerStreams {
  /** Streams we opened (frames from the peer carry i = 0). */
  opened: Map<number, Stream>;
  /** Streams the peer opened (frames from the peer carry i = 1). */
  accepted: Map<number, Stream>;
}

interface Listener {
  onStream: (stream: DuplexStream) => void;
  window: number;
  maxStreams: number;
  open: number;
}

interface PendingOpen {
  peer: string;
  name: string;
  window: number;
  /** The stream already handed out by an optimistic open (settled by the answer). */
  stream?: Stream;
  /** The open() promise of an open that waits for the answer. */
  resolve?: (stream: Stream) => void;
  reject?: (error: unknown) => void;
  /**
   * When it times out (performance.now()), and its timeout in ms. An optimistic open has none
   * (infinite): its open() resolved, so the caller's timeout and signal no longer apply.
   */
  deadline: number;
  timeout: number;
  signal?: AbortSignal;
  onAbort?: () => void;
}

const now: () => number =
  typeof performance !== 'undefined' && typeof performance.now === 'function' ? () => performance.now() : Date.now;

/** What an opener learnt about a name on a peer from its last accept. */
interface KnownName {
  /** Whether a stream on this name was accepted (the figures below are from that accept). */
  known: boolean;
  window: number;
  maxPayload: number;
  /** How many more streams the listener takes, as far as we know. */
  room: number;
  /** Our opens on this name not answered yet (each takes a slot there). */
  pending: number;
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

function checkWindow(window: number | undefined): number {
  if (window === undefined) return DEFAULT_WINDOW;
  if (!Number.isInteger(window) || window < 1 || window > MAX_WINDOW) {
    throw new TransportError('TRANSPORT_INVALID_ARGUMENT', `window must be an integer in 1..${MAX_WINDOW}`);
  }
  return window;
}

export class Multiplexer {
  #link: FrameLink;
  #unsubscribe: () => void;
  #peers = new Map<string, PeerStreams>();
  #listeners = new Map<string, Listener>();
  #pending = new Map<number, PendingOpen>();
  /** The one timer of the pending opens, and the deadline it is set for. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  /** Accepts of optimistic opens not sent yet, per peer (see #deferAccept); sent on the tick. */
  #accepts = new Map<string, { frame: Frame; stream: Stream }[]>();
  /** Per peer, per name: what the accepts told us (for optimistic opens). */
  #names = new Map<string, Map<string, KnownName>>();
  #nextId = 1;
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
  #closed = false;
  /** What every stream of this multiplexer calls back (one object, no closures per stream). */
  #host: StreamHost = {
    send: (stream, frame, transfer) => {
      // A deferred accept goes ahead of anything else to that peer.
      if (this.#accepts.size !== 0) this.#sendAccepts(stream.peer);
      this.#link.send(stream.peer, frame, transfer ?? []);
    },
    claim: (buffer) => {
      if (this.#claimed.has(buffer)) return false;
      this.#claimed.add(buffer);
      return true;
    },
    scheduleFlush: (stream) => {
      this.#flushQueue.push(stream);
      this.#scheduleTick();
    },
    flushLink: () => this.#link.flush?.(),
    finished: (stream) => {
      if (stream.slot !== undefined) stream.slot.open--;
      // An optimistic stream that is gone before its answer came: the open is no longer pending
      // (the answer, if it still comes, finds no open and is answered with an abort).
      if (stream.side === 1) {
        const pending = this.#pending.get(stream.id);
        if (pending !== undefined && pending.stream === stream) this.#settled(stream.id, pending);
      }
      const streams = this.#peers.get(stream.peer);
      if (streams === undefined) return;
      const map = stream.side === 1 ? streams.opened : streams.accepted;
      if (map.get(stream.id) === stream) map.delete(stream.id);
      if (streams.opened.size === 0 && streams.accepted.size === 0) this.#peers.delete(stream.peer);
    },
  };

  constructor(link: FrameLink) {
    this.#link = link;
    this.#unsubscribe = link.subscribe(
      (peer, frame) => this.#onFrame(peer, frame),
      (peer, reason) => this.#onLost(peer, reason),
    );
  }

  listen(name: string, onStream: (stream: DuplexStream) => void, options: ListenOptions = {}): () => void {
    if (typeof name !== 'string' || name.length === 0) {
      throw new TransportError('TRANSPORT_INVALID_ARGUMENT', 'listen() needs a non-empty name');
    }
    if (this.#listeners.has(name)) {
      throw new TransportError('TRANSPORT_INVALID_ARGUMENT', `somebody already listens on ${name}`);
    }
    const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    if (!Number.isInteger(maxStreams) || maxStreams < 1) {
      throw new TransportError('TRANSPORT_INVALID_ARGUMENT', 'maxStreams must be a positive integer');
    }
    const entry: Listener = { onStream, window: checkWindow(options.window), maxStreams, open: 0 };
    this.#listeners.set(name, entry);
    return () => {
      if (this.#listeners.get(name) === entry) this.#listeners.delete(name);
    };
  }

  open(peer: string, name: string, options: OpenOptions = {}): Promise<DuplexStream> {
    if (this.#closed) return Promise.reject(new TransportError('TRANSPORT_CLOSED', 'the transport is closed'));
    let window: number;
    try {
      window = checkWindow(options.window);
    } catch (error) {
      return Promise.reject(error);
    }
    const { signal } = options;
    if (signal?.aborted) {
      return Promise.reject(new TransportError('TRANSPORT_ABORTED', 'open aborted', { cause: signal.reason }));
    }
    const id = this.#nextId++;
    const known = this.#nameOf(peer, name);
    // Optimistic: the name was accepted there before and has room: write before the answer.
    const optimistic = known.known && known.room > 0;
    let stream: Stream | undefined;
    let credit = 0;
    if (optimistic) {
      known.room--;
      credit = Math.min(known.window, OPTIMISTIC_CREDIT);
      stream = new Stream(this.#host, {
        peer,
        name,
        id,
        side: 1,
        window,
        remoteWindow: credit,
        maxPayload: Math.min(this.#maxPayload, known.maxPayload),
      });
    }
    known.pending++;
    const timeout = options.timeout ?? DEFAULT_OPEN_TIMEOUT;
    // An optimistic open resolves now: no deadline, no abort listener (they apply to opening).
    const pending: PendingOpen = {
      peer,
      name,
      window,
      deadline: stream ? Number.POSITIVE_INFINITY : now() + timeout,
      timeout,
    };
    if (stream) pending.stream = stream;
    this.#pending.set(id, pending);
    this.#armDeadline(pending.deadline);
    if (signal && !stream) {
      pending.signal = signal;
      pending.onAbort = () =>
        this.#failPending(
          id,
          new TransportError('TRANSPORT_ABORTED', `opening ${name} on ${peer} aborted`, { cause: signal.reason }),
        );
      signal.addEventListener('abort', pending.onAbort, { once: true });
    }
    const frame: Frame = { t: 'open', s: id, n: name, w: window, m: this.#maxPayload, v: PROTOCOL_VERSION };
    if (stream) frame.c = credit;
    try {
      this.#link.send(peer, frame, []);
    } catch (error) {
      this.#settled(id, pending);
      const closed = (error as { code?: unknown } | null)?.code === 'BUS_CLOSED';
      return Promise.reject(
        new TransportError(
          closed ? 'TRANSPORT_CLOSED' : 'TRANSPORT_PEER_LOST',
          closed ? `the bus is closed: cannot open ${name}` : `cannot reach ${peer} to open ${name}`,
          { cause: error },
        ),
      );
    }
    if (stream) {
      this.#streamsOf(peer).opened.set(id, stream);
      return Promise.resolve(stream);
    }
    return new Promise<DuplexStream>((resolve, reject) => {
      pending.resolve = resolve;
      pending.reject = reject;
    });
  }

  /** Gives up a pending open: its promise rejects, or its optimistic stream fails. */
  #failPending(id: number, error: TransportError): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#settled(id, pending);
    // If the peer accepts after all, it learns the stream is gone.
    this.#trySend(pending.peer, { t: 'abort', s: id, i: 1, e: reasonToWire(error) });
    if (pending.stream) pending.stream.fail(error, true);
    else pending.reject?.(error);
  }

  /** One timer for every pending open, set for the earliest deadline. */
  #armDeadline(at: number): void {
    if (at >= this.#timerAt) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#sweep(), Math.max(0, at - now()));
  }

  #disarmDeadline(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  /** Times out the opens whose deadline passed; sets the timer for the next one. */
  #sweep(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const t = now();
    let next = Number.POSITIVE_INFINITY;
    for (const [id, pending] of [...this.#pending]) {
      if (pending.deadline <= t) {
        this.#failPending(
          id,
          new TransportError(
            'TRANSPORT_OPEN_TIMEOUT',
            `${pending.peer} did not answer opening ${pending.name} in ${pending.timeout} ms`,
          ),
        );
      } else if (pending.deadline < next) {
        next = pending.deadline;
      }
    }
    if (next !== Number.POSITIVE_INFINITY && this.#pending.size > 0) this.#armDeadline(next);
  }

  /** What we know of `name` on `peer` (created empty). */
  #nameOf(peer: string, name: string): KnownName {
    let names = this.#names.get(peer);
    if (names === undefined) {
      names = new Map();
      this.#names.set(peer, names);
    }
    let known = names.get(name);
    if (known === undefined) {
      known = { known: false, window: 0, maxPayload: 0, room: 0, pending: 0 };
      names.set(name, known);
    }
    return known;
  }

  /** An open was answered or given up: forget it as pending. */
  #settled(id: number, pending: PendingOpen): void {
    this.#pending.delete(id);
    if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort);
    if (this.#pending.size === 0) this.#disarmDeadline();
    const known = this.#names.get(pending.peer)?.get(pending.name);
    if (known !== undefined && known.pending > 0) known.pending--;
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
    return { streams, queuedBytes, inFlightBytes, pendingOpens: this.#pending.size };
  }

  /** Fails every stream and pending open, and detaches from the link. */
  close(reason?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    const error = new TransportError('TRANSPORT_CLOSED', 'the transport was closed', { cause: reason });
    for (const [id, pending] of [...this.#pending]) {
      this.#settled(id, pending);
      pending.reject?.(error);
    }
    this.#names.clear();
    this.#accepts.clear();
    for (const peer of [...this.#peers.keys()]) this.#failPeer(peer, error);
  }

  // ---------------------------------------------------------------- frames in

  #onFrame(peer: string, raw: unknown): void {
    if (this.#tickDue) this.#tick();
    const frame = parseFrame(raw);
    if (frame === undefined) return;
    switch (frame.t) {
      case 'open':
        this.#onOpen(peer, frame);
        return;
      case 'accept':
        this.#onAccept(peer, frame);
        return;
      case 'refuse': {
        const pending = this.#pending.get(frame.s);
        if (pending === undefined || pending.peer !== peer) return;
        this.#settled(frame.s, pending);
        const known = this.#names.get(peer)?.get(pending.name);
        if (known !== undefined) {
          // Nobody listens any more (forget the name), or no room: open the next one the slow way.
          if (frame.c === 'TRANSPORT_NO_LISTENER') known.known = false;
          known.room = 0;
        }
        const error = new TransportError(
          frame.c === 'TRANSPORT_NO_LISTENER' ||
            frame.c === 'TRANSPORT_TOO_MANY_STREAMS' ||
            frame.c === 'TRANSPORT_WINDOW_CHANGED'
            ? frame.c
            : 'TRANSPORT_PROTOCOL',
          `${peer} refused to open ${pending.name}: ${frame.m}`,
        );
        // An optimistic stream fails as a whole (what it wrote was dropped there).
        if (pending.stream) pending.stream.fail(error, true);
        else pending.reject?.(error);
        return;
      }
      default: {
        const streams = this.#peers.get(peer);
        const stream =
          streams === undefined ? undefined : (frame.i === 1 ? streams.accepted : streams.opened).get(frame.s);
        stream?.receive(frame);
      }
    }
  }

  #onOpen(peer: string, frame: Extract<Frame, { t: 'open' }>): void {
    const { s: id, n: name, w: remoteWindow, v: version } = frame;
    if (version !== PROTOCOL_VERSION) {
      this.#refuse(peer, id, 'TRANSPORT_PROTOCOL', `unsupported protocol version ${version}`);
      return;
    }
    const listener = this.#listeners.get(name);
    if (listener === undefined) {
      this.#refuse(peer, id, 'TRANSPORT_NO_LISTENER', `nobody listens on ${name}`);
      return;
    }
    if (listener.open >= listener.maxStreams) {
      this.#refuse(peer, id, 'TRANSPORT_TOO_MANY_STREAMS', `${name} already has ${listener.open} open streams`);
      return;
    }
    const streams = this.#streamsOf(peer);
    if (streams.accepted.has(id)) {
      this.#refuse(peer, id, 'TRANSPORT_PROTOCOL', `stream ${id} is already open`);
      return;
    }
    // An optimistic opener writes within the credit it announced, which it learnt from an accept
    // on this name: more than the listener's window means that listener was replaced by one with
    // a smaller window. The window is never widened for it: the opener opens again.
    if (frame.c !== undefined && frame.c > listener.window) {
      this.#refuse(
        peer,
        id,
        'TRANSPORT_WINDOW_CHANGED',
        `an open announcing ${frame.c} bytes of credit, above the window of ${listener.window} of ${name}`,
      );
      return;
    }
    listener.open++;
    const window = listener.window;
    const stream = new Stream(this.#host, {
      peer,
      name,
      id,
      side: 0,
      window,
      remoteWindow,
      maxPayload: Math.min(this.#maxPayload, frame.m),
      slot: listener,
    });
    streams.accepted.set(id, stream);
    const accept: Frame = {
      t: 'accept',
      s: id,
      w: window,
      m: this.#maxPayload,
      r: Math.min(listener.maxStreams - listener.open, MAX_COUNT),
    };
    if (frame.c !== undefined) this.#deferAccept(peer, accept, stream);
    else if (!this.#trySend(peer, accept)) {
      stream.fail(new TransportError('TRANSPORT_PEER_LOST', `cannot answer ${peer}`), true);
      return;
    }
    try {
      const result = listener.onStream(stream) as unknown;
      // An async handler that fails aborts its stream instead of leaving it open.
      if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
        (result as PromiseLike<unknown>).then(undefined, (error: unknown) => stream.abort(error));
      }
    } catch (error) {
      stream.abort(error);
    }
  }

  #refuse(peer: string, id: number, code: string, message: string): void {
    this.#trySend(peer, { t: 'refuse', s: id, c: code, m: message });
  }

  /**
   * An optimistic opener writes already: its accept need not hurry. It goes out ahead of the
   * next frame to that peer (so it still comes first), else on the tick: the answer a handler
   * writes at once and the accept share one message.
   */
  #deferAccept(peer: string, frame: Frame, stream: Stream): void {
    let queue = this.#accepts.get(peer);
    if (queue === undefined) {
      queue = [];
      this.#accepts.set(peer, queue);
    }
    queue.push({ frame, stream });
    this.#scheduleTick();
  }

  #sendAccepts(peer: string): void {
    const queue = this.#accepts.get(peer);
    if (queue === undefined) return;
    this.#accepts.delete(peer);
    for (const { frame, stream } of queue) {
      // Finished unanswered, it was the opener that ended it (an abort, or an end and a cancel
      // from there): the opener settled its open then, and needs no answer.
      if (stream.done) continue;
      if (!this.#trySend(peer, frame)) {
        stream.fail(new TransportError('TRANSPORT_PEER_LOST', `cannot answer ${peer}`), true);
      }
    }
  }

  #onAccept(peer: string, frame: Extract<Frame, { t: 'accept' }>): void {
    const { s: id, w: remoteWindow, m: remoteMaxPayload } = frame;
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.peer !== peer) {
      this.#trySend(peer, { t: 'abort', s: id, i: 1, e: { name: 'Error', message: 'open abandoned' } });
      return;
    }
    this.#settled(id, pending);
    const known = this.#nameOf(peer, pending.name);
    known.known = true;
    known.window = remoteWindow;
    known.maxPayload = remoteMaxPayload;
    // The room it counted is before our later opens (still pending) took theirs.
    known.room = Math.max(0, (frame.r ?? 0) - known.pending);
    if (pending.stream) {
      pending.stream.accepted(remoteWindow, Math.min(this.#maxPayload, remoteMaxPayload));
      return;
    }
    const stream = new Stream(this.#host, {
      peer,
      name: pending.name,
      id,
      side: 1,
      window: pending.window,
      remoteWindow,
      maxPayload: Math.min(this.#maxPayload, remoteMaxPayload),
    });
    this.#streamsOf(peer).opened.set(id, stream);
    pending.resolve?.(stream);
  }

  #onLost(peer: string, reason?: unknown): void {
    // Our own bus closing is a close; anything else (worker gone, port closed, bye) a loss.
    const error =
      (reason as { code?: unknown } | undefined)?.code === 'BUS_CLOSED'
        ? new TransportError('TRANSPORT_CLOSED', `the bus was closed: ${peer} is out of reach`, { cause: reason })
        : new TransportError('TRANSPORT_PEER_LOST', `lost the connection to ${peer}`, { cause: reason });
    for (const [id, pending] of [...this.#pending]) {
      if (pending.peer !== peer) continue;
      this.#settled(id, pending);
      pending.reject?.(error);
    }
    this.#names.delete(peer);
    this.#accepts.delete(peer);
    this.#failPeer(peer, error);
  }

  #failPeer(peer: string, error: TransportError): void {
    const streams = this.#peers.get(peer);
    if (streams === undefined) return;
    this.#peers.delete(peer);
    for (const stream of [...streams.opened.values(), ...streams.accepted.values()]) stream.fail(error, false);
  }

  // ---------------------------------------------------------------- helpers

  #streamsOf(peer: string): PeerStreams {
    let streams = this.#peers.get(peer);
    if (streams === undefined) {
      streams = { opened: new Map(), accepted: new Map() };
      this.#peers.set(peer, streams);
    }
    return streams;
  }

  #trySend(peer: string, frame: Frame): boolean {
    try {
      this.#link.send(peer, frame, []);
      return true;
    } catch {
      return false;
    }
  }

  /** The largest data payload our side of the link carries in one message. */
  get #maxPayload(): number {
    const limit = this.#link.maxMessageSize - FRAME_OVERHEAD;
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
  #scheduleTick(): void {
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
    if (this.#accepts.size !== 0) for (const peer of [...this.#accepts.keys()]) this.#sendAccepts(peer);
    const queue = this.#flushQueue;
    if (queue.length === 0) return;
    this.#flushQueue = [];
    for (let k = 0; k < queue.length; k++) queue[k]!.sendQueued();
  };
}
