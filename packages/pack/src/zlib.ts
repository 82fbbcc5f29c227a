/// <reference path="./pako-lowlevel.d.ts" />
/**
 * zlib (RFC 1950/1951) for pack entries: the web default over pako. Node selects
 * `zlib.node.ts` (node:zlib) through the package's `#zlib` import condition.
 *
 * `inflateOne` inflates one zlib stream that starts at `input[0]` and may be followed by other
 * bytes (the next pack entry); it reports how many input bytes the stream used.
 */
import { Inflate, deflate as pakoDeflate } from 'pako';
import pakoInflate from 'pako/lib/zlib/inflate.js';
import ZStream from 'pako/lib/zlib/zstream.js';
import { PackError } from './errors.js';

/** The parts of pako's Inflate its typings omit. */
export interface InflateState {
  ended: boolean;
  strm: { avail_in: number };
}

export type InflateOutcome = { kind: 'done'; data: Uint8Array; consumed: number } | { kind: 'need-more' };

/** Entries up to this size go through one reused low-level context (2.2x faster than an Inflate per entry). */
const REUSED_MAX = 1 << 20;
let reused: ZStream | undefined;

export function inflateOne(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  if (expectedSize <= REUSED_MAX) {
    const r = inflateReused(input, expectedSize, final);
    if (r) return r;
  }
  return inflateWithInflate(input, expectedSize, final);
}

/**
 * One zlib stream through a context reset per entry, inflating straight into a buffer one byte
 * longer than declared (so that too much data shows). Undefined only if pako cannot set up.
 */
function inflateReused(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome | undefined {
  let strm = reused;
  if (!strm) {
    strm = new ZStream();
    if (pakoInflate.inflateInit(strm) !== 0) return undefined;
    reused = strm;
  }
  pakoInflate.inflateReset(strm);
  const out = new Uint8Array(expectedSize + 1);
  strm.input = input;
  strm.next_in = 0;
  strm.avail_in = input.length;
  strm.output = out;
  strm.next_out = 0;
  strm.avail_out = out.length;
  strm.msg = '';
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

/** One zlib stream through a new pako `Inflate` (the path for large entries; benchmarks compare it). */
export function inflateWithInflate(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  const inflator = new Inflate({ chunkSize: Math.max(1024, Math.min(expectedSize + 1, 1 << 20)) });
  const chunks: Uint8Array[] = [];
  let total = 0;
  inflator.onData = (chunk: Uint8Array) => {
    total += chunk.length;
    if (total > expectedSize)
      throw new PackError('PACK_SIZE_MISMATCH', `inflated data exceeds declared ${expectedSize}`);
    chunks.push(chunk);
  };
  inflator.push(input, false);
  if (inflator.err) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${inflator.msg || inflator.err}`);
  if (!(inflator as unknown as InflateState).ended) {
    if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
    return { kind: 'need-more' };
  }
  const consumed = input.length - (inflator as unknown as InflateState).strm.avail_in;
  if (total !== expectedSize) {
    throw new PackError('PACK_SIZE_MISMATCH', `inflated ${total} bytes, header declared ${expectedSize}`);
  }
  return { kind: 'done', data: concat(chunks, total), consumed };
}

export function deflate(data: Uint8Array, level = 6): Uint8Array {
  return pakoDeflate(data, { level: level as 1 });
}

/** Inflates a whole zlib stream (a loose object). */
export function inflateAll(input: Uint8Array, maxSize: number): Uint8Array {
  const inflator = new Inflate({ chunkSize: 64 * 1024 });
  const chunks: Uint8Array[] = [];
  let total = 0;
  inflator.onData = (chunk: Uint8Array) => {
    total += chunk.length;
    if (total > maxSize) throw new PackError('PACK_LIMIT_OBJECT_SIZE', `inflated data exceeds ${maxSize} bytes`);
    chunks.push(chunk);
  };
  inflator.push(input, true);
  if (inflator.err || !(inflator as unknown as InflateState).ended)
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${inflator.msg || 'truncated'}`);
  return concat(chunks, total);
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

let table: Int32Array | undefined;

export function crc32(data: Uint8Array, crc = 0): number {
  if (!table) {
    table = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c;
    }
  }
  const t = table;
  let c = ~crc;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export function zlibImplementation(): string {
  return 'pako';
}
