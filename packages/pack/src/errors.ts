/**
 * The one error class of @gitport/pack. Recognise errors by their stable `code`, never by
 * message or `instanceof` (which breaks across realms and duplicate package copies).
 *
 * Codes: PACK_BAD_SIGNATURE, PACK_BAD_VERSION, PACK_TRUNCATED, PACK_BAD_CHECKSUM, PACK_TRAILING_DATA,
 * PACK_BAD_TYPE, PACK_BAD_HEADER, PACK_CORRUPT_ZLIB, PACK_SIZE_MISMATCH, PACK_BAD_DELTA,
 * PACK_BAD_BASE_OFFSET, PACK_MISSING_BASE, PACK_DUPLICATE_OBJECT, PACK_DELTA_CYCLE, PACK_LIMIT_OBJECTS, PACK_LIMIT_OBJECT_SIZE,
 * PACK_LIMIT_DELTA_SIZE, PACK_LIMIT_DEPTH, PACK_LIMIT_INFLATED, PACK_ABORTED, PACK_BAD_INPUT,
 * IDX_BAD_SIGNATURE, IDX_BAD_VERSION, IDX_TRUNCATED, IDX_BAD_CHECKSUM, IDX_CORRUPT, IDX_NO_CRC,
 * OBJECT_NOT_FOUND, OBJECT_BAD_ID, OBJECT_CORRUPT, OBJECT_BAD_TYPE, OBJECT_HASH_MISMATCH,
 * PARSE_COMMIT, PARSE_TREE, PARSE_TAG, STORE_IO, STORE_CLOSED, FILTER_INVALID, BITMAP_CORRUPT,
 * BITMAP_MISMATCH (a `.bitmap` that does not parse, or is of another pack: ignored by stores).
 */
export class PackError extends Error {
  readonly code: string;
  readonly offset?: number;
  override readonly cause?: unknown;
  constructor(code: string, message: string, options: { offset?: number; cause?: unknown } = {}) {
    super(options.offset === undefined ? message : `${message} (at pack offset ${options.offset})`);
    this.name = 'PackError';
    this.code = code;
    if (options.offset !== undefined) this.offset = options.offset;
    if (options.cause !== undefined) this.cause = options.cause;
  }
}

/** Whether `error` is a gitport pack error (by brand, not `instanceof`). */
export function isPackError(error: unknown): error is PackError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'PackError' &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new PackError('PACK_ABORTED', 'aborted', { cause: signal.reason });
}
