/// <reference path="./pako-lowlevel.d.ts" />
/**
 * zlib (RFC 1950/1951) for pack entries on the web: pako's low-level inflate (zlib's inflate.c
 * ported) and fflate's deflate. Node selects `zlib.node.ts` (node:zlib) through the package's
 * `#zlib` import condition.
 *
 * `inflateOne` inflates one zlib stream that starts at `input[0]` and may be followed by other
 * bytes (the next pack entry); it reports how many input bytes the stream used. pako's
 * low-level stream says so exactly (`avail_in` left over); fflate's inflate is smaller but its
 * public API does not tell where a stream ended, and finding the Adler-32 trailer by search
 * needs a second inflate to rule out an earlier match, so inflating stays on pako. Deflating
 * needs no such position, and fflate's deflate is a fraction of pako's in a bundle, so it
 * deflates. Only pako's low-level inflate modules are imported: its `Inflate` class and its
 * deflate stay out of the bundle.
 *
 * Every call is synchronous (the pack reader inflates entries as it parses), so one inflate
 * context is set up once and reset per call. DecompressionStream is no match per entry: it is
 * asynchronous, and it rejects bytes after the end of a stream, so it cannot say where the next
 * entry begins.
 */

import { zlibSync } from 'fflate';
import pakoInflate from 'pako/lib/zlib/inflate.js';
import ZStream from 'pako/lib/zlib/zstream.js';
import { PackError } from './errors.js';
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
let reused: ZStream | undefined;

/** Points a reset pako stream at `input` and `output`, both from their start. */
function bindStream(strm: ZStream, input: Uint8Array, output: Uint8Array): void {
  strm.input = input;
  strm.next_in = 0;
  strm.avail_in = input.length;
  strm.output = output;
  strm.next_out = 0;
  strm.avail_out = output.length;
  strm.msg = '';
}

/** Contexts given back by finished `InflateRest`s. */
const idle: ZStream[] = [];
/** `InflateRest`s holding a context (not yet done, failed or closed). */
let openRests = 0;

/** How many `InflateRest`s hold a context now (what tests check nothing keeps one). */
export function openInflateRests(): number {
  return openRests;
}

/** The inflate context shared by every call (calls are synchronous, never nested). */
function reusedInflater(): ZStream {
  if (!reused) reused = idle.pop();
  if (!reused) {
    const strm = new ZStream();
    if (pakoInflate.inflateInit(strm) !== 0) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: cannot set up inflate');
    headMode ??= tablesKept(strm) ? (strm as unknown as { state: InflateStateFields }).state.mode : -1;
    reused = strm;
  }
  return reused;
}

/** The fields of pako's inflate state that a reset sets (zlib's `inflateReset`). */
interface InflateStateFields {
  mode: number;
  wrap: number;
  total: number;
  last: number;
  havedict: number;
  flags: number;
  dmax: number;
  head: unknown;
  hold: number;
  bits: number;
  lencode: unknown;
  distcode: unknown;
  lendyn: unknown;
  distdyn: unknown;
  sane: number;
  back: number;
  wsize: number;
  whave: number;
  wnext: number;
}

/** The mode of a freshly reset inflate state (waiting for the zlib header); -1 if the state is not as expected. */
let headMode: number | undefined;

/** Whether the state holds the code tables a reset may keep, as zlib's own state does. */
function tablesKept(strm: ZStream): boolean {
  const state = (strm as unknown as { state?: Partial<InflateStateFields> }).state;
  return state?.lendyn instanceof Int32Array && state.distdyn instanceof Int32Array && typeof state.mode === 'number';
}

/**
 * zlib's `inflateReset` keeping the code tables, as zlib does: pako's reset allocates two new
 * tables per call, which dominates for small entries. Falls back to pako's reset should its
 * state not look as expected.
 */
