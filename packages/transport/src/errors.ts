/**
 * The one error class of `@gitport/transport`. Recognise errors by their stable string `code`
 * (or with {@link isTransportError}), never by `instanceof`, which breaks across realms.
 *
 * Codes:
 *   TRANSPORT_ABORTED           the stream was aborted (locally, or by the other side: `cause`
 *                               carries the reason the other side gave)
 *   TRANSPORT_NO_LISTENER       `open` reached the peer, but nobody listens on that name there
 *   TRANSPORT_TOO_MANY_STREAMS  the listener there already has its maximum of open streams
 *   TRANSPORT_WINDOW_CHANGED    an optimistic open wrote within a window the listener no longer
 *                               grants (it was replaced by one with a smaller window): open again
 *   TRANSPORT_OPEN_TIMEOUT      the peer never answered the open request
 *   TRANSPORT_PEER_LOST         the bus lost the peer (worker terminated, port closed, ...)
 *   TRANSPORT_CLOSED            write after `end()`, or our side (the bus) was closed
 *   TRANSPORT_CANCELLED         the other side's reader cancelled: our writes are not wanted
 *   TRANSPORT_PROTOCOL          the other side broke the stream protocol (credit overrun, ...)
 *   TRANSPORT_SEND_FAILED       the bus refused a frame (message too large, clone failure, ...)
 *   TRANSPORT_INVALID_ARGUMENT  a bad argument (non-Uint8Array chunk, bad window, ...)
 *   TRANSPORT_LOCKED            the read side is already consumed through the other interface
 */
export type TransportErrorCode =
  | 'TRANSPORT_ABORTED'
  | 'TRANSPORT_NO_LISTENER'
  | 'TRANSPORT_TOO_MANY_STREAMS'
  | 'TRANSPORT_WINDOW_CHANGED'
  | 'TRANSPORT_OPEN_TIMEOUT'
  | 'TRANSPORT_PEER_LOST'
  | 'TRANSPORT_CLOSED'
  | 'TRANSPORT_CANCELLED'
  | 'TRANSPORT_PROTOCOL'
  | 'TRANSPORT_SEND_FAILED'
  | 'TRANSPORT_INVALID_ARGUMENT'
  | 'TRANSPORT_LOCKED';

const BRAND = Symbol.for('gitport.transport.error');

export class TransportError extends Error {
  override name = 'TransportError';
  readonly [BRAND] = true;
  readonly code: TransportErrorCode;

  constructor(code: TransportErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/** True for anything that looks like a TransportError (by brand and code, not by prototype). */
export function isTransportError(value: unknown, code?: TransportErrorCode): value is TransportError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [BRAND]?: unknown })[BRAND] === true &&
    typeof (value as { code?: unknown }).code === 'string' &&
    (code === undefined || (value as { code: string }).code === code)
  );
}

/** How an abort or cancel reason crosses the wire: plain, cloneable, bounded. */
export interface WireReason {
  name: string;
  message: string;
  code?: string;
}

const MAX_REASON_TEXT = 4096;

export function reasonToWire(reason: unknown): WireReason {
  if (typeof reason === 'object' && reason !== null && 'message' in reason) {
    const r = reason as { name?: unknown; message?: unknown; code?: unknown };
    const wire: WireReason = {
      name: String(r.name ?? 'Error').slice(0, 200),
      message: String(r.message ?? '').slice(0, MAX_REASON_TEXT),
    };
    if (typeof r.code === 'string') wire.code = r.code.slice(0, 200);
    return wire;
  }
  return { name: 'Error', message: reason === undefined ? 'aborted' : String(reason).slice(0, MAX_REASON_TEXT) };
}

/** The reason the other side gave, rebuilt as a plain Error with its `name` and `code`. */
export function reasonFromWire(wire: WireReason): Error {
  const error = new Error(wire.message) as Error & { code?: string };
  error.name = wire.name;
  if (wire.code !== undefined) error.code = wire.code;
  return error;
}
