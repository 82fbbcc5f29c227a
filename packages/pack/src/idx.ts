/**
 * Pack index version 2 (gitformat-pack, "Version 2 pack-*.idx files"):
 *
 *   magic "\377tOc" | u32 version = 2 | u32 fanout[256] (cumulative counts by first byte)
 *   | N x 20-byte sorted object ids | N x u32 CRC32 of each packed entry
 *   | N x u32 offsets (MSB set: index into the next table) | M x u64 large offsets
 *   | 20-byte pack checksum | 20-byte SHA-1 of everything before
 */
import { sha1 } from '#sha1';
import { PackError } from './errors.js';
import { bytesToHex, hexToBytes, type ObjectId } from './object.js';

export interface IndexEntry {
  oid: ObjectId;
  offset: number;
  crc32: number;
}

const MAGIC = [0xff, 0x74, 0x4f, 0x63];

/**
 * A pack's index entries as columns (what an import holds: no object nor id string per entry):
 * entry i's id is `ids[20 * i, 20 * i + 20)`.
 */
export interface IndexColumns {
  readonly count: number;
  readonly ids: Uint8Array;
  readonly offsets: ArrayLike<number>;
  readonly crc32s: ArrayLike<number>;
}

/**
 * An .idx already written from a pack's entries, repeated ids refused (what `writeIdx` gives
 * with `strict`): a pack import builds it in the memory that held its entries.
 */
export interface BuiltIndex {
  readonly count: number;
  readonly built: Uint8Array;
}

/** Entries as objects, as columns (see IndexColumns), or their index already written. */
export type IndexEntries = readonly IndexEntry[] | IndexColumns | BuiltIndex;

function isBuilt(entries: IndexEntries): entries is BuiltIndex {
  return !Array.isArray(entries) && 'built' in entries;
}

/** The entries as columns (entry objects are copied into new ones; columns are returned as they are). */
export function indexColumns(entries: readonly IndexEntry[] | IndexColumns): IndexColumns {
  if (!Array.isArray(entries)) return entries as IndexColumns;
  const list = entries as readonly IndexEntry[];
  const count = list.length;
  // every id decoded once, in entry order, in one call: this runs once per pack, mostly before
  // the JIT has seen it, and one long loop is optimized on the fly where 20-step calls are not
  const hex = new Array<string>(count);
  const offsets = new Float64Array(count);
  const crc32s = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const e = list[i]!;
    hex[i] = e.oid;
    offsets[i] = e.offset;
    crc32s[i] = e.crc32;
  }
  return { count, ids: hexToBytes(hex.join('')), offsets, crc32s };
}

/** Every id of the entries, in entry order. */
export function* indexIds(entries: IndexEntries): Generator<ObjectId> {
  if (Array.isArray(entries)) {
    for (const e of entries as readonly IndexEntry[]) yield e.oid;
    return;
  }
  if (isBuilt(entries)) {
    for (let i = 0, at = IDS_AT; i < entries.count; i++, at += 20) yield bytesToHex(entries.built, at, at + 20);
    return;
  }
  const { count, ids } = entries as IndexColumns;
  for (let i = 0; i < count; i++) yield bytesToHex(ids, i * 20, i * 20 + 20);
}

/** Where an .idx's sorted ids start: after its magic, version and fanout table. */
export const IDS_AT = 8 + 1024;

/** Throws PACK_DUPLICATE_OBJECT for the first id listed twice in `order` (sorted entry indexes). */
export function refuseDuplicates(ids: Uint8Array, order: Uint32Array, offsetOf: (entry: number) => number): void {
  for (let i = 1; i < order.length; i++) {
    const a = order[i - 1]! * 20;
    const b = order[i]! * 20;
    let same = true;
    for (let k = 0; k < 20 && same; k++) same = ids[a + k] === ids[b + k];
    if (same) {
      const oid = bytesToHex(ids, b, b + 20);
      throw new PackError('PACK_DUPLICATE_OBJECT', `object ${oid} appears twice in the pack`, {
        offset: offsetOf(order[i]!),
      });
    }
  }
}