function resetInflate(strm: ZStream): void {
  if (headMode === undefined || headMode < 0 || !tablesKept(strm)) {
    pakoInflate.inflateReset(strm);
    return;
  }
  const s = (strm as unknown as { state: InflateStateFields }).state;
  const z = strm as unknown as { total_in: number; total_out: number; adler: number };
  z.total_in = z.total_out = s.total = 0;
  strm.msg = '';
  if (s.wrap) z.adler = s.wrap & 1;
  s.wsize = 0;
  s.whave = 0;
  s.wnext = 0;
  s.mode = headMode;
  s.last = 0;
  s.havedict = 0;
  s.flags = -1;
  s.dmax = 32768;
  s.head = null;
  s.hold = 0;
  s.bits = 0;
  s.lencode = s.lendyn;
  s.distcode = s.distdyn;
  s.sane = 1;
  s.back = -1;
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
  if (expectedSize <= REUSED_MAX) return inflateReused(input, expectedSize, final, resumable, into);
  return inflateWithInflate(input, expectedSize, final);
}

/**
 * One zlib stream through a context reset per entry, inflating straight into a buffer one byte
 * longer than declared (so that too much data shows).
 */
function inflateReused(
  input: Uint8Array,
  expectedSize: number,
  final: boolean,
  resumable: boolean,
  into: Uint8Array | undefined,
): InflateOutcome {
  const strm = reusedInflater();
  resetInflate(strm);
  const out =
    into !== undefined && into.length > expectedSize
      ? into.subarray(0, expectedSize + 1)
      : new Uint8Array(expectedSize + 1);
  bindStream(strm, input, out);
  const r = inflateStep(strm, input, expectedSize, final);
  if (r.kind === 'need-more' && resumable) {
    // the context and the output so far go to the rest; later calls take another context
    reused = undefined;
    strm.output = out;
    return { kind: 'need-more', rest: new PakoRest(strm, expectedSize) };
  }
  return r;
}

