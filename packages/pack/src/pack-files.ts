/**
 * The packs of an objects directory (`objects/pack/pack-H.pack`, each with its version 2
 * `pack-H.idx`) and reads of their bytes. With an fs whose `open()` gives positional reads
 * (Node's FileHandle), a pack is read at offsets, through a cache of aligned pages; a pack that
 * fits in half the page budget, or any pack without such an fs, is read whole once, and later
 * reads are views of it.
 */
import { inflateOne } from '#zlib';
import { decodeEntryHeader, type EntryHeader } from './entry-header.js';
import { PackError } from './errors.js';
import type { FileHandleLike } from './fs-like.js';
import { PackIndex } from './idx.js';
import type { PackIndexReader } from './idx-read.js';
import type { ObjectId } from './object.js';
import { ObjectCache } from './object-cache.js';
import { bytesRead, isEnoent, type StoreFiles } from './store-files.js';
import type { PackSource } from './stored-location.js';

/**
 * Pack page size for positional reads. Small: the entries a walk reads (trees, and the bases of
 * their deltas) lie scattered over the pack, and every byte of a page read stays in memory for
 * as long as the page is cached.
 */
const PAGE = 16 * 1024;
/** Copies out of a pack from this length on are read straight into their buffer, past the pages. */
const DIRECT_COPY = 4 * PAGE;
/** Pages read at once when reads go through a pack in order (see #page). */
const READ_AHEAD = 16;
/** The least page cache (a budget below it gets it). */
const MIN_PAGE_CACHE = 2 << 20;
/** Bytes read to decode an entry header: the longest one (a REF_DELTA's) fits. */
const HEADER_READ = 32;

/** Bases walked through for one object past which its chain is taken for a cycle. */
export const MAX_CHAIN_STEPS = 100_000;

/** Inflates an entry's zlib stream of `size` bytes, which must end within `compressed`. */
export function inflateEntry(compressed: Uint8Array, size: number): Uint8Array {
  const r = inflateOne(compressed, size, true);
  if (r.kind !== 'done') throw new PackError('OBJECT_CORRUPT', 'truncated entry');
  return r.data;
}

/** What a store over pack files lends the reads only serving needs (stored-reads.ts, `ObjectStore.storedPacks`). */
export interface StoredPacks {
  readonly packs: PackFiles;
  /** The pack and offset of a packed object (the pack directory listed first), else undefined. */
  locate(oid: ObjectId): Promise<{ pack: LoadedPack; offset: number } | undefined>;
}

export interface LoadedPack {
  name: string;
  index: PackIndex;
  /** The idx position of each entry in pack order (by offset: git's reverse index). */
  positions: Uint32Array;
  size: number;
  handle?: FileHandleLike & Pick<Required<FileHandleLike>, 'read'>;
  bytes?: Uint8Array;
  /** Set while the whole pack is being read. */
  loading?: Promise<Uint8Array>;
  /** Whether some entry is an OFS_DELTA (found out on the first `findPack` that matches). */
  ofsDeltas?: boolean;
  /** Reads of its entries at write time (see StoredLocation). */
  source: PackSource;
  /** Tells its pages apart from other packs' in the page cache. */
  serial: number;
  /**
   * The object type of each entry once worked out (by entry number in offset order; 0 unknown):
   * a delta's is its chain's, which would otherwise take a walk down the chain each time.
   */
  types?: Uint8Array;
}

export class PackFiles {
  readonly #files: StoreFiles;
  /** The pack directory. */
  readonly dir: string;
  #packs: LoadedPack[] = [];
  #names = new Set<string>();
  #scanned = false;
  #scanning: Promise<void> | undefined;
  /** Pages of packs read at positions, keyed by pack serial and page index (see #page). */
  readonly #pages: ObjectCache<number, Uint8Array>;
  readonly #maxPages: number;
  #serials = 0;
  /** The key of the last page read, and how many misses in a row followed the one before (see #page). */
  #lastRead = -1;
  #run = 0;
  /** Bytes of packs held whole (small packs, read in one go): at most half the page cache budget. */
  #wholeBytes = 0;
  /** Buffers of borrowed stored-pack streams, kept for the next (see `stream`). */
  /** Buffers of borrowed pieces of stored packs sent as they are (stored-reads.ts), kept for the next. */
  readonly streamSpares: Uint8Array[] = [];

