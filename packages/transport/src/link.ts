/**
 * What the transport needs from a message channel: send a frame with a transfer list to a
 * peer, receive frames, learn that a peer is gone. The bus gives this (see `bus-link.ts`);
 * `portLink` gives it over one bare MessagePort-like object, which the unit tests use.
 */
import { dataBytes, type Frame } from './frames.js';

export interface FrameLink {
  /** The largest message the channel carries; data frames are split below it. */
  readonly maxMessageSize: number;
  /** Sends one frame; throws when the channel refuses it. */
  send(peer: string, frame: Frame, transfer: Transferable[]): void;
  /** Optional: posts at once what a channel that gathers its messages holds. */
  flush?(): void;
  /** Delivers incoming frames (unchecked) and peer losses; returns the unsubscribe function. */
  subscribe(
    onFrame: (peer: string, frame: unknown) => void,
    onLost: (peer: string, reason?: unknown) => void,
  ): () => void;
}

/** The structural part of a MessagePort the port link uses. */
export interface PortLike {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  removeEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  start?(): void;
  close?(): void;
}

export interface PortLink extends FrameLink {
  /** Declares the peer lost (what a bus does when its liveness check fails). */
  lose(reason?: unknown): void;
}

/**
 * A link over one port whose other end is the peer named `peer`. A `close` event on the port
 * (Node's MessagePort fires one when either end closes or its thread dies) loses the peer.
 */
export function portLink(port: PortLike, options: { peer: string; maxMessageSize?: number }): PortLink {
  const lostListeners = new Set<(peer: string, reason?: unknown) => void>();
  let lost = false;
  const lose = (reason?: unknown) => {
    if (lost) return;
    lost = true;
    for (const l of [...lostListeners]) l(options.peer, reason);
  };
  const target = port as unknown as {
    addEventListener(type: string, l: () => void): void;
    removeEventListener(type: string, l: () => void): void;
  };
  const maxMessageSize = options.maxMessageSize ?? 64 * 1024 * 1024;
  return {
    maxMessageSize,
    send(peer, frame, transfer) {
      if (peer !== options.peer || lost) throw new Error(`no peer ${peer}`);
      // Like the bus: a message above the limit is refused (the frame around the bytes is small).
      if (frame.t === 'data') {
        const bytes = dataBytes(frame.b);
        if (bytes + 64 > maxMessageSize) {
          throw new Error(`a message of ${bytes} bytes is above the limit of ${maxMessageSize}`);
        }
      }
      port.postMessage(frame, transfer);
    },
    subscribe(onFrame, onLost) {
      const onMessage = (event: { data: unknown }) => onFrame(options.peer, event.data);
      const onClose = () => lose(new Error('port closed'));
      port.addEventListener('message', onMessage);
      target.addEventListener('close', onClose);
      port.start?.();
      lostListeners.add(onLost);
      return () => {
        port.removeEventListener('message', onMessage);
        target.removeEventListener('close', onClose);
        lostListeners.delete(onLost);
      };
    },
    lose,
  };
}
