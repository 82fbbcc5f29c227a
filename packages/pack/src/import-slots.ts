/**
 * The entries of a pack being imported, one typed array per field: where each entry lies, its
 * CRC-32, base, type, delta depth and object id (20 bytes in one shared array), and an
 * open-addressing index from ids to entries. About 35 bytes per entry and no object per entry,
 * so that a pack of a million objects costs the garbage collector nothing to keep. What an entry's
 * header says (its sizes) is not kept: the few entries read back decode it again.
 *
 * The ids and CRCs lie where the pack's .idx has them, in one buffer of the .idx's size: once
 * the pack is read, `buildIndex` sorts them in place and writes the rest of the .idx around them
 * (as git's index-pack writes its index from its entry table), so that the index costs no second
 * copy of the entries.
 */
import { IDS_AT, refuseDuplicates, sealIdx, sortedOrder, writeFanout } from './idx.js';
import { bytesToHex, hexToBytes, type ObjectId, type ObjectType } from './object.js';
import { findIdSlot } from './oid-set.js';

const ID = 20;
const TYPE_NAMES: readonly (ObjectType | undefined)[] = [undefined, 'commit', 'tree', 'blob', 'tag'];
const TYPE_INDEX: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
/** `#type` bits: the type code, and whether the id is known. */
const TYPE_MASK = 7;
const KNOWN = 8;

/** `base` of an entry stored whole. */
export const WHOLE = -1;
/** `base` of a delta whose base is not known yet. */
export const BASE_UNKNOWN = -2;

export class ImportSlots {
  #length = 0;
  #capacity: number;
  /**
   * Offset of each entry's header in the pack: 32 bits while the pack is under 4 GiB, 64-bit
   * floats from the first entry past it on.
   */
  offset: Uint32Array | Float64Array;
  /** Offset just past the last entry (each other entry ends where the next begins). */
  #lastEnd = 0;
  crc32: Uint32Array;
  /** WHOLE, BASE_UNKNOWN or the base's entry. */
  base: Int32Array;
  /** Delta chain length (16 bits unless the depth limit needs more). */
  depth: Uint16Array | Uint32Array;
  readonly #wideDepth: boolean;
  /** The type code (low bits) and KNOWN once the entry's id is known. */
  #type: Uint8Array<ArrayBuffer>;
  /** The `base` column once released: `buildIndex` sorts in its memory. */
  #released: Int32Array | undefined;
  /** The .idx being made: the ids at IDS_AT, then the CRCs (`crc32`), room for the rest. */
  #idx: Uint8Array<ArrayBuffer>;
  #ids: Uint8Array<ArrayBuffer>;
  /**
   * Id index: slot -> 1 + entry, 0 when empty; the first entry of an id wins. Built on the first
   * `find` (a pack of OFS deltas alone never looks an id up), kept up to date from then on.
   */
  #table: Int32Array = new Int32Array(0);
  #mask = 0;
  #indexed = 0;
  #indexing = false;
  readonly #scratch: Uint8Array<ArrayBuffer> = new Uint8Array(ID);

  /** Entries the pack declares: growth stops there first (a header may claim more than comes). */
  readonly #expected: number;