/** Writes the fanout table of an .idx whose `count` sorted ids are in place. */
export function writeFanout(out: Uint8Array, count: number): void {
  const fanout = new Uint32Array(256);
  for (let i = 0; i < count; i++) fanout[out[IDS_AT + i * 20]!]!++;
  let total = 0;
  for (let i = 0; i < 256; i++) {
    total += fanout[i]!;
    put32(out, 8 + i * 4, total);
  }
}

/** Writes an .idx's header (over zeroed bytes) and its trailer (the pack's checksum, then the SHA-1 of all before) at `trailer`. */
export function sealIdx(out: Uint8Array<ArrayBuffer>, trailer: number, packHash: string): void {
  out.set(MAGIC, 0);
  out[7] = 2;
  hexToBytes(packHash, out, trailer);
  out.set(sha1(out.subarray(0, trailer + 20)), trailer + 20);
}

/**
 * The .idx of a pack whose entries are `entries` (any order). Every entry is listed, an id the
 * pack holds twice as often as it has it (git's index-pack does the same: an index whose count is
 * not the pack's is refused by every git reader). With `strict`, a repeated id throws
 * PACK_DUPLICATE_OBJECT instead, as `git index-pack --strict` dies: git's verify-pack (which is
 * strict) refuses such a pack, so stores do not keep one.
 */
export function writeIdx(entries: IndexEntries, packHash: string, options: { strict?: boolean } = {}): Uint8Array {
  if (isBuilt(entries)) return entries.built;
  const { count, ids, offsets, crc32s } = indexColumns(entries);
  const order = sortedOrder(ids, count);
  const n = order.length;
  if (options.strict) refuseDuplicates(ids, order, (k) => offsets[k]!);
  let large = 0;
  for (let i = 0; i < n; i++) if (offsets[order[i]!]! >= 0x80000000) large++;
  const crcs = IDS_AT + n * 20;
  const offs = crcs + n * 4;
  const bigs = offs + n * 4;
  const out = new Uint8Array(bigs + large * 8 + 40);
  let big = 0;
  for (let i = 0; i < n; i++) {
    const k = order[i]!;
    const offset = offsets[k]!;
    for (let b = 0, from = k * 20, to = IDS_AT + i * 20; b < 20; b++) out[to + b] = ids[from + b]!;
    put32(out, crcs + i * 4, crc32s[k]! >>> 0);
    if (offset >= 0x80000000) {
      put32(out, offs + i * 4, (0x80000000 | big) >>> 0);
      put32(out, bigs + big * 8, Math.floor(offset / 0x100000000));
      put32(out, bigs + big * 8 + 4, offset >>> 0);
      big++;
    } else put32(out, offs + i * 4, offset);
  }
  writeFanout(out, n);
  sealIdx(out, bigs + large * 8, packHash);
  return out;
}

function put32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 255;
  out[at + 2] = (v >>> 8) & 255;
  out[at + 3] = v & 255;
}

/**
 * Indexes of the ids (`count` x 20 bytes) in sorted order, every entry kept: an id the pack holds
 * twice is listed twice, in pack order, as git's index-pack lists it (its count must be the pack's,
 * or git refuses the pack). A counting sort on the first two bytes of each id (the first byte
 * alone for a few thousand ids, so that a small pack does not clear and walk 65536 buckets;
 * stable: pack order within a bucket), then each bucket (a few entries: ids are uniformly spread)
 * sorted by its remaining bytes, stably. Memory: the order itself (in `into` when given: `count`
 * entries of memory the caller no longer needs) and the bucket counts, no key per entry.
 */
