/**
 * zlib (RFC 1950/1951) for pack entries on the web: the package's own inflate (`inflate.ts`)
 * and fflate's deflate. Node selects `zlib.node.ts` (node:zlib) through the package's `#zlib`
 * import condition.
 *
 * `inflateOne` inflates one zlib stream that starts at `input[0]` and may be followed by other
 * bytes (the next pack entry); it reports how many input bytes the stream used, which
 * general-purpose inflaters (fflate's, the platform's DecompressionStream) do not say, and
 * continues a stream cut by the end of its input piece where it stopped. Deflating needs no
 * such position: the entries of a pack being written and loose objects go through the platform's
 * CompressionStream (`deflateEntry`, `deflateAsync`), so that a worker serving packs carries no
 * deflate of its own; `deflate`, for callers that need the bytes at once, is fflate's.
 *
 * Every call is synchronous (the pack reader inflates entries as it parses), so one inflate
 * context (its code tables) is kept and reset per call. DecompressionStream is no match per
 * entry: it is asynchronous, and it rejects bytes after the end of a stream, so it cannot say
 * where the next entry begins.
 */

import { zlibSync } from 'fflate';
import { PackError } from './errors.js';
import { InflateError, Inflater } from './inflate.js';
import { StreamInflater } from './inflate-stream.js';

/**
 * `need-more` may carry `rest`: the stream inflated so far, to be continued with the input that
 * follows (so that a stream crossing input chunks is inflated once, not again from its start).
 */
export type InflateOutcome =
  | { kind: 'done'; data: Uint8Array; consumed: number }
  | { kind: 'need-more'; rest?: InflateRest };

/** The rest of one zlib stream, fed piece by piece (`inflateOne(..., resumable)` hands it out). */
export interface InflateRest {
  /** Inflates the next piece of input: `done` with the bytes of this piece used, or `need-more` (all used). */
  push(input: Uint8Array, final: boolean): InflateOutcome;
  /** Gives the context back (after `done` or an error this happens by itself); idempotent. */
  close(): void;
}

/** Entries up to this size get their declared size at once (and may be resumed); larger ones output that grows. */
const REUSED_MAX = 1 << 20;
let reused: Inflater | undefined;
/** Contexts given back by finished `InflateRest`s. */
const idle: Inflater[] = [];
/** `InflateRest`s holding a context (not yet done, failed or closed). */
let openRests = 0;

/** How many `InflateRest`s hold a context now (what tests check nothing keeps one). */
export function openInflateRests(): number {
  return openRests;
}

/** The inflate context shared by every call (calls are synchronous, never nested). */
function reusedInflater(): Inflater {
  reused ??= idle.pop() ?? new Inflater();
  return reused;
}

/** The pack error for an inflate error: a corrupt stream, or output past `limit` as `code`. */
function packError(error: unknown, code: string, message: string): unknown {
  if (!(error instanceof InflateError)) return error;
  if (error.kind === 'limit') return new PackError(code, message);
  return new PackError('PACK_CORRUPT_ZLIB', error.message);
}

/**
 * Inflates the zlib stream at the start of `input` into `expectedSize` bytes. A stream cut short
 * by the end of `input` gives `need-more`, with the inflate so far as `rest` when `resumable`
 * (entries up to 1 MiB). The data may be placed in `into` (when it holds `expectedSize + 1`
 * bytes) instead of new memory: then it is a view of `into`.
 */
export function inflateOne(
  input: Uint8Array,
  expectedSize: number,
  final: boolean,
  resumable = false,
  into?: Uint8Array,
): InflateOutcome {
  if (expectedSize <= REUSED_MAX) {
    const out =
      into !== undefined && into.length > expectedSize ? into.subarray(0, expectedSize) : new Uint8Array(expectedSize);
    return inflateStep(input, expectedSize, final, out, 'exact', resumable);
  }
  return inflateWithInflate(input, expectedSize, final);
}

/**
 * One zlib stream through the shared context into `out` (`exact`: the declared size; `grow`: a
 * start, doubled up to the declared size); on `need-more` the context goes to a rest when `resumable`.
 */
function inflateStep(
  input: Uint8Array,
  expectedSize: number,
  final: boolean,
  out: Uint8Array,
  mode: 'exact' | 'grow',
  resumable: boolean,
): InflateOutcome {
  const inflater = reusedInflater();
  inflater.reset(out, expectedSize, mode);
  let r: InflateOutcome;
  try {
    r = finish(inflater, runChecked(inflater, input, expectedSize), expectedSize, final);
  } catch (error) {
    inflater.release();
    throw error;
  }
  if (r.kind === 'need-more' && resumable) {
    // the context and the output so far go to the rest; later calls take another context
    reused = undefined;
    return { kind: 'need-more', rest: new Rest(inflater, expectedSize) };
  }
  if (r.kind === 'done' || !resumable) inflater.release();
  return r;
}

/** The outcome of one `run`: the data once the stream ended at its declared size. */
function finish(inflater: Inflater, ended: boolean, expectedSize: number, final: boolean): InflateOutcome {
  if (!ended) {
    if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
    return { kind: 'need-more' };
  }
  if (inflater.written !== expectedSize) {
    throw new PackError('PACK_SIZE_MISMATCH', `inflated ${inflater.written} bytes, header declared ${expectedSize}`);
  }
  return { kind: 'done', data: inflater.out.subarray(0, expectedSize), consumed: inflater.consumed };
}

