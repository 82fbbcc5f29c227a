/**
 * Reads a pack's `.idx` (version 2, see idx.ts) into columns with positional reads, a piece at a
 * time: the ids go straight into their column, the offsets become numbers, the CRCs are only
 * hashed (serving and reading objects do not use them), and the whole file is checked against
 * its SHA-1 trailer on the way. What stays is the ids and a number per object, never the file:
 * git maps the file instead, which private memory does not count.
 */
import { createSha1 } from '#sha1';
import { PackError } from './errors.js';
import { PackIndex, readIdxHead } from './idx.js';
import { bytesToHex } from './object.js';

/** Bytes of the CRC and offset tables read at once. */
const PIECE = 64 * 1024;
const HEAD = 8 + 1024;

/** Reads a pack index of `size` bytes through positional reads (`readPackIndex`). */
export type PackIndexReader = (
  size: number,
  read: (position: number, into: Uint8Array) => Promise<void>,
) => Promise<PackIndex>;

/**
 * The index of `size` bytes that `read` reads (`into.length` bytes at `position`, all of them),
 * held in columns; a file that does not parse or does not match its checksum throws the IDX_*
 * errors of `new PackIndex(bytes, { verify: true })`.
 */
export async function readPackIndex(
  size: number,
  read: (position: number, into: Uint8Array) => Promise<void>,
): Promise<PackIndex> {
  if (size < HEAD + 40) throw new PackError('IDX_TRUNCATED', 'pack index too short');
  const hash = createSha1();
  const head = new Uint8Array(HEAD);
  await read(0, head);
  const fanout = readIdxHead(new DataView(head.buffer));
  const n = fanout[255]!;
  const crcsAt = HEAD + n * 20;
  const offsAt = crcsAt + n * 4;
  const bigsAt = offsAt + n * 4;
  if (size < bigsAt + 40) throw new PackError('IDX_TRUNCATED', 'pack index truncated');
  const large = size - 40 - bigsAt;
  if (large % 8 !== 0) throw new PackError('IDX_CORRUPT', 'pack index has a partial large offset table');
  hash.update(head);
  const ids = new Uint8Array(n * 20);
  await read(HEAD, ids);
  hash.update(ids);
  const piece = new Uint8Array(Math.min(PIECE, n * 4));
  for (let at = crcsAt; at < offsAt; at += PIECE) {
    const part = piece.subarray(0, Math.min(PIECE, offsAt - at));
    await read(at, part);
    hash.update(part);
  }
  const offsets = new Uint32Array(n);
  let hasLarge = false;
  for (let at = offsAt, i = 0; at < bigsAt; at += PIECE) {
    const part = piece.subarray(0, Math.min(PIECE, bigsAt - at));
    await read(at, part);
    hash.update(part);
    for (let k = 0; k < part.length; k += 4, i++) {
      const v = ((part[k]! << 24) | (part[k + 1]! << 16) | (part[k + 2]! << 8) | part[k + 3]!) >>> 0;
      offsets[i] = v;
      if (v & 0x80000000) hasLarge = true;
    }
  }
  // the large offsets (packs past 2 GiB) and the trailer
  const tail = new Uint8Array(large + 40);
  await read(bigsAt, tail);
  hash.update(tail.subarray(0, large + 20));
  if (bytesToHex(hash.digest()) !== bytesToHex(tail, large + 20)) {
    throw new PackError('IDX_BAD_CHECKSUM', 'pack index checksum');
  }
  const packHash = bytesToHex(tail, large, large + 20);
  if (!hasLarge) return new PackIndex({ ids, fanout, offsets, packHash });
  const tv = new DataView(tail.buffer);
  const wide = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = offsets[i]!;
    if (!(v & 0x80000000)) {
      wide[i] = v;
      continue;
    }
    const at = (v & 0x7fffffff) * 8;
    if (at + 8 > large) throw new PackError('IDX_CORRUPT', 'large offset index out of range');
    wide[i] = tv.getUint32(at) * 0x100000000 + tv.getUint32(at + 4);
  }
  return new PackIndex({ ids, fanout, offsets: wide, packHash });
}