  /** Reads an `.idx` piece by piece into columns (the `indexReader` option of FsObjectStore). */
  readonly #readPiecewise: PackIndexReader | undefined;

  constructor(files: StoreFiles, dir: string, pageCacheBytes: number, indexReader?: PackIndexReader) {
    this.#files = files;
    this.dir = dir;
    this.#readPiecewise = indexReader;
    this.#maxPages = Math.max(MIN_PAGE_CACHE / PAGE, Math.floor(pageCacheBytes / PAGE));
    this.#pages = new ObjectCache(this.#maxPages * PAGE, (page) => page.length);
  }

  /** Whether the directory has been listed once. */
  get scanned(): boolean {
    return this.#scanned;
  }

  get list(): readonly LoadedPack[] {
    return this.#packs;
  }

  has(name: string): boolean {
    return this.#names.has(name);
  }

  /** Re-reads the pack directory (packs added by others, e.g. real git). */
  async refresh(): Promise<void> {
    if (this.#scanning) return this.#scanning;
    this.#scanning = this.#scan().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  async ensureScanned(): Promise<void> {
    if (!this.#scanned) await this.refresh();
  }

  async #scan(): Promise<void> {
    let names: string[];
    try {
      names = await this.#files.fs.readdir(this.dir);
    } catch (error) {
      if (isEnoent(error)) names = [];
      else throw new PackError('STORE_IO', 'cannot list packs', { cause: error });
    }
    const present = new Set(names);
    for (const n of names) {
      if (!n.startsWith('pack-') || !n.endsWith('.idx')) continue;
      const base = n.slice(0, -4);
      if (this.#names.has(base) || !present.has(`${base}.pack`)) continue;
      await this.#load(base);
    }
    this.#scanned = true;
  }

  async #load(base: string): Promise<LoadedPack> {
    const path = `${this.dir}/${base}.idx`;
    const [index, st] = await Promise.all([this.#readIndex(path), this.#files.fs.stat(`${this.dir}/${base}.pack`)]);
    return this.add(base, index, st.size);
  }

  /**
   * A pack's index, in columns when an index reader is given and the fs reads at positions (see
   * idx-read.ts), else whole.
   */
  async #readIndex(path: string): Promise<PackIndex> {
    const readPiecewise = this.#readPiecewise;
    const handle = readPiecewise && (await this.#files.openForRead(path));
    if (!handle) return new PackIndex(await this.#files.readBytes(path), { verify: true });
    let size: number;
    try {
      size = (await this.#files.fs.stat(path)).size;
    } catch (error) {
      await handle.close();
      throw error;
    }
    // the reader closes the handle, or leaves it open to its index (closed by `closeFile`)
    return readPiecewise(handle, size, path);
  }

  /** Makes a pack whose index is parsed readable. */
  add(base: string, index: PackIndex, size: number): LoadedPack {
    // the entries in offset order are made on the first read that needs them: a pack just
    // written and not read (a one-shot index-pack) never pays for them
    let positions: Uint32Array | undefined;
    const pack: LoadedPack = {
      name: base,
      index,
      get positions() {
        positions ??= offsetOrder(index, size);
        return positions;
      },
      size,
      source: {
        readInto: (position, into, options) => this.#readInto(pack, position, into, options?.direct === true),
      },
      serial: this.#serials++,
    };
    this.#packs.push(pack);
    this.#names.add(base);
    return pack;
  }

  /** Stops reading a pack (before its files go); false when it was not read. */
  async forget(name: string): Promise<boolean> {
    const i = this.#packs.findIndex((p) => p.name === name);
    if (i < 0) return false;
    const [pack] = this.#packs.splice(i, 1);
    this.#names.delete(name);
    if (pack?.loading) this.#wholeBytes -= pack.size;
    // its pages go with the others (forgetting a pack is rare; keys are not by name)
    this.#pages.clear();
    await pack?.handle?.close().catch(() => undefined);
    await pack?.index.closeFile?.().catch(() => undefined);
    return true;
  }

  /** The pack holding `oid` and its entry's offset there (among the packs listed so far). */
  find(oid: ObjectId): { pack: LoadedPack; offset: number } | undefined {
    for (const pack of this.#packs) {
      const i = pack.index.find(oid);
      if (i >= 0) return { pack, offset: pack.index.offsetAt(i) };
    }
    return undefined;
  }

  /** Where the entry at `offset` ends: the next entry, or the trailer. */
  entryEnd(pack: LoadedPack, offset: number): number {
    const { index, positions } = pack;
    let lo = 0;
    let hi = positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (index.offsetAt(positions[mid]!) <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo < positions.length ? index.offsetAt(positions[lo]!) : pack.size - 20;
  }

  /** The id of the object whose entry starts at `offset` (an OFS_DELTA's base). */
  oidAtOffset(pack: LoadedPack, offset: number): ObjectId {
    const n = entryNumberAt(pack, offset);
    if (n < 0) throw new PackError('OBJECT_CORRUPT', `no entry at offset ${offset} in ${pack.name}.pack`);
    return pack.index.oidAt(pack.positions[n]!);
  }

  /** The bytes read to decode the header of the entry at `offset`, ending at `end`. */
  headerRange(offset: number, end: number): number {
    return Math.min(HEADER_READ, end - offset);
  }

  /** Decodes the header of the entry at `offset` from `head`, its first bytes. */
  decodeHeader(pack: LoadedPack, offset: number, head: Uint8Array): EntryHeader {
    const header = decodeEntryHeader(head, 0, offset);
    if (!header) throw new PackError('OBJECT_CORRUPT', `entry header cut short in ${pack.name}.pack`, { offset });
    return header;
  }

  /** The header of the entry at `offset`, which ends at `end`. */
  async header(pack: LoadedPack, offset: number, end: number): Promise<EntryHeader> {
    return this.decodeHeader(pack, offset, await this.readAt(pack, offset, this.headerRange(offset, end)));
  }

  /**
   * `length` bytes at `position` without awaiting: a view of a pack held whole, or with `pages`,
   * of a page in the cache (a copy when they lie across two); undefined when they need a read.
   */
  view(pack: LoadedPack, position: number, length: number, pages: boolean): Uint8Array | undefined {
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    if (pack.bytes) return pack.bytes.subarray(position, position + length);
    if (!pages || !pack.handle || length === 0) return undefined;
    const first = Math.floor(position / PAGE);
    const last = Math.floor((position + length - 1) / PAGE);
    if (last - first > 1) return undefined;
    const page = this.#pages.get(pack.serial * 2 ** 32 + first);
    if (!page) return undefined;
    const from = position - first * PAGE;
    if (first === last) return page.subarray(from, from + length);
    // across two cached pages: a copy
    const next = this.#pages.get(pack.serial * 2 ** 32 + last);
    if (!next) return undefined;
    const out = new Uint8Array(length);
    out.set(page.subarray(from));
    out.set(next.subarray(0, length - (page.length - from)), page.length - from);
    return out;
  }

  /** `length` bytes of a pack at `position` (a view: not to be written to). */
  async readAt(pack: LoadedPack, position: number, length: number): Promise<Uint8Array> {
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    if (pack.bytes) return pack.bytes.subarray(position, position + length);
    // a pack that fits in half the page budget is read whole once: one read instead of many
    // page misses, and every later read is a view
    if (this.#heldWhole(pack)) {
      if (!pack.loading) {
        this.#wholeBytes += pack.size;
        // a failed read is not kept: the next read tries again
        pack.loading = this.#readWhole(pack).catch((error: unknown) => {
          pack.loading = undefined;
          this.#wholeBytes -= pack.size;
          throw error;
        });
      }
      return (await pack.loading).subarray(position, position + length);
    }
    if (!pack.handle) pack.handle = await this.#files.openForRead(this.#path(pack));
    if (!pack.handle) {
      pack.bytes = await this.#files.readBytes(this.#path(pack));
      return pack.bytes.subarray(position, position + length);
    }
    // small reads go through a cache of aligned pages: entries are read in clusters
    const first = Math.floor(position / PAGE);
    const last = Math.floor((position + length - 1) / PAGE);
    if (length === 0) return new Uint8Array(0);
    if (last - first > 1) return this.#readDirect(pack, position, length);
    const a = await this.#page(pack, first);
    const from = position - first * PAGE;
    if (first === last) return a.subarray(from, from + length);
    const b = await this.#page(pack, last);
    const out = new Uint8Array(length);
    out.set(a.subarray(from));
    out.set(b.subarray(0, length - (a.length - from)), a.length - from);
    return out;
  }

  /**
   * Whether `pack` is (or is to be) read whole once, later reads being views of it: a pack that
   * fits in half the page budget, which one read brings instead of many page misses.
   */
  #heldWhole(pack: LoadedPack): boolean {
    return (
      pack.bytes !== undefined ||
      (!pack.handle && (pack.loading !== undefined || this.#wholeBytes + pack.size <= (this.#maxPages * PAGE) / 2))
    );
  }

  #path(pack: LoadedPack): string {
    return `${this.dir}/${pack.name}.pack`;
  }

  /**
   * Copies a range of a pack into `into`: from the page cache when its pages are there, else (a
   * long range) by a positional read straight into it. The pages such reads would bring are not
   * cached: what is copied out (a pack being sent) is read once, and would only push out what
   * walks read again. `direct`: short copies too are read straight into `into` (their caller
   * batches its reads).
   */
  async #readInto(pack: LoadedPack, position: number, into: Uint8Array, direct: boolean): Promise<void> {
    const length = into.length;
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    if (length === 0) return;
    // a pack held whole (or small enough to be) is read through readAt, which decides
    if (this.#heldWhole(pack)) {
      into.set(await this.readAt(pack, position, length));
      return;
    }
    if (!pack.handle) pack.handle = await this.#files.openForRead(this.#path(pack));
    if (!pack.handle) {
      into.set(await this.readAt(pack, position, length));
      return;
    }
    const cached = this.view(pack, position, length, true);
    if (cached) into.set(cached);
    // a short copy goes through the pages: a pack written from stored entries copies them one by
    // one, mostly in pack order, where a read of its own for each would be a read per object
    else if (length < DIRECT_COPY && !direct) into.set(await this.readAt(pack, position, length));
    else await this.#readDirect(pack, position, length, into);
  }

  async #readWhole(pack: LoadedPack): Promise<Uint8Array> {
    const bytes = await this.#files.readBytes(this.#path(pack));
    if (bytes.length !== pack.size) {
      throw new PackError('OBJECT_CORRUPT', `${pack.name}.pack changed size while being read`);
    }
    pack.bytes = bytes;
    return bytes;
  }

  async #page(pack: LoadedPack, index: number): Promise<Uint8Array> {
    const key = pack.serial * 2 ** 32 + index;
    const hit = this.#pages.get(key);
    if (hit) return hit;
    const start = index * PAGE;
    // the third miss in a row of pages that follow each other: reads go through the pack in
    // order (a walk of every object, the headers of a pack being copied), so the next pages are
    // read with this one, in one read, as long as none of them is cached (a scattered walk, whose
    // misses follow each other now and then, reads one page at a time)
    this.#run = this.#lastRead === key - 1 ? this.#run + 1 : 0;
    let count = 1;
    if (this.#run >= 2) {
      const pages = Math.ceil(pack.size / PAGE);
      while (count < READ_AHEAD && index + count < pages && !this.#pages.has(key + count)) count++;
    }
    const bytes = await this.#readDirect(pack, start, Math.min(count * PAGE, pack.size - start));
    this.#lastRead = key + count - 1;
    if (count === 1) {
      this.#pages.set(key, bytes);
      return bytes;
    }
    // each page a buffer of its own (copied out), so that the cache drops them one by one
    for (let k = count - 1; k > 0; k--) this.#pages.set(key + k, bytes.slice(k * PAGE, (k + 1) * PAGE));
    const page = bytes.slice(0, PAGE);
    this.#pages.set(key, page);
    return page;
  }

  async #readDirect(pack: LoadedPack, position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const out = into && into.length >= length ? into.subarray(0, length) : new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const n = bytesRead(await pack.handle!.read(out, got, length - got, position + got));
      if (n <= 0) throw new PackError('OBJECT_CORRUPT', `${pack.name}.pack is shorter than its index says`);
      got += n;
    }
    return out;
  }