/** One inflate call over `input` (bound to `strm`), output going on where it stands. */
function inflateStep(strm: ZStream, input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  const out = strm.output as Uint8Array;
  let ret: number;
  try {
    ret = pakoInflate.inflate(strm, 0);
  } finally {
    // do not keep the caller's buffers alive
    strm.input = null;
    strm.output = null;
  }
  const produced = strm.next_out;
  if (produced > expectedSize) {
    throw new PackError('PACK_SIZE_MISMATCH', `inflated data exceeds declared ${expectedSize}`);
  }
  if (ret === 1) {
    if (produced !== expectedSize) {
      throw new PackError('PACK_SIZE_MISMATCH', `inflated ${produced} bytes, header declared ${expectedSize}`);
    }
    return { kind: 'done', data: out.subarray(0, expectedSize), consumed: input.length - strm.avail_in };
  }
  if (ret !== 0 && ret !== -5) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${strm.msg || ret}`);
  if (strm.avail_in > 0) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: stream stopped early');
  if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
  return { kind: 'need-more' };
}

/** A stream continued across input pieces on its own pako context. */
class PakoRest implements InflateRest {
  #strm: ZStream | undefined;
  readonly #out: Uint8Array;
  readonly #size: number;

  constructor(strm: ZStream, size: number) {
    this.#strm = strm;
    this.#out = strm.output as Uint8Array;
    strm.output = null;
    this.#size = size;
    openRests++;
  }

  push(input: Uint8Array, final: boolean): InflateOutcome {
    const strm = this.#strm;
    if (!strm) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: stream already finished');
    strm.input = input;
    strm.next_in = 0;
    strm.avail_in = input.length;
    strm.output = this.#out;
    strm.avail_out = this.#out.length - strm.next_out;
    let r: InflateOutcome;
    try {
      r = inflateStep(strm, input, this.#size, final);
    } catch (error) {
      this.close();
      throw error;
    }
    if (r.kind === 'done') this.close();
    return r;
  }

  close(): void {
    const strm = this.#strm;
    if (!strm) return;
    this.#strm = undefined;
    openRests--;
    if (idle.length < 4) idle.push(strm);
  }
}

/**
 * One zlib stream into output that grows as it fills (the path for entries over 1 MiB, whose
 * declared size is not allocated up front: a hostile header may declare any size).
 */
export function inflateWithInflate(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  const strm = inflateGrowing(
    input,
    expectedSize,
    'PACK_SIZE_MISMATCH',
    `inflated data exceeds declared ${expectedSize}`,
  );
  const produced = strm.next_out;
  const out = strm.output as Uint8Array;
  strm.output = null;
  if (!strm.ended) {
    if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
    return { kind: 'need-more' };
  }
  if (produced !== expectedSize) {
    throw new PackError('PACK_SIZE_MISMATCH', `inflated ${produced} bytes, header declared ${expectedSize}`);
  }
  return { kind: 'done', data: out.subarray(0, produced), consumed: input.length - strm.avail_in };
}

/** A pako stream after `inflateGrowing`: `ended` when the zlib stream ended, its output left bound. */
interface GrownStream extends ZStream {
  ended?: boolean;
}

/**
 * Inflates `input` through the shared context, output from a modest size doubling up to
 * `maxSize + 1` bytes; more than `maxSize` throws `code`. Returns with the output still bound
 * (the caller takes it) and `ended` set when the stream ended within `input`.
 */
function inflateGrowing(
  input: Uint8Array,
  maxSize: number,
  code: 'PACK_SIZE_MISMATCH' | 'PACK_LIMIT_OBJECT_SIZE',
  message: string,
): GrownStream {
  const strm = reusedInflater() as GrownStream;
  resetInflate(strm);
  let out = new Uint8Array(Math.min(maxSize + 1, Math.max(256, input.length * 4)));
  bindStream(strm, input, out);
  strm.ended = false;
  try {
    for (;;) {
      const ret = pakoInflate.inflate(strm, 0);
      if (strm.next_out > maxSize) throw new PackError(code, message);
      if (ret === 1) {
        strm.ended = true;
        break;
      }
      if (ret !== 0 && ret !== -5) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${strm.msg || ret}`);
      // input used up with room left in the output: the stream goes on past `input`
      if (strm.avail_out > 0) break;
      const grown = new Uint8Array(Math.min(maxSize + 1, out.length * 2));
      grown.set(out);
      out = grown;
      strm.output = out;
      strm.avail_out = out.length - strm.next_out;
    }
  } catch (error) {
    strm.output = null;
    throw error;
  } finally {
    strm.input = null;
  }
  return strm;
}

/** zlib's defaults (a 32 KiB window, the default strategy) at `level`, through fflate. */
export function deflate(data: Uint8Array, level = 6): Uint8Array {
  if (!Number.isInteger(level) || level < 0 || level > 9) {
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: cannot set up deflate at level ${level}`);
  }
  return zlibSync(data, { level: level as 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 });
}

/** Inflates a whole zlib stream (a loose object), through the shared context, growing the output as needed. */
export function inflateAll(input: Uint8Array, maxSize: number): Uint8Array {
  const strm = inflateGrowing(input, maxSize, 'PACK_LIMIT_OBJECT_SIZE', `inflated data exceeds ${maxSize} bytes`);
  const out = strm.output as Uint8Array;
  strm.output = null;
  if (!strm.ended) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${strm.msg || 'truncated'}`);
  return out.subarray(0, strm.next_out);
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
  reusedInflater();
  const reset = headMode !== undefined && headMode >= 0 ? 'code tables kept across resets' : "pako's reset";
  return `pako low-level inflate (${reset}), fflate deflate`;
}

/** The streaming inflater for entries too large to inflate in one call (see zlib.node.ts). */
export async function loadStreamInflater(): Promise<typeof StreamInflater> {
  return StreamInflater;
}
