/**
 * The one error base of @gitport/pktline. Recognise errors by `code` (never by `instanceof`,
 * which breaks across realms and duplicate copies of the package):
 *
 *   PKTLINE_TOO_LONG            encode: payload over 65516 bytes; side-band frame size out of range
 *   PKTLINE_EMPTY               encode: an empty data packet (`0004`) is never written
 *   PKTLINE_BAD_HEX             decode: the 4-byte length is not hexadecimal
 *   PKTLINE_BAD_LENGTH          decode: length 0003, or beyond what git accepts (65523)
 *   PKTLINE_TRUNCATED           decode: the input ended inside a packet
 *   PKTLINE_REMOTE_ERROR        decode: an `ERR <msg>` packet, or side-band band 3
 *   PKTLINE_SIDEBAND_BAD_BAND   demux: a frame with no band byte or a band other than 1, 2, 3
 *   PKTLINE_SIDEBAND_UNEXPECTED demux: a delim or response-end packet inside side-band data
 *   PKTLINE_HANDED_OFF          read() after rest() took over the raw bytes
 *   PKTLINE_CONCURRENT_READ     read() while another read() of the same reader is pending
 *   PKTLINE_ABORTED             the AbortSignal fired (`cause` is its reason)
 */
export type PktLineErrorCode =
  | 'PKTLINE_TOO_LONG'
  | 'PKTLINE_EMPTY'
  | 'PKTLINE_BAD_HEX'
  | 'PKTLINE_BAD_LENGTH'
  | 'PKTLINE_TRUNCATED'
  | 'PKTLINE_REMOTE_ERROR'
  | 'PKTLINE_SIDEBAND_BAD_BAND'
  | 'PKTLINE_SIDEBAND_UNEXPECTED'
  | 'PKTLINE_HANDED_OFF'
  | 'PKTLINE_CONCURRENT_READ'
  | 'PKTLINE_ABORTED';

export class PktLineError extends Error {
  readonly code: PktLineErrorCode;
  /** Byte offset in the decoded stream where the offending packet starts (decode errors). */
  readonly offset?: number;
  constructor(code: PktLineErrorCode, message: string, options: { offset?: number; cause?: unknown } = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'PktLineError';
    this.code = code;
    if (options.offset !== undefined) this.offset = options.offset;
  }
}

/** The other side reported a fatal error: an `ERR <msg>` packet or a side-band band-3 frame. */
export class PktLineRemoteError extends PktLineError {
  /** The remote's message, without the `ERR ` prefix and trailing LF. */
  readonly remoteMessage: string;
  /** Where it came from. */
  readonly via: 'err-packet' | 'sideband';
  constructor(remoteMessage: string, via: 'err-packet' | 'sideband', offset?: number) {
    super('PKTLINE_REMOTE_ERROR', `remote error: ${remoteMessage}`, offset === undefined ? {} : { offset });
    this.name = 'PktLineRemoteError';
    this.remoteMessage = remoteMessage;
    this.via = via;
  }
}

/** True for an error thrown by this package (by `code`, across realms and copies). */
export function isPktLineError(value: unknown, code?: PktLineErrorCode): value is PktLineError {
  if (typeof value !== 'object' || value === null) return false;
  const c = (value as { code?: unknown }).code;
  return typeof c === 'string' && c.startsWith('PKTLINE_') && (code === undefined || c === code);
}