  /**
   * Up to `length` bytes of a pack at `position`: a copy, the caller's to keep, or with `into`
   * (a borrowed piece) read into it, or a view of the pack when it is held whole.
   */
  async copyOut(pack: LoadedPack, position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const n = Math.min(length, pack.size - position);
    if (!pack.bytes && !pack.handle) pack.handle = await this.#files.openForRead(this.#path(pack));
    // positional reads fill a new buffer (or the one given); views of a pack held whole are
    // copied unless borrowed
    if (!pack.bytes && pack.handle) return this.#readDirect(pack, position, n, into);
    const view = await this.readAt(pack, position, n);
    return into ? view : view.slice();
  }

  /** Closes open pack files. */
  async close(): Promise<void> {
    for (const p of this.#packs) {
      const h = p.handle;
      p.handle = undefined;
      await h?.close();
      // an index reading from its file reads what it needs first: the store stays usable (an
      // index that cannot fails its later lookups with a code; the other files close all the same)
      await p.index.closeFile?.().catch(() => undefined);
    }
  }
}

/**
 * The idx position of each of a pack's entries, in increasing offset order (git's reverse index),
 * for a pack of `size` bytes. Internal to the package (exported for its test).
 */
function offsetsOf(index: Pick<PackIndex, 'offsetAt'>, n: number): Uint32Array {
  const offsets = new Uint32Array(n);
  for (let i = 0; i < n; i++) offsets[i] = index.offsetAt(i);
  return offsets;
}