export function sortedOrder(ids: Uint8Array, count: number, into?: Uint32Array): Uint32Array {
  const shift = count < 4096 ? 8 : 0;
  const buckets = 65536 >>> shift;
  const key = (at: number) => ((ids[at]! << 8) | ids[at + 1]!) >>> shift;
  const starts = new Uint32Array(buckets + 1);
  for (let i = 0, at = 0; i < count; i++, at += 20) starts[key(at) + 1]!++;
  for (let b = 1; b <= buckets; b++) starts[b]! += starts[b - 1]!;
  const order = into ? into.subarray(0, count) : new Uint32Array(count);
  // each bucket's start moves on as it fills: `starts[b]` ends where bucket b ends, which is
  // where bucket b + 1 started (the loop below reads bucket b's start from `starts[b - 1]`)
  for (let i = 0, at = 0; i < count; i++, at += 20) order[starts[key(at)]!++] = i;
  const first = shift ? 1 : 2;
  /** Whether entry a sorts after entry b (ids from the byte after the bucket's, then position in the pack). */
  const after = (a: number, b: number) => {
    for (let k = first, x = a * 20, y = b * 20; k < 20; k++) {
      const d = ids[x + k]! - ids[y + k]!;
      if (d !== 0) return d > 0;
    }
    return a > b;
  };
  for (let b = 0; b < buckets; b++) {
    const from = b === 0 ? 0 : starts[b - 1]!;
    const to = starts[b]!;
    if (to - from < 2) continue;
    if (to - from > 32) {
      order.subarray(from, to).sort((a, b) => (after(a, b) ? 1 : after(b, a) ? -1 : 0));
      continue;
    }
    // insertion sort: stable, and buckets are small
    for (let i = from + 1; i < to; i++) {
      const v = order[i]!;
      let j = i - 1;
      while (j >= from && after(order[j]!, v)) {
        order[j + 1] = order[j]!;
        j--;
      }
      order[j + 1] = v;
    }
  }
  return order;
}

/**
 * The columns a pack index is held in without its file (see idx-read.ts): the sorted ids, the
 * fanout, and the entry offsets as numbers in id order; no CRCs. The ids are absent only for a
 * subclass that reads them from elsewhere (`oidAt` and `findRaw` its own).
 */
export interface PackIndexColumns {
  readonly ids?: Uint8Array;
  /** fanout[b]: how many ids start with a byte at most b. */
  readonly fanout: Uint32Array;
  readonly offsets: Uint32Array | Float64Array;
  readonly packHash: string;
}

/**
 * A parsed .idx v2: binary search by object id, offsets, CRCs. Made of the file's bytes, it keeps
 * a view of them; made of columns (`PackIndexColumns`), it holds those and has no CRCs.
 */
/**
 * The signature, version and fanout table at the start of a version 2 `.idx` (`view` holds at
 * least its first 8 + 1024 bytes): the fanout, or the IDX_* error of what is wrong.
 */
export function readIdxHead(view: DataView): Uint32Array {
  if (view.getUint32(0) !== 0xff744f63) throw new PackError('IDX_BAD_SIGNATURE', 'not a version 2 pack index');
  if (view.getUint32(4) !== 2) throw new PackError('IDX_BAD_VERSION', `pack index version ${view.getUint32(4)}`);
  const fanout = new Uint32Array(256);
  let prev = 0;
  for (let i = 0; i < 256; i++) {
    const v = view.getUint32(8 + i * 4);
    if (v < prev) throw new PackError('IDX_CORRUPT', 'pack index fanout not monotonic');
    fanout[i] = v;
    prev = v;
  }
  return fanout;
}

export class PackIndex {
  readonly count: number;
  readonly packHash: string;
  /** The sorted ids: id i is `#ids[#idsAt + 20 i ..][..20]`. */
  readonly #ids: Uint8Array;
  readonly #idsAt: number;
  readonly #fanout: Uint32Array;
  /** The offsets of an index held in columns. */
  readonly #offsets: Uint32Array | Float64Array | undefined;
  /** The file's bytes, for an index made of them. */
  readonly #data: Uint8Array | undefined;
  readonly #view: DataView | undefined;
  readonly #crcs: number = 0;
  readonly #offs: number = 0;
  readonly #bigs: number = 0;

