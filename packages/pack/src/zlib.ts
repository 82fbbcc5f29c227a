/**
 * zlib (RFC 1950/1951) for pack entries: the web default over pako. Node selects
 * `zlib.node.ts` (node:zlib) through the package's `#zlib` import condition.
 *
 * `inflateOne` inflates one zlib stream that starts at `input[0]` and may be followed by other
 * bytes (the next pack entry); it reports how many input bytes the stream used.
 */
import { Inflate, deflate as pakoDeflate } from 'pako';
import { PackError } from './errors.js';

/** The parts of pako's Inflate its typings omit. */
export interface InflateState {
  ended: boolean;
  strm: { avail_in: number };
}

export type InflateOutcome = { kind: 'done'; data: Uint8Array; consumed: number } | { kind: 'need-more' };

export function inflateOne(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
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