/**
 * One stable counting-sort pass over 16 bits of the offsets (from bit `shift`): the entries in
 * `from` order (every entry in index order when null) written to `to` in the order of those bits.
 * `counts` is zero on entry. Each loop is a function of its own, for the reason given above.
 */
function radixPass(
  offsets: Uint32Array,
  from: Uint32Array | null,
  to: Uint32Array,
  counts: Uint32Array,
  shift: number,
): void {
  countDigits(offsets, counts, shift);
  prefixSums(counts);
  if (from === null) scatterIndexOrder(offsets, to, counts, shift);
  else scatterFrom(offsets, from, to, counts, shift);
}

function countDigits(offsets: Uint32Array, counts: Uint32Array, shift: number): void {
  const n = offsets.length;
  for (let i = 0; i < n; i++) counts[((offsets[i]! >>> shift) & 0xffff) + 1]!++;
}

function prefixSums(counts: Uint32Array): void {
  for (let k = 0; k < 65536; k++) counts[k + 1]! += counts[k]!;
}

function scatterIndexOrder(offsets: Uint32Array, to: Uint32Array, counts: Uint32Array, shift: number): void {
  const n = offsets.length;
  for (let i = 0; i < n; i++) to[counts[(offsets[i]! >>> shift) & 0xffff]!++] = i;
}

