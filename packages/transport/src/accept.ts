/**
 * The accepting side of a multiplexer: listeners by name, answers to the opens peers send, and
 * the deferred accepts of optimistic opens. A multiplexer gets one with its first `listenOn`, so
 * a bundle that only opens streams leaves this file out.
 */
import { TransportError } from './errors.js';
import { type Frame, MAX_COUNT } from './frames.js';
import { type DuplexStream, Stream, type StreamHost } from './stream.js';
import { checkWindow } from './window.js';

/** Streams a listener accepts at once unless told otherwise. */
export const DEFAULT_MAX_STREAMS = 256;

export interface ListenOptions {
  /** Receive window in bytes of each accepted stream (default 1 MiB). */
  window?: number;
  /**
   * How many streams of this listener may be open at once (default 256); more are refused
   * with TRANSPORT_TOO_MANY_STREAMS. With the window, it bounds what peers can make us queue.
   */
  maxStreams?: number;
}

interface Listener {
  onStream: (stream: DuplexStream) => void;
  window: number;
  maxStreams: number;
  open: number;
}

/** What the accepting side uses of its multiplexer. */
export interface AcceptorHost {
  readonly host: StreamHost;
  readonly maxPayload: number;
  acceptor: Acceptor | undefined;
  streamsOf(peer: string): { accepted: Map<number, Stream> };
  trySend(peer: string, frame: Frame): boolean;
  refuse(peer: string, id: number, code: string, message: string): void;
  refuseUnheard(peer: string, frame: Extract<Frame, { t: 'open' }>): void;
  scheduleTick(): void;
}

export class Acceptor {
  readonly listeners = new Map<string, Listener>();
  /** Accepts of optimistic opens not sent yet, per peer (see #deferAccept); sent on the tick. */
  readonly accepts = new Map<string, { frame: Frame; stream: Stream }[]>();

  constructor(private readonly mux: AcceptorHost) {}

  /** An open frame of a supported version: accepted, or refused. */
  onOpen(peer: string, frame: Extract<Frame, { t: 'open' }>): void {
    const mux = this.mux;
    const { s: id, n: name, w: remoteWindow } = frame;
    const listener = this.listeners.get(name);
    if (listener === undefined) {
      mux.refuseUnheard(peer, frame);
      return;
    }
    if (listener.open >= listener.maxStreams) {
      mux.refuse(peer, id, 'TRANSPORT_TOO_MANY_STREAMS', `${name} already has ${listener.open} open streams`);
      return;
    }
    const streams = mux.streamsOf(peer);
    if (streams.accepted.has(id)) {
      mux.refuse(peer, id, 'TRANSPORT_PROTOCOL', `stream ${id} is already open`);
      return;
    }
    // An optimistic opener writes within the credit it announced, which it learnt from an accept
    // on this name: more than the listener's window means that listener was replaced by one with
    // a smaller window. The window is never widened for it: the opener opens again.
    if (frame.c !== undefined && frame.c > listener.window) {
      mux.refuse(
        peer,
        id,
        'TRANSPORT_WINDOW_CHANGED',
        `an open announcing ${frame.c} bytes of credit, above the window of ${listener.window} of ${name}`,
      );
      return;
    }
    listener.open++;
    const window = listener.window;
    const maxPayload = mux.maxPayload;
    const stream = new Stream(mux.host, {
      peer,
      name,
      id,
      side: 0,
      window,
      remoteWindow,
      maxPayload: Math.min(maxPayload, frame.m),
      slot: listener,
    });
    streams.accepted.set(id, stream);
    const accept: Frame = {
      t: 'accept',
      s: id,
      w: window,
      m: maxPayload,
      r: Math.min(listener.maxStreams - listener.open, MAX_COUNT),
    };
    if (frame.c !== undefined) this.#deferAccept(peer, accept, stream);
    else if (!mux.trySend(peer, accept)) {
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

  /**
   * An optimistic opener writes already: its accept need not hurry. It goes out ahead of the
   * next frame to that peer (so it still comes first), else on the tick: the answer a handler
   * writes at once and the accept share one message.
   */
  #deferAccept(peer: string, frame: Frame, stream: Stream): void {
    let queue = this.accepts.get(peer);
    if (queue === undefined) {
      queue = [];
      this.accepts.set(peer, queue);
    }
    queue.push({ frame, stream });
    this.mux.scheduleTick();
  }

  /** Sends the deferred accepts to `peer`. */
  sendAccepts(peer: string): void {
    const queue = this.accepts.get(peer);
    if (queue === undefined) return;
    this.accepts.delete(peer);
    for (const { frame, stream } of queue) {
      // Finished unanswered, it was the opener that ended it (an abort, or an end and a cancel
      // from there): the opener settled its open then, and needs no answer.
      if (stream.done) continue;
      if (!this.mux.trySend(peer, frame)) {
        stream.fail(new TransportError('TRANSPORT_PEER_LOST', `cannot answer ${peer}`), true);
      }
    }
  }
}

/**
 * Accepts the streams peers open on `name` on `mux`; returns the function that stops listening
 * (streams already open stay open). Throws TRANSPORT_INVALID_ARGUMENT for an empty name, a name
 * somebody already listens on, or a bad window or maxStreams.
 */
export function listenOn(
  mux: AcceptorHost,
  name: string,
  onStream: (stream: DuplexStream) => void,
  options: ListenOptions = {},
): () => void {
  if (typeof name !== 'string' || name.length === 0) {
    throw new TransportError('TRANSPORT_INVALID_ARGUMENT', 'listen() needs a non-empty name');
  }
  const acceptor = (mux.acceptor ??= new Acceptor(mux));
  const listeners = acceptor.listeners;
  if (listeners.has(name)) {
    throw new TransportError('TRANSPORT_INVALID_ARGUMENT', `somebody already listens on ${name}`);
  }
  const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
  if (!Number.isInteger(maxStreams) || maxStreams < 1) {
    throw new TransportError('TRANSPORT_INVALID_ARGUMENT', 'maxStreams must be a positive integer');
  }
  const entry: Listener = { onStream, window: checkWindow(options.window), maxStreams, open: 0 };
  listeners.set(name, entry);
  return () => {
    if (listeners.get(name) === entry) listeners.delete(name);
  };
}
