/**
 * Packs built by hand for hostile-input tests: entries are given as whole objects, OFS deltas
 * (naming an earlier entry by its position) or REF deltas (naming a base by id), and are written
 * with their headers, zlib data, the header's count and the trailer, byte for byte as the format
 * says, so that a test can make a pack no well-behaved packer would.
 */
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

export type HandEntry =
  | { kind: 'whole'; type: 'commit' | 'tree' | 'blob' | 'tag'; data: Uint8Array }
  | { kind: 'ofs'; base: number; delta: Uint8Array }
  | { kind: 'ref'; base: string; delta: Uint8Array };

const TYPE_CODES = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;

function entryHeader(code: number, size: number): number[] {
  const out: number[] = [];
  let c = (code << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    out.push(c | 0x80);
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  out.push(c);
  return out;
}

function ofsDistance(rel: number): number[] {
  const bytes = [rel & 0x7f];
  let r = Math.floor(rel / 128);
  while (r > 0) {
    r -= 1;
    bytes.unshift(0x80 | (r & 0x7f));
    r = Math.floor(r / 128);
  }
  return bytes;
}

export function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** The pack's bytes and where each entry starts. */
export function handPack(
  entries: readonly HandEntry[],
  options: { count?: number } = {},
): { pack: Uint8Array; offsets: number[]; crcs: number[] } {
  const parts: Uint8Array[] = [];
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(options.count ?? entries.length, 8);
  parts.push(header);
  const offsets: number[] = [];
  const crcs: number[] = [];
  let at = 12;
  for (const e of entries) {
    offsets.push(at);
    let head: number[];
    let data: Uint8Array;
    if (e.kind === 'whole') {
      head = entryHeader(TYPE_CODES[e.type], e.data.length);
      data = e.data;
    } else if (e.kind === 'ofs') {
      head = [...entryHeader(6, e.delta.length), ...ofsDistance(at - offsets[e.base]!)];
      data = e.delta;
    } else {
      head = [...entryHeader(7, e.delta.length), ...hexBytes(e.base)];
      data = e.delta;
    }
    const bytes = Buffer.concat([Uint8Array.from(head), deflateSync(data)]);
    parts.push(bytes);
    crcs.push(crc32(bytes));
    at += bytes.length;
  }
  const body = Buffer.concat(parts);
  const pack = Buffer.concat([body, createHash('sha1').update(body).digest()]);
  return { pack: new Uint8Array(pack.buffer, pack.byteOffset, pack.byteLength), offsets, crcs };
}

/** A git object's id. */
export function objectId(type: string, data: Uint8Array): string {
  return createHash('sha1').update(`${type} ${data.length}\0`).update(data).digest('hex');
}
