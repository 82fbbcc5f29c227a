/**
 * @gitport/transport: duplex byte streams between two bus peers.
 *
 *   const stop = listen(bus, 'git-upload-pack', (stream) => serve(stream));
 *   const stream = await open(bus, 'worker-1', 'git-upload-pack');
 *   await stream.write(request); await stream.end();
 *   for await (const chunk of stream) ...
 *
 * Credit-based flow control in bytes (a receive window per stream, default 1 MiB), zero-copy
 * transfer of chunks the writer gives up, coalescing of small writes, half-close, abort and
 * peer loss as typed errors, many streams on one bus connection. No Node built-ins.
 */
import { DEFAULT_MAX_STREAMS, type ListenOptions, listenOn } from './accept.js';
import { FRAME_EVENT } from './frames.js';
import type { FrameLink } from './link.js';
import { Multiplexer, type TransportStats } from './multiplexer.js';
import { DEFAULT_OPEN_TIMEOUT, type OpenOptions, openOn } from './open.js';
import type { DuplexStream } from './stream.js';
import { DEFAULT_WINDOW } from './window.js';

export { isTransportError, TransportError, type TransportErrorCode } from './errors.js';
export type { DuplexStream, StreamStats } from './stream.js';
export {
  DEFAULT_MAX_STREAMS,
  DEFAULT_OPEN_TIMEOUT,
  DEFAULT_WINDOW,
  type ListenOptions,
  type OpenOptions,
  type TransportStats,
};

/** The part of a `@gitport/bus` Bus the transport uses. */
export interface TransportBus {
  readonly maxMessageSize: number;
  send(peer: string, event: string, payload: unknown, options?: { transfer?: Transferable[] }): void;
  on(event: string, listener: (payload: unknown, meta: { from: string }) => void): () => void;
  onPeer(kind: 'lost', listener: (peer: string, reason?: unknown) => void): () => void;
  /** Optional: posts what the bus gathered in this task now (DuplexStream.flush uses it). */
  flush?(): void;
}

const multiplexers = new WeakMap<TransportBus, Multiplexer>();

function busLink(bus: TransportBus): FrameLink {
  return {
    get maxMessageSize() {
      return bus.maxMessageSize;
    },
    send(peer, frame, transfer) {
      bus.send(peer, FRAME_EVENT, frame, transfer.length > 0 ? { transfer } : undefined);
    },
    flush() {
      bus.flush?.();
    },
    subscribe(onFrame, onLost) {
      const offFrame = bus.on(FRAME_EVENT, (payload, meta) => onFrame(meta.from, payload));
      const offLost = bus.onPeer('lost', (peer, reason) => onLost(peer, reason));
      return () => {
        offFrame();
        offLost();
      };
    },
  };
}

function multiplexerOf(bus: TransportBus): Multiplexer {
  let mux = multiplexers.get(bus);
  if (mux === undefined) {
    mux = new Multiplexer(busLink(bus));
    multiplexers.set(bus, mux);
  }
  return mux;
}

/**
 * Accepts streams opened on `name` by any peer of the bus; returns the function that stops
 * listening (streams already open stay open). Throws TRANSPORT_INVALID_ARGUMENT when somebody
 * already listens on that name.
 */
export function listen(
  bus: TransportBus,
  name: string,
  onStream: (stream: DuplexStream) => void,
  options?: ListenOptions,
): () => void {
  return listenOn(multiplexerOf(bus), name, onStream, options);
}

/**
 * Opens a stream to `peer` on `name`. Rejects with TRANSPORT_NO_LISTENER when nobody listens
 * there, TRANSPORT_PEER_LOST when the peer is unknown or goes away, TRANSPORT_OPEN_TIMEOUT when
 * it never answers, TRANSPORT_ABORTED when `signal` fires.
 */
export function open(bus: TransportBus, peer: string, name: string, options?: OpenOptions): Promise<DuplexStream> {
  return openOn(multiplexerOf(bus), peer, name, options);
}

/** Byte counts over every stream of the bus (for tests and monitoring). */
export function transportStats(bus: TransportBus): TransportStats {
  return multiplexerOf(bus).stats;
}