/** Runs `inflater` over `input`, its errors as pack errors (output past the declared size: PACK_SIZE_MISMATCH). */
function runChecked(inflater: Inflater, input: Uint8Array, expectedSize: number): boolean {
  try {
    return inflater.run(input);
  } catch (error) {
    throw packError(error, 'PACK_SIZE_MISMATCH', `inflated data exceeds declared ${expectedSize}`);
  }
}

/** A stream continued across input pieces on its own context. */
class Rest implements InflateRest {
  #inflater: Inflater | undefined;
  readonly #size: number;

  constructor(inflater: Inflater, size: number) {
    this.#inflater = inflater;
    this.#size = size;
    openRests++;
  }

  push(input: Uint8Array, final: boolean): InflateOutcome {
    const inflater = this.#inflater;
    if (!inflater) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: stream already finished');
    let r: InflateOutcome;
    try {
      r = finish(inflater, runChecked(inflater, input, this.#size), this.#size, final);
    } catch (error) {
      this.close();
      throw error;
    }
    if (r.kind === 'done') this.close();
    return r;
  }

  close(): void {
    const inflater = this.#inflater;
    if (!inflater) return;
    this.#inflater = undefined;
    openRests--;
    inflater.release();
    if (idle.length < 4) idle.push(inflater);
  }
}

/**
 * One zlib stream into output that grows as it fills (the path for entries over 1 MiB, whose
 * declared size is not allocated up front: a hostile header may declare any size).
 */
export function inflateWithInflate(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  const out = new Uint8Array(Math.min(expectedSize, Math.max(256, input.length * 4)));
  return inflateStep(input, expectedSize, final, out, 'grow', false);
}

/** zlib's defaults (a 32 KiB window, the default strategy) at `level`, through fflate. */
export function deflate(data: Uint8Array, level = 6): Uint8Array {
  checkLevel(level);
  return zlibSync(data, { level: level as 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 });
}

/**
 * Deflates one entry of a pack being written (createPack): through the platform's
 * CompressionStream at zlib's default level, as `deflateAsync`, so that a worker that serves
 * packs carries no deflate of its own (`level` is checked here and honoured on Node, whose
 * `#zlib` deflates in place).
 */
export function deflateEntry(data: Uint8Array, level = 6): Promise<Uint8Array> {
  checkLevel(level);
  return deflateAsync(data, level);
}

function checkLevel(level: number): void {
  if (!Number.isInteger(level) || level < 0 || level > 9) {
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: cannot set up deflate at level ${level}`);
  }
}

/**
 * Deflates one object where the caller can wait (a loose object, a thin pack's appended base):
 * through the platform's CompressionStream (zlib's default level; `level` is for the Node path),
 * so that code writing only a few objects does not carry a deflate of its own into a bundle.
 */
export async function deflateAsync(data: Uint8Array, _level?: number): Promise<Uint8Array> {
  const stream = new CompressionStream('deflate');
  const writer = stream.writable.getWriter();
  void writer.write(data as Uint8Array<ArrayBuffer>).catch(() => {});
  void writer.close().catch(() => {});
  return new Uint8Array(await new Response(stream.readable).arrayBuffer());
}

/** Inflates a whole zlib stream (a loose object), through the shared context, growing the output as needed. */
export function inflateAll(input: Uint8Array, maxSize: number): Uint8Array {
  const inflater = reusedInflater();
  inflater.reset(new Uint8Array(Math.min(maxSize, Math.max(256, input.length * 4))), maxSize, 'grow');
  try {
    if (!inflater.run(input)) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: truncated');
    return inflater.out.subarray(0, inflater.written);
  } catch (error) {
    throw packError(error, 'PACK_LIMIT_OBJECT_SIZE', `inflated data exceeds ${maxSize} bytes`);
  } finally {
    inflater.release();
  }
}

/** CRC-32 tables for slicing by 8: `tables[k * 256 + b]` is the CRC of byte b followed by k zero bytes. */
let tables: Int32Array | undefined;

function crcTables(): Int32Array {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + n] = c;
    }
  }
  return t;
}

/**
 * CRC-32 (the .idx v2 checksum of each entry), eight bytes per step, read as two little-endian
 * words through a DataView (at any offset) rather than byte by byte.
 */
export function crc32(data: Uint8Array, crc = 0): number {
  const t = (tables ??= crcTables());
  let c = ~crc;
  let i = 0;
  const n = data.length;
  const end8 = n - (n & 7);
  if (end8 > 0) {
    const view = new DataView(data.buffer, data.byteOffset, n);
    for (; i < end8; i += 8) {
      const lo = c ^ view.getInt32(i, true);
      const hi = view.getInt32(i + 4, true);
      c =
        t[1792 + (lo & 0xff)]! ^
        t[1536 + ((lo >>> 8) & 0xff)]! ^
        t[1280 + ((lo >>> 16) & 0xff)]! ^
        t[1024 + (lo >>> 24)]! ^
        t[768 + (hi & 0xff)]! ^
        t[512 + ((hi >>> 8) & 0xff)]! ^
        t[256 + ((hi >>> 16) & 0xff)]! ^
        t[hi >>> 24]!;
    }
  }
  for (; i < n; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export function zlibImplementation(): string {
  return "gitport's inflate (reports the input each stream used), fflate deflate";
}

/** The streaming inflater for entries too large to inflate in one call (see zlib.node.ts). */
export async function loadStreamInflater(): Promise<typeof StreamInflater> {
  return StreamInflater;
}
