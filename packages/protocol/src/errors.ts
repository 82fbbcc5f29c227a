/**
 * The one error class of @gitport/protocol. Callers recognise errors by `code` (a stable
 * string), never by `instanceof`, which breaks across realms and duplicate package copies.
 *
 * Codes:
 * - `PROTOCOL_UNEXPECTED`       a packet that the grammar does not allow at this point
 * - `PROTOCOL_BAD_LINE`         a malformed line (bad object id, unknown command, ...)
 * - `PROTOCOL_BAD_FILTER`       a fetch's filter-spec that git's parser refuses
 * - `PROTOCOL_UNEXPECTED_EOF`   the peer hung up in the middle of an exchange
 * - `PROTOCOL_NOT_OUR_REF`      a want that is neither advertised nor reachable from a ref
 * - `PROTOCOL_REMOTE_ERROR`     the peer sent `ERR <msg>` or side-band 3
 * - `PROTOCOL_LIMIT`            a configured bound was exceeded
 * - `PROTOCOL_UNSUPPORTED`      a capability or version this side cannot speak
 * - `PROTOCOL_HTTP`             an HTTP round failed (status, content type)
 * - `PROTOCOL_PUSH_REJECTED`    a push where the remote refused one or more refs
 * - `PROTOCOL_ABORTED`          cancelled through an AbortSignal
 * - `REF_INVALID_NAME`          a ref name that git's check-ref-format refuses
 */
export class ProtocolError extends Error {
  readonly code: string;
  override readonly cause?: unknown;
  readonly data?: Record<string, unknown>;
  constructor(code: string, message: string, options: { cause?: unknown; data?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    if (options.cause !== undefined) this.cause = options.cause;
    if (options.data !== undefined) this.data = options.data;
  }
}

/** True when `error` carries a string `code` equal to `code`. */
export function hasCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new ProtocolError('PROTOCOL_ABORTED', 'operation aborted', { cause: signal.reason });
  }
}

/**
 * Codes whose messages are written for the peer: they describe the exchange or data the peer
 * sent or may fetch (a bad line, a bad pack, a missing object, a refused name), never local
 * state. Other errors may carry local detail (paths, stacks, a dependency's text).
 */
const PEER_SAFE_CODE =
  /^(?:(?:PROTOCOL|PKTLINE|PACK|IDX|PARSE)_[A-Z0-9_]+|OBJECT_(?:NOT_FOUND|BAD_ID|BAD_TYPE|HASH_MISMATCH)|REF_INVALID_NAME|REPO_NOT_FOUND|PUSH_NOT_ACCEPTED|HTTP_BAD_REQUEST)$/;
/** Stable error codes, which may be named to a peer. */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * What a server may tell a peer about `error`, on one line: the message of an error whose code
 * says it is about the exchange (see PEER_SAFE_CODE); `internal error (<code>)` for any other
 * error with a stable code; `internal error` for the rest (a bug, a dependency's exception). The
 * detail stays local: report `error` itself through the host's own channel.
 */
export function peerErrorMessage(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !ERROR_CODE.test(code)) return 'internal error';
  if (!PEER_SAFE_CODE.test(code)) return `internal error (${code})`;
  const message = (error as { message?: unknown }).message;
  if (typeof message !== 'string' || message === '') return code;
  // it travels in an ERR packet or a report-status line
  return oneLine(message, 1000);
}

/** `text` as one bounded line for the wire (an ERR packet, a report-status line). */
export function oneLine(text: string, max: number): string {
  return text.replace(/[\r\n\0]+/g, ' ').slice(0, max);
}
