/**
 * The opening side of a multiplexer: opens waiting for their answer (one timer for their
 * deadlines), and what the accepts said per peer and name, so later opens can be optimistic.
 * A multiplexer gets one with its first `openOn`, so a bundle that only listens leaves this file out.
 */
import { reasonToWire, TransportError } from './errors.js';
import { type Frame, OPTIMISTIC_CREDIT, PROTOCOL_VERSION } from './frames.js';
import { type DuplexStream, Stream, type StreamHost } from './stream.js';
import { checkWindow } from './window.js';

/** How long `open` waits for the peer to accept or refuse. */
export const DEFAULT_OPEN_TIMEOUT = 30_000;
export interface OpenOptions {
  /** Receive window in bytes (default 1 MiB). */
  window?: number;
  signal?: AbortSignal;
  /** Milliseconds to wait for the peer to accept (default 30 s). */
  timeout?: number;
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

/** What the opening side uses of its multiplexer. */
export interface OpenerHost {
  readonly link: { send(peer: string, frame: Frame, transfer: Transferable[]): void };
  readonly host: StreamHost;
  readonly maxPayload: number;
  readonly closed: boolean;
  opener: Opener | undefined;
  streamsOf(peer: string): { opened: Map<number, Stream> };
  trySend(peer: string, frame: Frame): boolean;
  abandon(peer: string, id: number): void;
}

export class Opener {
  readonly pending = new Map<number, PendingOpen>();
  /** The one timer of the pending opens, and the deadline it is set for. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  /** Per peer, per name: what the accepts told us (for optimistic opens). */
  #names = new Map<string, Map<string, KnownName>>();
  #nextId = 1;

  constructor(private readonly mux: OpenerHost) {}

  open(peer: string, name: string, options: OpenOptions = {}): Promise<DuplexStream> {
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
      stream = new Stream(this.mux.host, {
        peer,
        name,
        id,
        side: 1,
        window,
        remoteWindow: credit,
        maxPayload: Math.min(this.mux.maxPayload, known.maxPayload),
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
    this.pending.set(id, pending);
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
    const frame: Frame = { t: 'open', s: id, n: name, w: window, m: this.mux.maxPayload, v: PROTOCOL_VERSION };
    if (stream) frame.c = credit;
    try {
      this.mux.link.send(peer, frame, []);
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
      this.mux.streamsOf(peer).opened.set(id, stream);
      return Promise.resolve(stream);
    }
    return new Promise<DuplexStream>((resolve, reject) => {
      pending.resolve = resolve;
      pending.reject = reject;
    });
  }

  /** Gives up a pending open: its promise rejects, or its optimistic stream fails. */
  #failPending(id: number, error: TransportError): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.#settled(id, pending);
    // If the peer accepts after all, it learns the stream is gone.
    this.mux.trySend(pending.peer, { t: 'abort', s: id, i: 1, e: reasonToWire(error) });
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
    for (const [id, pending] of [...this.pending]) {
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
    if (next !== Number.POSITIVE_INFINITY && this.pending.size > 0) this.#armDeadline(next);
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
    this.pending.delete(id);
    if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort);
    if (this.pending.size === 0) this.#disarmDeadline();
    const known = this.#names.get(pending.peer)?.get(pending.name);
    if (known !== undefined && known.pending > 0) known.pending--;
  }

  /** An optimistic stream is gone before its answer came: the open is no longer pending. */
  finished(stream: Stream): void {
    const pending = this.pending.get(stream.id);
    if (pending !== undefined && pending.stream === stream) this.#settled(stream.id, pending);
  }

  onAccept(peer: string, frame: Extract<Frame, { t: 'accept' }>): void {
    const { s: id, w: remoteWindow, m: remoteMaxPayload } = frame;
    const pending = this.pending.get(id);
    if (pending === undefined || pending.peer !== peer) {
      this.mux.abandon(peer, id);
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
      pending.stream.accepted(remoteWindow, Math.min(this.mux.maxPayload, remoteMaxPayload));
      return;
    }
    const stream = new Stream(this.mux.host, {
      peer,
      name: pending.name,
      id,
      side: 1,
      window: pending.window,
      remoteWindow,
      maxPayload: Math.min(this.mux.maxPayload, remoteMaxPayload),
    });
    this.mux.streamsOf(peer).opened.set(id, stream);
    pending.resolve?.(stream);
  }

  /** The peer refused an open. */
  onRefuse(peer: string, frame: Extract<Frame, { t: 'refuse' }>): void {
    const pending = this.pending.get(frame.s);
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
  }

  /** `peer` is gone: its pending opens fail with `error`. */
  lost(peer: string, error: TransportError): void {
    for (const [id, pending] of [...this.pending]) {
      if (pending.peer !== peer) continue;
      this.#settled(id, pending);
      pending.reject?.(error);
    }
    this.#names.delete(peer);
  }

  /** The multiplexer closes: every pending open fails with `error`. */
  close(error: TransportError): void {
    for (const [id, pending] of [...this.pending]) {
      this.#settled(id, pending);
      pending.reject?.(error);
    }
    this.#names.clear();
  }
}

/**
 * Opens a stream to `peer` on `name` over `mux`. Rejects with TRANSPORT_NO_LISTENER when nobody
 * listens there, TRANSPORT_PEER_LOST when the peer is unknown or goes away, TRANSPORT_OPEN_TIMEOUT
 * when it never answers, TRANSPORT_ABORTED when `signal` fires, TRANSPORT_CLOSED once closed.
 */
export function openOn(mux: OpenerHost, peer: string, name: string, options: OpenOptions = {}): Promise<DuplexStream> {
  if (mux.closed) return Promise.reject(new TransportError('TRANSPORT_CLOSED', 'the transport is closed'));
  return (mux.opener ??= new Opener(mux)).open(peer, name, options);
}
