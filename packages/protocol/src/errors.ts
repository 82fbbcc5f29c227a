/**
 * The one error class of @gitport/protocol. Callers recognise errors by `code` (a stable
 * string), never by `instanceof`, which breaks across realms and duplicate package copies.
 *
 * Codes:
 * - `PROTOCOL_UNEXPECTED`       a packet that the grammar does not allow at this point
 * - `PROTOCOL_BAD_LINE`         a malformed line (bad object id, unknown command, ...)
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
