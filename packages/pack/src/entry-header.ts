/**
 * The header of a pack entry (gitformat-pack, "Object entries"), what precedes its zlib stream:
 *
 *   header  = 1 byte (more<<7 | type<<4 | size & 15), then size bits 4.. in 7-bit little-endian
 *             groups, each byte but the last with its high bit set
 *   base    = OFS_DELTA: distance back to the base's entry, a big-endian varint in which every
 *             continuation adds one (o = c & 127; while c & 128: o = ((o + 1) << 7) | (c' & 127))
 *             REF_DELTA: the base's 20-byte object id
 *
 * One codec for the streaming reader, the stores reading packs back, and the writer.
 */
import { PackError } from './errors.js';
import { bytesToHex, type ObjectId } from './object.js';

/** Pack entry type numbers (5 is reserved, 0 invalid). */
export const EntryType = {
  COMMIT: 1,
  TREE: 2,
  BLOB: 3,
  TAG: 4,
  OFS_DELTA: 6,
  REF_DELTA: 7,
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];
/** The type of an entry holding a whole object. */
export type WholeEntryType = 1 | 2 | 3 | 4;

/** The header of an entry holding a whole object; `length` is the bytes it takes. */
export interface WholeEntryHeader {
  type: WholeEntryType;
  size: number;
  length: number;
}

/** A decoded entry header; `length` is the bytes it takes, base included. */
export type EntryHeader =
  | WholeEntryHeader
  | {
      type: typeof EntryType.OFS_DELTA;
      size: number;
      length: number;
      /** Pack offset of the base's entry. */
      baseOffset: number;
    }
  | { type: typeof EntryType.REF_DELTA; size: number; length: number; baseOid: ObjectId };

/** The longest size varint accepted: sizes up to 2^53 (past that, bits would be lost). */
const MAX_SIZE_SHIFT = 49;
/** A pack's first entry follows its 12-byte header. */
const FIRST_ENTRY = 12;

/** The type an entry header's first byte names (not checked: see `decodeEntryHeader`). */
export function entryTypeOf(firstByte: number): number {
  return (firstByte >> 4) & 7;
}

/** Whether `type` is one of a whole object's (commit, tree, blob, tag). */
export function isWholeEntryType(type: number): type is WholeEntryType {
  return type >= EntryType.COMMIT && type <= EntryType.TAG;
}

/** Whether `header` is a whole object's (not a delta's). */
export function isWholeEntry(header: EntryHeader): header is WholeEntryHeader {
  return isWholeEntryType(header.type);
}

/**
 * The header of the entry at pack offset `offset`, whose bytes start at `bytes[start]` and are
 * available up to `end`. Undefined when they end before the header does (read more, then decode
 * again); PACK_BAD_TYPE, PACK_BAD_HEADER (a size varint past 2^53) or PACK_BAD_BASE_OFFSET (a
 * base before the first entry or not before this one) when it is not valid.
 */
export function decodeEntryHeader(
  bytes: Uint8Array,
  start: number,
  offset: number,
  end: number = bytes.length,
): EntryHeader | undefined {
  let p = start;
  if (p >= end) return undefined;
  let c = bytes[p++]!;
  const type = entryTypeOf(c);
  let size = c & 15;
  let shift = 4;
  // 2 ** shift, kept as a product: `**` with a variable exponent is a call to pow
  let scale = 16;
  while (c & 0x80) {
    if (p >= end) return undefined;
    c = bytes[p++]!;
    if (shift > MAX_SIZE_SHIFT) throw new PackError('PACK_BAD_HEADER', 'entry size varint too long', { offset });
    size += (c & 0x7f) * scale;
    shift += 7;
    scale *= 128;
  }
  if (isWholeEntryType(type)) return { type, size, length: p - start };
  if (type === EntryType.OFS_DELTA) {
    if (p >= end) return undefined;
    c = bytes[p++]!;
    let distance = c & 0x7f;
    while (c & 0x80) {
      if (p >= end) return undefined;
      c = bytes[p++]!;
      distance = (distance + 1) * 128 + (c & 0x7f);
      // already past the start of the pack: no need to read the rest of it
      if (distance > offset) break;
    }
    const baseOffset = offset - distance;
    if (distance <= 0 || baseOffset < FIRST_ENTRY) {
      throw new PackError('PACK_BAD_BASE_OFFSET', 'delta base offset points outside the pack', { offset });
    }
    return { type, size, length: p - start, baseOffset };
  }
  if (type === EntryType.REF_DELTA) {
    if (p + 20 > end) return undefined;
    return { type, size, length: p + 20 - start, baseOid: bytesToHex(bytes, p, p + 20) };
  }
  throw new PackError('PACK_BAD_TYPE', `entry type ${type} is not valid`, { offset });
}

