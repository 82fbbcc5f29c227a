/**
 * Reads a pack's `.idx` (version 2, see idx.ts) into columns with positional reads, a piece at a
 * time: the ids go straight into their column, the offsets become numbers, the CRCs are only
 * hashed (serving and reading objects do not use them), and the whole file is checked against
 * its SHA-1 trailer on the way. What stays is the ids and a number per object, never the file:
 * git maps the file instead, which private memory does not count. Given synchronous reads of the
 * file, the ids of a large index too stay there (`IdsInFile`): a lookup reads the few ids that
 * share its first bits, until lookups are many enough to hold them whole.
 */
import { createSha1 } from '#sha1';
import { PackError } from './errors.js';
import { type IdsInFile, idBucketBits, PackIndex, readIdxHead } from './idx.js';
import { bytesToHex } from './object.js';

/** Bytes of the CRC and offset tables read at once. */
const PIECE = 64 * 1024;
const HEAD = 8 + 1024;

/** Fills `into` with the file's bytes at `position`, synchronously. */
export type ReadSync = (position: number, into: Uint8Array) => void;

/**
 * Reads a pack index of `size` bytes through positional reads (`readPackIndex`); `readSync`, when
 * the file stays open for synchronous reads, lets the index read its ids from it when asked.
 */
export type PackIndexReader = (
  size: number,
  read: (position: number, into: Uint8Array) => Promise<void>,
  readSync?: ReadSync,
) => Promise<PackIndex>;

/** Ids read at once to hash them and count their buckets (a multiple of 20 bytes). */
const ID_PIECE = 3276 * 20;
/** Bytes of ids from which they are left in the file (given `readSync`): fewer are held. */
export const MIN_IDS_IN_FILE = 256 * 1024;

/**
 * The index of `size` bytes that `read` reads (`into.length` bytes at `position`, all of them),
 * held in columns (with `readSync`, the ids left in the file); a file that does not parse or does
 * not match its checksum throws the IDX_* errors of `new PackIndex(bytes, { verify: true })`.
 */
export async function readPackIndex(
  size: number,
  read: (position: number, into: Uint8Array) => Promise<void>,
  readSync?: ReadSync,
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
  let ids: Uint8Array | IdsInFile;
  if (readSync && n * 20 >= MIN_IDS_IN_FILE) {
    // the ids hashed and counted by their first bits a piece at a time, and left in the file
    const bits = idBucketBits(n);
    const shift = 16 - bits;
    const buckets = 2 ** bits;
    const starts = new Uint32Array(buckets + 1);
    const idPiece = new Uint8Array(Math.min(ID_PIECE, n * 20));
    for (let at = HEAD; at < crcsAt; at += ID_PIECE) {
      const part = idPiece.subarray(0, Math.min(ID_PIECE, crcsAt - at));
      await read(at, part);
      hash.update(part);
      for (let k = 0; k < part.length; k += 20) starts[(((part[k]! << 8) | part[k + 1]!) >>> shift) + 1]!++;
    }
    for (let b = 1; b <= buckets; b++) starts[b]! += starts[b - 1]!;
    ids = { read: (first, into) => readSync(HEAD + first * 20, into), bits, starts };
  } else {
    ids = new Uint8Array(n * 20);
    await read(HEAD, ids);
    hash.update(ids);
  }
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