function scatterFrom(
  offsets: Uint32Array,
  from: Uint32Array,
  to: Uint32Array,
  counts: Uint32Array,
  shift: number,
): void {
  const n = offsets.length;
  for (let j = 0; j < n; j++) {
    const i = from[j]!;
    to[counts[(offsets[i]! >>> shift) & 0xffff]!++] = i;
  }
}

/**
 * The number of the entry starting at `offset` in a pack's offset order (`positions`: the idx
 * position of each entry, by offset), or -1 when no entry starts there.
 */
export function entryNumberAt(pack: { index: PackIndex; positions: Uint32Array }, offset: number): number {
  const { index, positions } = pack;
  let lo = 0;
  let hi = positions.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = index.offsetAt(positions[mid]!);
    if (at === offset) return mid;
    if (at < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

export function offsetOrder(index: Pick<PackIndex, 'count' | 'offsetAt'>, size: number): Uint32Array {
  const n = index.count;
  const order = new Uint32Array(n);
  if (size <= 2 ** 32) {
    // offsets fit 32 bits: a radix sort, two stable passes of 16 bits each (low half, then high
    // half), linear in the entries where a comparison sort is not; this runs on the first read
    // that needs pack order, inside the first request a server answers from the pack
    // each pass a function of its own: a loop this long is compiled while it runs (on-stack
    // replacement), and one function holding every pass was compiled again at each next pass
    const offsets = offsetsOf(index, n);
    const byLow = new Uint32Array(n);
    const counts = new Uint32Array(65537);
    radixPass(offsets, null, byLow, counts, 0);
    counts.fill(0);
    radixPass(offsets, byLow, order, counts, 16);
    return order;
  }
  const offs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    order[i] = i;
    offs[i] = index.offsetAt(i);
  }
  order.sort((a, b) => offs[a]! - offs[b]!);
  return order;
}
