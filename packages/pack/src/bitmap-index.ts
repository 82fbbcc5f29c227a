/**
 * A pack's reachability bitmap index, `pack-H.bitmap`, as git writes it (`git repack -adb`;
 * gitformat-pack "bitmap", git's pack-bitmap.c), version 1:
 *
 *   "BITM" | u16be version = 1 | u16be options | u32be entry_count | 20-byte pack checksum
 *   | EWAH commits | EWAH trees | EWAH blobs | EWAH tags        (the objects of each type)
 *   | entry_count x ( u32be commit idx position | u8 xor_offset | u8 flags | EWAH bitmap )
 *   | [pseudo-merges (0x20)] | [lookup table (0x10): entry_count x (u32 pos, u64 offset, u32 xor row)]
 *   | [name-hash cache (0x04): object_count x u32be, idx order] | 20-byte SHA-1 of the file
 *
 * Bit i of every bitmap is the object at position i in pack order (by offset: the pack's
 * reverse index). A commit's bitmap holds every object reachable from it; a stored bitmap with a
 * non-zero xor_offset is XORed with the (resolved) bitmap of the entry that many entries
 * earlier (at most 160). Options: FULL_DAG (0x1) must be set; the name-hash cache gives the
 * name hashes of objects listed from bitmaps; the lookup table and pseudo-merges are accepted and
 * not used (the entries are scanned once, which the lookup table would spare; bitmaps are
 * decoded lazily).
 *
 * Everything is checked against the bytes and the pack: a file that does not parse, does not
 * match its own checksum or names another pack throws BITMAP_CORRUPT or BITMAP_MISMATCH, and the
 * caller goes on without it (git warns and ignores such a bitmap).
 */
import { sha1 } from '#sha1';
import { PackError } from './errors.js';
import { type Bits, decodeEwah, ewahEnd, xorBits } from './ewah.js';
import type { PackIndex } from './idx.js';
import { bytesToHex, type ObjectId } from './object.js';
import { entryNumberAt } from './pack-files.js';
import type { PackSource } from './stored-location.js';

const MAGIC = [0x42, 0x49, 0x54, 0x4d]; // "BITM"
const HEADER = 32;
const OPT_FULL_DAG = 0x1;
const OPT_HASH_CACHE = 0x4;
const OPT_LOOKUP_TABLE = 0x10;
const OPT_PSEUDO_MERGES = 0x20;
const MAX_XOR_OFFSET = 160;
/**
 * Decoded commit bitmaps kept (bytes), past which the least recently used are dropped; at least
 * MIN_CACHED are kept whatever their size. A bitmap is XORed with one of the few before it
 * (git looks 10 back), so a walk that resolves its tips in the order of their entries (see
 * `entryOf`) finds the bitmap it needs among the last ones it decoded.
 */
const DEFAULT_CACHE_BYTES = 2 * 2 ** 20;
const MIN_CACHED = 16;

interface StoredEntry {
  /** Offset of its EWAH bitmap in the file. */
  at: number;
  /** Index of the entry it is XORed with, or -1. */
  xorWith: number;
}

export class BitmapIndex {
  /** Objects in the pack (bits of every bitmap). */
  readonly count: number;
  readonly packHash: string;
  readonly commits: Bits;
  readonly trees: Bits;
  readonly blobs: Bits;
  readonly tags: Bits;
  /** Whether the file has the name-hash cache and the lookup table (read, not used). */
  readonly hasHashCache: boolean;
  readonly hasLookupTable: boolean;
  /** The file's bytes up to its extensions (the bitmaps are decoded from them). */
  readonly #bytes: Uint8Array;
  /** Offset of the name-hash cache in the file, or -1. */
  readonly #hashCache: number = -1;
  /** The name-hash cache once read (see `loadNameHashes`). */
  #nameHashes: Uint8Array | undefined;
  /** Reads the file again (for its name-hash cache), when it was given. */
  readonly #reread: (() => Promise<Uint8Array>) | undefined;
  /** The file's checksum, that a file read again must have. */
  readonly #checksum: string;
  readonly #entries: StoredEntry[] = [];
  /** Commit idx position -> entry index. */
  readonly #byCommit = new Map<number, number>();
  readonly #cache = new Map<number, Bits>();
  #cacheBytes = 0;
  readonly #maxCacheBytes: number;
  /** A bitmap dropped from the cache, decoded into next (no new buffer, no garbage). */
  #spare: Bits | undefined;