  /** `maxDepth`: the longest delta chain that will be recorded (the import's limit). */
  constructor(capacity: number, expected = 0, maxDepth = 0xffff) {
    this.#capacity = Math.max(16, capacity);
    this.#expected = expected;
    this.#wideDepth = maxDepth > 0xffff;
    const n = this.#capacity;
    this.offset = new Uint32Array(n);
    this.base = new Int32Array(n);
    this.depth = this.#wideDepth ? new Uint32Array(n) : new Uint16Array(n);
    this.#type = new Uint8Array(n);
    this.#idx = new Uint8Array(idxSize(n));
    this.#ids = this.#idx.subarray(IDS_AT, IDS_AT + n * ID);
    this.crc32 = new Uint32Array(this.#idx.buffer, IDS_AT + n * ID, n);
  }

  get length(): number {
    return this.#length;
  }

  /** Appends an entry (whole until told otherwise); returns its index. */
  add(offset: number, end: number, crc32: number): number {
    if (this.#length === this.#capacity) this.#grow();
    const i = this.#length++;
    if (offset > 0xffffffff && this.offset instanceof Uint32Array) this.offset = Float64Array.from(this.offset);
    this.offset[i] = offset;
    this.#lastEnd = end;
    this.crc32[i] = crc32;
    this.base[i] = WHOLE;
    return i;
  }

  /**
   * Drops what only resolution needs (bases, depths, the id index): ids, types, offsets and CRCs
   * stay, and nothing may be added or looked up after.
   */
  release(): void {
    this.#released = this.base;
    this.base = new Int32Array(0);
    this.depth = new Uint32Array(0);
    this.#table = new Int32Array(0);
    this.#capacity = this.#length;
  }

  /** The ids of every entry, 20 bytes each in entry order (a view: valid until the next `add`). */
  get ids(): Uint8Array {
    return this.#ids.subarray(0, this.#length * ID);
  }

  /**
   * Every entry's type code (see `typeCode`), in entry order, in the memory of the type column:
   * what an entry's id is known or its type is no longer answers afterwards (call it last).
   */
  takeTypeCodes(): Uint8Array {
    const codes = this.#type.subarray(0, this.#length);
    for (let i = 0; i < codes.length; i++) codes[i]! &= TYPE_MASK;
    this.#type = new Uint8Array(0);
    return codes;
  }

  /** Offset just past entry `i`: entries lie one after the other (thin bases too). */
  end(i: number): number {
    return i + 1 < this.#length ? this.offset[i + 1]! : this.#lastEnd;
  }

  type(i: number): ObjectType | undefined {
    return TYPE_NAMES[this.#type[i]! & TYPE_MASK];
  }

  setType(i: number, type: ObjectType | undefined): void {
    this.#type[i] = (this.#type[i]! & KNOWN) | (type === undefined ? 0 : TYPE_INDEX[type]);
  }

  hasOid(i: number): boolean {
    return (this.#type[i]! & KNOWN) !== 0;
  }

  oid(i: number): ObjectId {
    return bytesToHex(this.#ids, i * ID, i * ID + ID);
  }

  /** Sets an entry's id and indexes it (unless an earlier entry has the same id). */
  setOid(i: number, oid: ObjectId): void {
    hexToBytes(oid, this.#ids, i * ID);
    this.#markKnown(i);
  }

  #markKnown(i: number): void {
    this.#type[i]! |= KNOWN;
    if (this.#indexing) this.#index(i);
  }

  /**
   * The pack's .idx (version 2, byte for byte what `writeIdx` makes with `strict`), made in place
   * from the ids and CRCs, with `rank`: the .idx position of each entry. Undefined for a pack
   * with offsets past 2 GiB, whose index needs a table this buffer has no room for (`writeIdx`
   * then makes it from the columns). A repeated id throws PACK_DUPLICATE_OBJECT. The entries' ids,
   * CRCs and offsets are no longer theirs afterwards: call it last.
   *
   * The sort order goes in the memory of the `base` column (after `release`), and the offsets,
   * once written, leave theirs to `rank`, where the CRC column leaves the offsets' place in the
   * .idx free (entries as many as the columns' room, as when the pack's header told their count).
   */
  buildIndex(packHash: string): { idx: Uint8Array; rank: Uint32Array } | undefined {
    const n = this.#length;
    if (n > 0 && this.#lastEnd > 0x80000000) return undefined;
    const ids = this.#ids;
    const crcs = this.crc32;
    const spare = this.#released ?? this.base;
    const order = sortedOrder(ids, n, new Uint32Array(spare.buffer, spare.byteOffset, n));
    const offsets = this.offset;
    refuseDuplicates(ids, order, (k) => offsets[k]!);
    const out = this.#idx;
    const crcAt = IDS_AT + n * ID;
    const offsetAt = crcAt + n * 4;
    // the offsets go to the .idx now, while the order is whole, if the CRC column ends before
    // their place; their column then holds the ranks
    const early = crcs.byteOffset + n * 4 <= offsetAt;
    let rank: Uint32Array;
    if (early) {
      for (let i = 0; i < n; i++) put32(out, offsetAt + i * 4, offsets[order[i]!]!);
      rank = new Uint32Array(offsets.buffer, offsets.byteOffset, n);
      this.offset = new Uint32Array(0);
    } else rank = new Uint32Array(n);
    for (let i = 0; i < n; i++) rank[order[i]!] = i;
    // the permutation applied in place, one cycle at a time (`order` is spent doing it)
    const id = new Uint8Array(ID);
    for (let s = 0; s < n; s++) {
      if (order[s] === s) continue;
      id.set(ids.subarray(s * ID, s * ID + ID));
      const crc = crcs[s]!;
      let j = s;
      for (;;) {
        const k = order[j]!;
        order[j] = j;
        if (k === s) break;
        ids.copyWithin(j * ID, k * ID, k * ID + ID);
        crcs[j] = crcs[k]!;
        j = k;
      }
      ids.set(id, j * ID);
      crcs[j] = crc;
    }
    // the CRCs, big-endian, right after the ids (a buffer grown past the count has a gap), then
    // the offsets unless written already: each write lands on CRCs already moved
    for (let i = 0; i < n; i++) put32(out, crcAt + i * 4, crcs[i]!);
    if (!early) for (let p = 0; p < n; p++) put32(out, offsetAt + rank[p]! * 4, offsets[p]!);
    writeFanout(out, n);
    const trailer = offsetAt + n * 4;
    sealIdx(out, trailer, packHash);
    return { idx: out.subarray(0, trailer + 40), rank };
  }

  #index(i: number): void {
    const s = this.#slot(this.#ids, i * ID);
    if (this.#table[s] !== 0) return;
    this.#table[s] = i + 1;
    if (++this.#indexed * 2 > this.#table.length) this.#rehash();
  }

  /** The first entry with this id, if any. */
  find(oid: ObjectId): number | undefined {
    if (!this.#indexing) {
      this.#indexing = true;
      let t = 16;
      while (t < this.#length * 2) t *= 2;
      this.#table = new Int32Array(t);
      this.#mask = t - 1;
      // in entry order: the first entry of an id wins
      for (let i = 0; i < this.#length; i++) if (this.hasOid(i)) this.#index(i);
    }
    hexToBytes(oid, this.#scratch, 0);
    const e = this.#table[this.#slot(this.#scratch, 0)]!;
    return e === 0 ? undefined : e - 1;
  }

  #slot(bytes: Uint8Array, at: number): number {
    return findIdSlot(this.#table, this.#mask, this.#ids, bytes, at);
  }

  #rehash(): void {
    const old = this.#table;
    this.#table = new Int32Array(old.length * 2);
    this.#mask = this.#table.length - 1;
    for (const e of old) if (e !== 0) this.#table[this.#slot(this.#ids, (e - 1) * ID)] = e;
  }

  #grow(): void {
    const c = this.#capacity;
    // doubling up to the declared count, then that count; past it (thin bases), a quarter more
    const n = c < this.#expected ? Math.min(c * 2, this.#expected) : c + Math.max(16, c >>> 2);
    const offsets = this.offset instanceof Uint32Array ? new Uint32Array(n) : new Float64Array(n);
    offsets.set(this.offset);
    const u8 = (a: Uint8Array): Uint8Array<ArrayBuffer> => {
      const b = new Uint8Array(n);
      b.set(a);
      return b;
    };
    const idx = new Uint8Array(idxSize(n));
    idx.set(this.#ids, IDS_AT);
    const crc32 = new Uint32Array(idx.buffer, IDS_AT + n * ID, n);
    crc32.set(this.crc32);
    const i32 = new Int32Array(n);
    i32.set(this.base);
    const depth = this.#wideDepth ? new Uint32Array(n) : new Uint16Array(n);
    depth.set(this.depth);
    this.offset = offsets;
    this.crc32 = crc32;
    this.base = i32;
    this.depth = depth;
    this.#type = u8(this.#type);
    this.#idx = idx;
    this.#ids = idx.subarray(IDS_AT, IDS_AT + n * ID);
    this.#capacity = n;
  }
}

/** Bytes of a version 2 .idx of `count` entries with no large offset. */
function idxSize(count: number): number {
  return IDS_AT + count * 28 + 40;
}

function put32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 255;
  out[at + 2] = (v >>> 8) & 255;
  out[at + 3] = v & 255;
}