/** Bytes of the size varint for `size`. */
function sizeLength(size: number): number {
  let n = 1;
  for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128)) n++;
  return n;
}

/**
 * The header of an entry of `type` and inflated `size`; with `base`, followed by it: for an
 * OFS_DELTA the distance back to its base's entry (see `encodeOfsOffset`), for a REF_DELTA the
 * base's 20-byte id. PACK_BAD_INPUT for a size or distance that is not a safe non-negative
 * integer, or a base that does not fit the type.
 */
export function encodeEntryHeader(type: EntryType, size: number, base?: number | Uint8Array): Uint8Array {
  checkHeader(type, size, base);
  const out = new Uint8Array(
    sizeLength(size) +
      (base === undefined ? 0 : typeof base === 'number' ? ofsOffsetLength(base) : (base as Uint8Array).length),
  );
  writeEntryHeader(out, 0, type, size, base);
  return out;
}

/** The most bytes `writeEntryHeader` writes: a size varint of 2^53, then a REF_DELTA's id. */
export const MAX_ENTRY_HEADER = 8 + 20;

/**
 * `encodeEntryHeader` written into `out` from `at` on (room for `MAX_ENTRY_HEADER` bytes is
 * enough); returns where it ends. The same checks, the same PACK_BAD_INPUT errors.
 */
export function writeEntryHeader(
  out: Uint8Array,
  at: number,
  type: EntryType,
  size: number,
  base?: number | Uint8Array,
): number {
  checkHeader(type, size, base);
  const n = sizeLength(size);
  let c = (type << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  for (let i = 0; i < n - 1; i++) {
    out[at + i] = c | 0x80;
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  out[at + n - 1] = c;
  at += n;
  if (base === undefined) return at;
  if (typeof base === 'number') return writeOfsOffset(out, at, base);
  out.set(base, at);
  return at + base.length;
}

function checkHeader(type: EntryType, size: number, base: number | Uint8Array | undefined): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new PackError('PACK_BAD_INPUT', `bad entry size ${size}`);
  if (base === undefined) return;
  if (type === EntryType.OFS_DELTA && typeof base === 'number') {
    if (!Number.isSafeInteger(base) || base <= 0)
      throw new PackError('PACK_BAD_INPUT', `bad delta base distance ${base}`);
    return;
  }
  if (type === EntryType.REF_DELTA && base instanceof Uint8Array && base.length === 20) return;
  throw new PackError('PACK_BAD_INPUT', `a base that does not fit an entry of type ${type}`);
}

/** Bytes of the varint of an OFS_DELTA's distance. */
function ofsOffsetLength(distance: number): number {
  let n = 1;
  for (let rest = Math.floor(distance / 128); rest > 0; rest = Math.floor((rest - 1) / 128)) n++;
  return n;
}

/** The varint of an OFS_DELTA's distance back to its base's entry (positive). */
export function encodeOfsOffset(distance: number): Uint8Array {
  if (!Number.isSafeInteger(distance) || distance <= 0) {
    throw new PackError('PACK_BAD_INPUT', `bad delta base distance ${distance}`);
  }
  const out = new Uint8Array(ofsOffsetLength(distance));
  writeOfsOffset(out, 0, distance);
  return out;
}

/** `encodeOfsOffset` written into `out` from `at` on (a checked distance); returns where it ends. */
function writeOfsOffset(out: Uint8Array, at: number, distance: number): number {
  const n = ofsOffsetLength(distance);
  let rest = distance;
  out[at + n - 1] = rest & 0x7f;
  rest = Math.floor(rest / 128);
  for (let i = n - 2; i >= 0; i--) {
    rest -= 1;
    out[at + i] = 0x80 | (rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  return at + n;
}