  /**
   * Parses `bytes` (kept: bitmaps are decoded from them on demand) for a pack of `count` objects
   * whose checksum is `packHash`. With `reread` (the file read again), the name-hash cache (4
   * bytes an object, which only a pack that searches deltas anew reads) is not kept but read
   * again by `loadNameHashes`, and the other extensions are not kept either.
   */
  constructor(
    bytes: Uint8Array,
    pack: { count: number; packHash: string },
    options: { cacheBytes?: number; reread?: () => Promise<Uint8Array> } = {},
  ) {
    this.count = pack.count;
    this.#reread = options.reread;
    this.#maxCacheBytes = options.cacheBytes ?? DEFAULT_CACHE_BYTES;
    const corrupt = (message: string) => new PackError('BITMAP_CORRUPT', `bitmap: ${message}`);
    if (bytes.length < HEADER + 20) throw corrupt('too short');
    for (let i = 0; i < 4; i++) if (bytes[i] !== MAGIC[i]) throw corrupt('bad signature');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const version = view.getUint16(4);
    if (version !== 1) throw corrupt(`unsupported version ${version}`);
    const options16 = view.getUint16(6);
    if (!(options16 & OPT_FULL_DAG)) throw corrupt('not a full-DAG bitmap');
    const entryCount = view.getUint32(8);
    this.packHash = bytesToHex(bytes, 12, 32);
    if (this.packHash !== pack.packHash) {
      throw new PackError('BITMAP_MISMATCH', `bitmap is of pack ${this.packHash}, not ${pack.packHash}`);
    }
    const trailer = bytes.length - 20;
    this.#checksum = bytesToHex(bytes, trailer);
    if (bytesToHex(sha1(bytes.subarray(0, trailer))) !== this.#checksum) throw corrupt('checksum does not match');
    // extensions, from the end: name-hash cache, lookup table, pseudo-merges
    let end = trailer;
    this.hasHashCache = (options16 & OPT_HASH_CACHE) !== 0;
    if (this.hasHashCache) {
      end -= pack.count * 4;
      if (end < HEADER) throw corrupt('too short for its name-hash cache');
      this.#hashCache = end;
    }
    this.hasLookupTable = (options16 & OPT_LOOKUP_TABLE) !== 0;
    if (this.hasLookupTable) {
      end -= entryCount * 16;
      if (end < HEADER) throw corrupt('too short for its lookup table');
    }
    if (options16 & OPT_PSEUDO_MERGES) {
      if (end - 8 < HEADER) throw corrupt('too short for its pseudo-merge table');
      const size = view.getUint32(end - 8) * 2 ** 32 + view.getUint32(end - 4);
      if (size > end - HEADER) throw corrupt('too short for its pseudo-merge table');
      end -= size;
    }
    const body = bytes.subarray(0, end);
    let at = HEADER;
    const typeBitmap = () => {
      const r = decodeEwah(body, at, pack.count);
      at = r.end;
      return r.bits;
    };
    this.commits = typeBitmap();
    this.trees = typeBitmap();
    this.blobs = typeBitmap();
    this.tags = typeBitmap();
    if (entryCount > (end - at) / 18) throw corrupt('more entries than bytes');
    for (let i = 0; i < entryCount; i++) {
      if (at + 6 > end) throw corrupt(`entry ${i} cut short`);
      const commit = view.getUint32(at);
      const xor = bytes[at + 4]!;
      if (commit >= pack.count) throw corrupt(`entry ${i} names object ${commit} of ${pack.count}`);
      if (xor > MAX_XOR_OFFSET || xor > i) throw corrupt(`entry ${i} has a bad XOR offset`);
      const ewahAt = at + 6;
      at = ewahEnd(body, ewahAt);
      this.#entries.push({ at: ewahAt, xorWith: xor === 0 ? -1 : i - xor });
      if (!this.#byCommit.has(commit)) this.#byCommit.set(commit, i);
    }
    if (at !== end) throw corrupt('bytes between the entries and the extensions');
    if (!this.#reread) {
      this.#bytes = bytes;
      if (this.hasHashCache) this.#nameHashes = bytes.subarray(this.#hashCache, this.#hashCache + pack.count * 4);
    } else {
      // a copy (of a Buffer too, whose slice() is a view)
      this.#bytes = end < bytes.length ? new Uint8Array(bytes.subarray(0, end)) : bytes;
    }
  }

  /**
   * Makes the name-hash cache readable by `nameHashAt`, reading the file again when it was not
   * kept. A file that is gone or changed since (a repack rewrote it) counts as one without the
   * cache: name hashes only order a delta search, so the pack is made all the same.
   */
  async loadNameHashes(): Promise<void> {
    if (this.#nameHashes || this.#hashCache < 0 || !this.#reread) return;
    const bytes = await this.#reread().catch(() => undefined);
    const same = bytes !== undefined && bytes.length >= 20 && bytesToHex(bytes, bytes.length - 20) === this.#checksum;
    this.#nameHashes = same
      ? new Uint8Array(bytes.subarray(this.#hashCache, this.#hashCache + this.count * 4))
      : new Uint8Array(this.count * 4);
  }

  /**
   * git's name hash of the object at idx `position`, from the name-hash cache (0 without one;
   * a cache not kept is read by `loadNameHashes` first).
   */
  nameHashAt(position: number): number {
    if (this.#hashCache < 0 || position < 0 || position >= this.count) return 0;
    const b = this.#nameHashes;
    if (!b) throw new Error('BitmapIndex.nameHashAt: call loadNameHashes first');
    const at = position * 4;
    return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  }

  /** Commits with a bitmap. */
  get size(): number {
    return this.#entries.length;
  }

  /** Whether the commit at idx position `position` has a bitmap. */
  has(position: number): boolean {
    return this.#byCommit.has(position);
  }

  /**
   * The entry of the commit at idx position `position` (entries are in the file's order; -1: the
   * commit has no bitmap). Tips resolved in this order decode each bitmap once.
   */
  entryOf(position: number): number {
    return this.#byCommit.get(position) ?? -1;
  }

  /**
   * The objects reachable from the commit at idx position `position`, by pack-order position;
   * undefined when it has no bitmap. Lent by the index's cache: do not modify, and read it before
   * the next call (its buffer is reused once it leaves the cache).
   */
  reachable(position: number): Bits | undefined {
    const entry = this.#byCommit.get(position);
    return entry === undefined ? undefined : this.#resolve(entry);
  }

  #resolve(entry: number): Bits {
    const hit = this.#cache.get(entry);
    if (hit) {
      // most recently used last
      this.#cache.delete(entry);
      this.#cache.set(entry, hit);
      return hit;
    }
    // the chain of XORs down to a stored bitmap (entries only XOR with earlier ones)
    const chain: number[] = [];
    let base: Bits | undefined;
    for (let e = entry; e >= 0; e = this.#entries[e]!.xorWith) {
      const cached = e === entry ? undefined : this.#cache.get(e);
      if (cached) {
        base = cached;
        break;
      }
      chain.push(e);
    }
    let bits: Bits | undefined;
    for (let k = chain.length - 1; k >= 0; k--) {
      const spare = this.#spare;
      this.#spare = undefined;
      const decoded = decodeEwah(this.#bytes, this.#entries[chain[k]!]!.at, this.count, spare).bits;
      const prev = bits ?? base;
      if (prev) xorBits(decoded, prev);
      bits = decoded;
      this.#keep(chain[k]!, decoded);
    }
    return bits!;
  }

  /**
   * Drops the decoded bitmaps. A walk decodes the bitmaps of its tips (and the entries they are
   * XORed with) and keeps them while it lasts; once it has ORed them into its own bits nothing
   * reads them again, and the next request names other tips as often as the same ones, so they
   * are not kept between requests (git keeps none: a request is a process of its own).
   */
  dropDecoded(): void {
    this.#cache.clear();
    this.#cacheBytes = 0;
    this.#spare = undefined;
  }

  #keep(entry: number, bits: Bits): void {
    this.#cache.set(entry, bits);
    this.#cacheBytes += bits.byteLength;
    while (this.#cacheBytes > this.#maxCacheBytes && this.#cache.size > MIN_CACHED) {
      const [oldest, old] = this.#cache.entries().next().value as [number, Bits];
      this.#cache.delete(oldest);
      this.#cacheBytes -= old.byteLength;
      this.#spare = old;
    }
  }
}

/**
 * A pack with its reachability bitmaps, as the bitmap walk and the range reuse see it: objects
 * by pack-order position (the pack's reverse index), their entries' bytes, and the bitmaps.
 */
export interface BitmappedPack {
  readonly bitmaps: BitmapIndex;
  /** Objects in the pack. */
  readonly count: number;
  /** The pack file's size (its entries end 20 bytes before). */
  readonly size: number;
  /** Reads of the pack's bytes. */
  readonly source: PackSource;
  /** The pack-order position of `oid`, or -1 when the pack does not hold it. */
  position(oid: ObjectId): number;
  /** `position` of the binary id `bytes[at..at+20]` (as trees hold ids). */
  positionRaw(bytes: Uint8Array, at: number): number;
  oidAt(position: number): ObjectId;
  /** Where the entry at `position` starts. */
  offsetAt(position: number): number;
  /** Where it ends (the next entry, or the trailer). */
  endAt(position: number): number;
  /** The position of the entry starting at `offset`, or -1. */
  positionAt(offset: number): number;
  /**
   * The objects reachable from the commit at `position` when it has a bitmap (do not modify; read
   * it before the next call: see BitmapIndex.reachable).
   */
  reachable(position: number): Bits | undefined;
  /** The commit's bitmap entry, or -1 (see BitmapIndex.entryOf). */
  entryOf(position: number): number;
  /** git's name hash of the object at `position` (from the bitmap's name-hash cache, else 0). */
  nameHashAt(position: number): number;
}

/** A pack's reverse index and id lookups, in the shape the store keeps its packs. */
export interface PackOrder {
  index: PackIndex;
  /** The idx position of each entry, in pack order. */
  positions: Uint32Array;
  size: number;
  source: PackSource;
}

/** Joins a pack's order and its parsed bitmap index. */
export function bitmappedPack(pack: PackOrder, bitmaps: BitmapIndex): BitmappedPack {
  const n = pack.index.count;
  const { positions, index } = pack;
  // where entries start, in pack order, through the index: no table of its own (4 bytes an
  // object, held as long as the pack), as git reads them through its mapped .rev and .idx
  const offsetAt = (p: number) => index.offsetAt(positions[p]!);
  /** The pack-order position of the entry starting at `offset`, or -1. */
  const positionAt = (offset: number) => entryNumberAt(pack, offset);
  // an id's pack-order position is found from its offset, not from a table from idx order to
  // pack order (4 bytes an object): serving by bitmaps looks up few ids
  return {
    bitmaps,
    count: n,
    size: pack.size,
    source: pack.source,
    position(oid) {
      const i = index.find(oid);
      return i < 0 ? -1 : positionAt(index.offsetAt(i));
    },
    positionRaw(bytes, at) {
      const i = index.findRaw(bytes, at);
      return i < 0 ? -1 : positionAt(index.offsetAt(i));
    },
    oidAt: (p) => index.oidAt(positions[p]!),
    offsetAt,
    endAt: (p) => (p + 1 < n ? offsetAt(p + 1) : pack.size - 20),
    positionAt,
    reachable: (p) => bitmaps.reachable(positions[p]!),
    entryOf: (p) => bitmaps.entryOf(positions[p]!),
    nameHashAt: (p) => bitmaps.nameHashAt(positions[p]!),
  };
}