  constructor(data: Uint8Array | PackIndexColumns, options: { verify?: boolean } = {}) {
    if (!(data instanceof Uint8Array)) {
      const n = data.offsets.length;
      if ((data.ids?.length ?? n * 20) !== n * 20 || data.fanout.length !== 256 || data.fanout[255] !== n) {
        throw new PackError('IDX_CORRUPT', 'pack index columns do not agree');
      }
      this.count = n;
      this.packHash = data.packHash;
      this.#ids = data.ids ?? new Uint8Array(0);
      this.#idsAt = 0;
      this.#fanout = data.fanout;
      this.#offsets = data.offsets;
      return;
    }
    if (data.length < 8 + 1024 + 40) throw new PackError('IDX_TRUNCATED', 'pack index too short');
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const fanout = readIdxHead(view);
    const n = fanout[255]!;
    this.count = n;
    this.#data = data;
    this.#view = view;
    this.#ids = data;
    this.#idsAt = 8 + 1024;
    this.#fanout = fanout;
    this.#crcs = this.#idsAt + n * 20;
    this.#offs = this.#crcs + n * 4;
    this.#bigs = this.#offs + n * 4;
    if (data.length < this.#bigs + 40) throw new PackError('IDX_TRUNCATED', 'pack index truncated');
    const large = data.length - 40 - this.#bigs;
    if (large % 8 !== 0) throw new PackError('IDX_CORRUPT', 'pack index has a partial large offset table');
    this.packHash = bytesToHex(data, data.length - 40, data.length - 20);
    if (options.verify) {
      const sum = bytesToHex(sha1(data.subarray(0, data.length - 20)));
      if (sum !== bytesToHex(data, data.length - 20)) throw new PackError('IDX_BAD_CHECKSUM', 'pack index checksum');
    }
  }

  /**
   * Lets go of the file an index reads from (reading what it still needs first, so that it
   * keeps answering): only an index that keeps its file open has it (see idx-read.ts).
   */
  closeFile?(): Promise<void>;

  oidAt(i: number): ObjectId {
    const at = this.#idsAt + i * 20;
    return bytesToHex(this.#ids, at, at + 20);
  }

  /** The CRC32 of entry i (an index held in columns has none: IDX_NO_CRC). */
  crcAt(i: number): number {
    if (!this.#view) throw new PackError('IDX_NO_CRC', 'this pack index is held without its CRCs');
    return this.#view.getUint32(this.#crcs + i * 4);
  }

  offsetAt(i: number): number {
    const offsets = this.#offsets;
    if (offsets) return offsets[i]!;
    const view = this.#view!;
    const v = view.getUint32(this.#offs + i * 4);
    if (!(v & 0x80000000)) return v;
    const k = v & 0x7fffffff;
    const at = this.#bigs + k * 8;
    if (at + 8 > this.#data!.length - 40) throw new PackError('IDX_CORRUPT', 'large offset index out of range');
    return view.getUint32(at) * 0x100000000 + view.getUint32(at + 4);
  }

  /** The position of `oid` in the sorted table, or -1. */
  find(oid: ObjectId): number {
    return this.findRaw(hexToBytes(oid), 0);
  }

  /**
   * The position of the binary id `key[at..at+20]` in the sorted table, or -1: `find` without
   * the hex round trip, for ids read from trees.
   */
  findRaw(key: Uint8Array, at: number): number {
    if (at < 0 || at + 20 > key.length) throw new PackError('IDX_CORRUPT', 'object id cut short');
    const first = key[at]!;
    let lo = first === 0 ? 0 : this.#fanout[first - 1]!;
    let hi = this.#fanout[first]!;
    const d = this.#ids;
    const base = this.#idsAt;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const o = base + mid * 20;
      let c = 0;
      for (let k = 0; k < 20; k++) {
        c = d[o + k]! - key[at + k]!;
        if (c !== 0) break;
      }
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  *entries(): IterableIterator<IndexEntry> {
    for (let i = 0; i < this.count; i++) yield { oid: this.oidAt(i), offset: this.offsetAt(i), crc32: this.crcAt(i) };
  }
}

export function readIdx(data: Uint8Array): IndexEntry[] {
  return [...new PackIndex(data, { verify: true }).entries()];
}
