/**
 * An object store over a standard `.git/objects` directory (gitrepository-layout):
 *
 *   objects/xx/yyyy…            loose objects: zlib("<type> <size>\0<data>")
 *   objects/pack/pack-H.pack    packs, each with its pack-H.idx (version 2)
 *
 * The fs is injected in the shape isomorphic-git uses (Node's `fs.promises`, lightning-fs,
 * OPFS adapters). When it has `open()` with positional `read()` (Node's FileHandle), packs are
 * read at offsets; otherwise a pack is read whole once. New packs are written `.pack` first,
 * then `.idx`, each through a temporary file and a rename, as git does; loose objects likewise.
 * An incoming pack (`beginPack`, used by `importPack`) is written to `objects/pack/tmp_pack_*`
 * as it arrives and renamed into place once verified. A push's objects go to a quarantine,
 * `objects/tmp_objdir-incoming-*` (`beginQuarantine`, see quarantine.ts), until it is accepted.
 */
import { deflate, inflateAll, inflateOne } from '#zlib';
import { applyDelta } from './delta.js';
import { ChainTips, DEFAULT_MAX_REBUILD_BYTES, rebuildBudget } from './delta-chain-cache.js';
import { PackError } from './errors.js';
import type { IndexEntry } from './idx.js';
import { PackIndex, writeIdx } from './idx.js';
import {
  bytesToHex,
  CODE_TYPES,
  concatBytes,
  type GitObject,
  hashObjectSync,
  isObjectId,
  isObjectType,
  type ObjectId,
  type ObjectType,
  objectHeader,
} from './object.js';
import { ObjectCache } from './object-cache.js';
import { DirectoryQuarantine } from './quarantine.js';
import type { ObjectStore, PackFile, PackSpool, Quarantine, RawEntry, StoredPack } from './store.js';
import type { PackSource, StoredLocation } from './stored-location.js';

export interface FileHandleLike {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number } | number>;
  /** Sequential writes (Node's FileHandle), used to write packs without joining their chunks. */
  write?(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position?: number,
  ): Promise<{ bytesWritten: number } | number>;
  close(): Promise<void>;
}

/** The promise-style fs this store needs (a subset of Node's `fs.promises` and lightning-fs). */
export interface FsPromises {
  readFile(path: string, options?: unknown): Promise<Uint8Array | string>;
  writeFile(path: string, data: Uint8Array, options?: unknown): Promise<void>;
  mkdir(path: string, options?: unknown): Promise<unknown>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<{ size: number }>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Optional: removes an empty directory (an emptied quarantine's); without it, one stays behind. */
  rmdir?(path: string): Promise<void>;
  /** Optional positional reads (Node's `open` + FileHandle.read). */
  open?(path: string, flags: string): Promise<FileHandleLike>;
}

export type FsLike = FsPromises | { promises: FsPromises };

interface LoadedPack {
  name: string;
  index: PackIndex;
  /** Sorted entry offsets (for entry ends) and the idx position of each. */
  offsets: Float64Array;
  positions: Uint32Array;
  size: number;
  handle?: FileHandleLike;
  bytes?: Uint8Array;
  /** Set while the whole pack is being read. */
  loading?: Promise<Uint8Array>;
  /** Whether some entry is an OFS_DELTA (found out on the first `findPack` that matches). */
  ofsDeltas?: boolean;
  /** Reads of its entries at write time (see StoredLocation). */
  source: PackSource;
  /** Tells its pages apart from other packs' in the page cache. */
  serial: number;
}

interface EntryInfo {
  /** 1-4 whole, 6 ofs, 7 ref. */
  code: number;
  size: number;
  dataOffset: number;
  end: number;
  baseOffset?: number;
  baseOid?: ObjectId;
}

function isEnoent(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function isEexist(error: unknown): boolean {
  return (error as { code?: unknown })?.code === 'EEXIST';
}

/** A plain Uint8Array view (a Node Buffer's `slice` would not copy). */
function toBytes(data: Uint8Array | string): Uint8Array {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  return data.constructor === Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

let tmpCounter = 0;

/** Pack page size for positional reads. */
const PAGE = 256 * 1024;
/** The pieces a stored pack goes out in, and how many spare buffers of that size a store keeps. */
const STREAM_PIECE = 1 << 20;
const MAX_STREAM_SPARES = 4;

/** Size of the blocks a pack spool gathers appends in. */
const SPOOL_BLOCK = 256 * 1024;
/**
 * Full blocks of finished spools, reused by the next ones: a new block is memory to zero and
 * fault in (2 MiB for a 2 MiB pack), and external memory that brings GC forward. Bounded, so at
 * most 2 MiB stay behind.
 */
const spareBlocks: Uint8Array[] = [];
const SPARE_BLOCKS_MAX = 8;

function takeBlock(): Uint8Array {
  return spareBlocks.pop() ?? new Uint8Array(SPOOL_BLOCK);
}

/** Takes back a block no longer read nor written (only whole ones of the spool's size). */
function giveBlock(block: Uint8Array): void {
  if (block.length !== SPOOL_BLOCK || block.byteOffset !== 0 || block.buffer.byteLength !== SPOOL_BLOCK) return;
  if (spareBlocks.length < SPARE_BLOCKS_MAX && !spareBlocks.includes(block)) spareBlocks.push(block);
}

/** A block of a spool held in memory. */
interface Segment {
  at: number;
  bytes: Uint8Array;
  /** On file. */
  written: boolean;
  /** No longer read from memory. */
  dropped: boolean;
}

export class FsObjectStore implements ObjectStore {
  readonly gitDir: string;
  readonly #fs: FsPromises;
  #packs: LoadedPack[] = [];
  #packNames = new Set<string>();
  #scanned = false;
  #scanning: Promise<void> | undefined;
  readonly #cache: ObjectCache<string, GitObject>;
  readonly #cacheLimit: number;
  /** Objects too large for `#cache`: the latest kept, so that reading a delta chain in order is linear. */
  readonly #tips: ChainTips<ObjectId, GitObject>;
  readonly #maxRebuild: number;
  /** Pages of packs read at positions, keyed by pack serial and page index (see #pageKey). */
  readonly #pages: ObjectCache<number, Uint8Array>;
  #serials = 0;
  /** Buffers of borrowed stored-pack streams, kept for the next (see findPack). */
  readonly #streamBuffers: Uint8Array[] = [];
  readonly #maxPages: number;
  /** Bytes of packs held whole (small packs, read in one go): at most half the page cache budget. */
  #wholeBytes = 0;

  /**
   * `cacheBytes`: objects kept (default 32 MiB; as much again for the latest objects rebuilt from
   * deltas that are too large for it, the last one always). `maxRebuildBytes`: bytes one read may inflate and rebuild along a
   * delta chain (default 16 GiB), past which it fails with PACK_LIMIT_INFLATED.
   */
  constructor(
    fs: FsLike,
    gitDir: string,
    options: { cacheBytes?: number; pageCacheBytes?: number; maxRebuildBytes?: number } = {},
  ) {
    this.#fs = 'promises' in fs ? fs.promises : fs;
    this.gitDir = gitDir.replace(/\/+$/, '');
    this.#cacheLimit = options.cacheBytes ?? 32 * 2 ** 20;
    this.#cache = new ObjectCache(this.#cacheLimit, (o) => o.data.length);
    this.#tips = new ChainTips(this.#cacheLimit, (o) => o.data.length);
    this.#maxRebuild = options.maxRebuildBytes ?? DEFAULT_MAX_REBUILD_BYTES;
    this.#maxPages = Math.max(4, Math.floor((options.pageCacheBytes ?? 64 * 2 ** 20) / PAGE));
    this.#pages = new ObjectCache(this.#maxPages * PAGE, (page) => page.length);
  }

  get #objects(): string {
    return `${this.gitDir}/objects`;
  }

  /** A quarantine in `objects/tmp_objdir-incoming-*` (see quarantine.ts). */
  async beginQuarantine(): Promise<Quarantine> {
    const fs = this.#fs;
    return DirectoryQuarantine.create({
      fs,
      objectsDir: this.#objects,
      store: this,
      open: (dir) => new FsObjectStore(fs, dir),
      hasPack: async (name) => {
        await this.refresh();
        return this.#packNames.has(name);
      },
      refresh: () => this.refresh(),
      forgetPack: async (name) => {
        const i = this.#packs.findIndex((p) => p.name === name);
        if (i < 0) return;
        const [pack] = this.#packs.splice(i, 1);
        this.#packNames.delete(name);
        if (pack?.loading) this.#wholeBytes -= pack.size;
        // its pages go with the others (forgetting a pack is rare; keys are not by name)
        this.#pages.clear();
        this.#cache.clear();
        await pack?.handle?.close().catch(() => undefined);
      },
    });
  }

  #loosePath(oid: ObjectId): string {
    return `${this.#objects}/${oid.slice(0, 2)}/${oid.slice(2)}`;
  }

  /** Re-reads the pack directory (packs added by others, e.g. real git). */
  async refresh(): Promise<void> {
    if (this.#scanning) return this.#scanning;
    this.#scanning = this.#scan().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  async #scan(): Promise<void> {
    let names: string[];
    try {
      names = await this.#fs.readdir(`${this.#objects}/pack`);
    } catch (error) {
      if (isEnoent(error)) names = [];
      else throw new PackError('STORE_IO', 'cannot list packs', { cause: error });
    }
    const present = new Set(names);
    for (const n of names) {
      if (!n.startsWith('pack-') || !n.endsWith('.idx')) continue;
      const base = n.slice(0, -4);
      if (this.#packNames.has(base) || !present.has(`${base}.pack`)) continue;
      await this.#loadPack(base);
    }
    this.#scanned = true;
  }

  async #loadPack(base: string): Promise<LoadedPack> {
    const dir = `${this.#objects}/pack`;
    const [idx, st] = await Promise.all([
      this.#fs.readFile(`${dir}/${base}.idx`),
      this.#fs.stat(`${dir}/${base}.pack`),
    ]);
    return this.#addPack(base, new PackIndex(toBytes(idx), { verify: true }), st.size);
  }

  /** Makes a pack whose index is parsed readable. */
  #addPack(base: string, index: PackIndex, size: number): LoadedPack {
    const n = index.count;
    const order = new Uint32Array(n);
    const sorted = new Float64Array(n);
    if (n < 2 ** 21 && size < 2 ** 32) {
      // offset and idx position packed in one number (offset above 21 bits of position): the
      // typed array's own numeric sort, no comparator
      for (let i = 0; i < n; i++) sorted[i] = index.offsetAt(i) * 2 ** 21 + i;
      sorted.sort();
      for (let i = 0; i < n; i++) {
        const key = sorted[i]!;
        const position = key % 2 ** 21;
        order[i] = position;
        sorted[i] = (key - position) / 2 ** 21;
      }
    } else {
      const offs = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        order[i] = i;
        offs[i] = index.offsetAt(i);
      }
      order.sort((a, b) => offs[a]! - offs[b]!);
      for (let i = 0; i < n; i++) sorted[i] = offs[order[i]!]!;
    }
    const pack: LoadedPack = {
      name: base,
      index,
      offsets: sorted,
      positions: order,
      size,
      source: { readInto: (position, into) => this.#readInto(pack, position, into) },
      serial: this.#serials++,
    };
    this.#packs.push(pack);
    this.#packNames.add(base);
    return pack;
  }

  async #ensureScanned(): Promise<void> {
    if (!this.#scanned) await this.refresh();
  }

  async #readAt(pack: LoadedPack, position: number, length: number): Promise<Uint8Array> {
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    if (pack.bytes) return pack.bytes.subarray(position, position + length);
    // a pack that fits in half the page budget is read whole once: one read instead of many
    // page misses, and every later read is a view
    if (!pack.handle && (pack.loading || this.#wholeBytes + pack.size <= (this.#maxPages * PAGE) / 2)) {
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
    if (!pack.handle && this.#fs.open) {
      pack.handle = await this.#fs.open(`${this.#objects}/pack/${pack.name}.pack`, 'r');
    }
    if (!pack.handle) {
      pack.bytes = toBytes(await this.#fs.readFile(`${this.#objects}/pack/${pack.name}.pack`));
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
   * Copies a range of a pack into `into`: small ranges through the page cache, large ones by a
   * positional read straight into it.
   */
  async #readInto(pack: LoadedPack, position: number, into: Uint8Array): Promise<void> {
    const length = into.length;
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    if (!pack.bytes && !pack.handle && !pack.loading && length > PAGE && this.#fs.open) {
      pack.handle = await this.#fs.open(`${this.#objects}/pack/${pack.name}.pack`, 'r');
    }
    if (!pack.bytes && pack.handle && length > PAGE) {
      await this.#readDirect(pack, position, length, into);
      return;
    }
    into.set(await this.#readAt(pack, position, length));
  }

  async #readWhole(pack: LoadedPack): Promise<Uint8Array> {
    const bytes = toBytes(await this.#fs.readFile(`${this.#objects}/pack/${pack.name}.pack`));
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
    const page = await this.#readDirect(pack, start, Math.min(PAGE, pack.size - start));
    this.#pages.set(key, page);
    return page;
  }

  async #readDirect(pack: LoadedPack, position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const out = into && into.length >= length ? into.subarray(0, length) : new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const r = await pack.handle!.read(out, got, length - got, position + got);
      const n = typeof r === 'number' ? r : r.bytesRead;
      if (n <= 0) throw new PackError('OBJECT_CORRUPT', `${pack.name}.pack is shorter than its index says`);
      got += n;
    }
    return out;
  }

  #entryEnd(pack: LoadedPack, offset: number): number {
    const o = pack.offsets;
    let lo = 0;
    let hi = o.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (o[mid]! <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo < o.length ? o[lo]! : pack.size - 20;
  }

  async #entry(pack: LoadedPack, offset: number): Promise<EntryInfo> {
    const end = this.#entryEnd(pack, offset);
    return this.#parseEntry(pack, offset, end, await this.#readAt(pack, offset, Math.min(32, end - offset)));
  }

  /** A view of a pack held whole, without awaiting (undefined when the pack is read by pages). */
  #view(pack: LoadedPack, position: number, length: number): Uint8Array | undefined {
    if (!pack.bytes) return undefined;
    if (position < 0 || position + length > pack.size) {
      throw new PackError('OBJECT_CORRUPT', `read outside ${pack.name}.pack`);
    }
    return pack.bytes.subarray(position, position + length);
  }

  #parseEntry(pack: LoadedPack, offset: number, end: number, head: Uint8Array): EntryInfo {
    let p = 0;
    let c = head[p++]!;
    const code = (c >> 4) & 7;
    let size = c & 15;
    let shift = 4;
    while (c & 0x80) {
      if (p >= head.length) throw new PackError('OBJECT_CORRUPT', 'bad entry header');
      c = head[p++]!;
      size += (c & 0x7f) * 2 ** shift;
      shift += 7;
    }
    const info: EntryInfo = { code, size, dataOffset: 0, end };
    if (code === 6) {
      c = head[p++]!;
      let rel = c & 0x7f;
      while (c & 0x80) {
        if (p >= head.length) throw new PackError('OBJECT_CORRUPT', 'bad delta offset');
        c = head[p++]!;
        rel = (rel + 1) * 128 + (c & 0x7f);
      }
      info.baseOffset = offset - rel;
    } else if (code === 7) {
      if (p + 20 > head.length) throw new PackError('OBJECT_CORRUPT', 'bad delta base id');
      info.baseOid = bytesToHex(head, p, p + 20);
      p += 20;
    } else if (!CODE_TYPES[code]) {
      throw new PackError('OBJECT_CORRUPT', `bad entry type ${code} in ${pack.name}.pack`);
    }
    info.dataOffset = offset + p;
    return info;
  }

  async #inflateEntry(pack: LoadedPack, info: EntryInfo): Promise<Uint8Array> {
    return this.#inflate(await this.#readAt(pack, info.dataOffset, info.end - info.dataOffset), info);
  }

  #inflate(compressed: Uint8Array, info: EntryInfo): Uint8Array {
    const r = inflateOne(compressed, info.size, true);
    if (r.kind !== 'done') throw new PackError('OBJECT_CORRUPT', 'truncated entry');
    return r.data;
  }

  #oidAtOffset(pack: LoadedPack, offset: number): ObjectId {
    const o = pack.offsets;
    let lo = 0;
    let hi = o.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (o[mid] === offset) return pack.index.oidAt(pack.positions[mid]!);
      if (o[mid]! < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    throw new PackError('OBJECT_CORRUPT', `no entry at offset ${offset} in ${pack.name}.pack`);
  }

  #find(oid: ObjectId): { pack: LoadedPack; offset: number } | undefined {
    for (const pack of this.#packs) {
      const i = pack.index.find(oid);
      if (i >= 0) return { pack, offset: pack.index.offsetAt(i) };
    }
    return undefined;
  }

  async #locate(oid: ObjectId): Promise<{ pack: LoadedPack; offset: number } | undefined> {
    await this.#ensureScanned();
    return this.#find(oid);
  }

  #remember(oid: ObjectId, obj: GitObject): void {
    if (obj.data.length > this.#cacheLimit / 8) return;
    this.#cache.set(oid, obj);
  }

  /**
   * Keeps an object rebuilt from a delta that is too large for the cache as a tip of its chain,
   * so that the next object of the chain is one delta away (see ChainTips).
   */
  #keepTip(oid: ObjectId, obj: GitObject): void {
    if (obj.data.length > this.#cacheLimit / 8) this.#tips.set(oid, obj);
  }

  async #readPacked(oid: ObjectId, pack: LoadedPack, offset: number): Promise<GitObject> {
    // walk the chain down to a whole (or cached) object, then apply the deltas upward
    const chain: { info: EntryInfo; pack: LoadedPack; oid: ObjectId }[] = [];
    let cur = { pack, offset, oid };
    let base: GitObject | undefined;
    const spend = rebuildBudget(this.#maxRebuild, oid);
    for (let guard = 0; ; guard++) {
      if (guard > 100_000) throw new PackError('OBJECT_CORRUPT', 'delta chain too long or cyclic');
      const info = await this.#entry(cur.pack, cur.offset);
      if (info.code >= 1 && info.code <= 4) {
        spend(info.size);
        base = { type: CODE_TYPES[info.code]!, data: await this.#inflateEntry(cur.pack, info) };
        if (chain.length > 0) this.#remember(cur.oid, base);
        break;
      }
      chain.push({ info, pack: cur.pack, oid: cur.oid });
      const baseOid = info.code === 6 ? this.#oidAtOffset(cur.pack, info.baseOffset!) : info.baseOid!;
      const hit = this.#cache.get(baseOid) ?? this.#tips.get(baseOid);
      if (hit) {
        base = hit;
        break;
      }
      if (info.code === 6) {
        cur = { pack: cur.pack, offset: info.baseOffset!, oid: baseOid };
      } else {
        const loc = await this.#locate(baseOid);
        if (!loc) {
          base = await this.read(baseOid);
          if (!base) throw new PackError('OBJECT_NOT_FOUND', `delta base ${baseOid} is missing`);
          break;
        }
        cur = { pack: loc.pack, offset: loc.offset, oid: baseOid };
      }
    }
    let result = base;
    for (let k = chain.length - 1; k >= 0; k--) {
      const { info, pack: p, oid: o } = chain[k]!;
      spend(info.size);
      const delta = await this.#inflateEntry(p, info);
      result = { type: result.type, data: applyDelta(result.data, delta) };
      spend(result.data.length);
      if (k > 0) this.#remember(o, result);
      this.#keepTip(o, result);
    }
    return result;
  }

  /**
   * `#readPacked` without awaiting, for objects whose whole delta chain lies in packs held
   * whole (or ends at a cached base); undefined when some part needs a read.
   */
  #readPackedSync(oid: ObjectId, pack: LoadedPack, offset: number): GitObject | undefined {
    const chain: { info: EntryInfo; pack: LoadedPack; oid: ObjectId }[] = [];
    let cur = { pack, offset, oid };
    let base: GitObject | undefined;
    const spend = rebuildBudget(this.#maxRebuild, oid);
    for (let guard = 0; ; guard++) {
      if (guard > 100_000) throw new PackError('OBJECT_CORRUPT', 'delta chain too long or cyclic');
      const end = this.#entryEnd(cur.pack, cur.offset);
      const head = this.#view(cur.pack, cur.offset, Math.min(32, end - cur.offset));
      if (!head) return undefined;
      const info = this.#parseEntry(cur.pack, cur.offset, end, head);
      if (info.code >= 1 && info.code <= 4) {
        spend(info.size);
        base = {
          type: CODE_TYPES[info.code]!,
          data: this.#inflate(cur.pack.bytes!.subarray(info.dataOffset, info.end), info),
        };
        if (chain.length > 0) this.#remember(cur.oid, base);
        break;
      }
      chain.push({ info, pack: cur.pack, oid: cur.oid });
      const baseOid = info.code === 6 ? this.#oidAtOffset(cur.pack, info.baseOffset!) : info.baseOid!;
      const hit = this.#cache.get(baseOid) ?? this.#tips.get(baseOid);
      if (hit) {
        base = hit;
        break;
      }
      if (info.code === 6) {
        cur = { pack: cur.pack, offset: info.baseOffset!, oid: baseOid };
      } else {
        const loc = this.#find(baseOid);
        if (!loc) return undefined;
        cur = { pack: loc.pack, offset: loc.offset, oid: baseOid };
      }
    }
    let result = base;
    for (let k = chain.length - 1; k >= 0; k--) {
      const { info, pack: p, oid: o } = chain[k]!;
      spend(info.size);
      const delta = this.#inflate(p.bytes!.subarray(info.dataOffset, info.end), info);
      result = { type: result.type, data: applyDelta(result.data, delta) };
      spend(result.data.length);
      if (k > 0) this.#remember(o, result);
      this.#keepTip(o, result);
    }
    return result;
  }

  /**
   * The object when it can be had without awaiting (cached, or packed in packs held whole);
   * undefined means "use `read`", not "missing".
   */
  readSync(oid: ObjectId): GitObject | undefined {
    const hit = this.#cache.get(oid) ?? this.#tips.get(oid);
    if (hit) return hit;
    if (!this.#scanned || oid.length !== 40) return undefined;
    const loc = this.#find(oid);
    if (!loc?.pack.bytes) return undefined;
    const obj = this.#readPackedSync(oid, loc.pack, loc.offset);
    if (obj) this.#remember(oid, obj);
    return obj;
  }

  async has(oid: ObjectId): Promise<boolean> {
    if (!isObjectId(oid)) return false;
    if (this.#cache.has(oid) || (await this.#locate(oid))) return true;
    try {
      await this.#fs.stat(this.#loosePath(oid));
      return true;
    } catch (error) {
      if (!isEnoent(error)) throw new PackError('STORE_IO', `cannot stat object ${oid}`, { cause: error });
    }
    await this.refresh();
    return this.#find(oid) !== undefined;
  }

  async read(oid: ObjectId): Promise<GitObject | undefined> {
    if (!isObjectId(oid)) return undefined;
    const hit = this.#cache.get(oid) ?? this.#tips.get(oid);
    if (hit) return hit;
    let loc = await this.#locate(oid);
    let obj: GitObject | undefined;
    if (!loc) {
      obj = await this.#readLoose(oid);
      if (!obj) {
        await this.refresh();
        loc = this.#find(oid);
      }
    }
    if (loc) obj = await this.#readPacked(oid, loc.pack, loc.offset);
    if (obj) this.#remember(oid, obj);
    return obj;
  }

  async #readLoose(oid: ObjectId): Promise<GitObject | undefined> {
    let file: Uint8Array;
    try {
      file = toBytes(await this.#fs.readFile(this.#loosePath(oid)));
    } catch (error) {
      if (isEnoent(error)) return undefined;
      throw new PackError('STORE_IO', `cannot read object ${oid}`, { cause: error });
    }
    const raw = inflateAll(file, 2 ** 31);
    const nul = raw.indexOf(0);
    if (nul < 0) throw new PackError('OBJECT_CORRUPT', `loose object ${oid} has no header`);
    const header = new TextDecoder().decode(raw.subarray(0, nul));
    const m = /^(commit|tree|blob|tag) (\d+)$/.exec(header);
    if (!m || Number(m[2]) !== raw.length - nul - 1) {
      throw new PackError('OBJECT_CORRUPT', `loose object ${oid} has a bad header`);
    }
    return { type: m[1] as ObjectType, data: raw.subarray(nul + 1) };
  }

  async readHeader(oid: ObjectId): Promise<{ type: ObjectType; size: number } | undefined> {
    const loc = await this.#locate(oid);
    if (loc) {
      const info = await this.#entry(loc.pack, loc.offset);
      if (info.code <= 4) return { type: CODE_TYPES[info.code]!, size: info.size };
    }
    const obj = await this.read(oid);
    return obj && { type: obj.type, size: obj.data.length };
  }

  async readRaw(oid: ObjectId): Promise<RawEntry | undefined> {
    const loc = await this.#locate(oid);
    if (!loc) return undefined;
    const info = await this.#entry(loc.pack, loc.offset);
    const compressed = await this.#readAt(loc.pack, info.dataOffset, info.end - info.dataOffset);
    const stored: StoredLocation = {
      source: loc.pack.source,
      offset: loc.offset,
      dataOffset: info.dataOffset,
      end: info.end,
      code: info.code,
    };
    if (info.code <= 4) return { kind: 'whole', type: CODE_TYPES[info.code]!, size: info.size, compressed, stored };
    if (info.code === 6) stored.baseDistance = loc.offset - info.baseOffset!;
    const base = info.code === 6 ? this.#oidAtOffset(loc.pack, info.baseOffset!) : info.baseOid!;
    return { kind: 'delta', base, size: info.size, compressed, stored };
  }

  async write(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
    if (!isObjectType(type)) throw new PackError('OBJECT_BAD_TYPE', `bad object type ${String(type)}`);
    const oid = hashObjectSync(type, data);
    await this.#writeLoose(oid, type, data);
    return oid;
  }

  async writeHashed(objects: readonly { oid: ObjectId; type: ObjectType; data: Uint8Array }[]): Promise<void> {
    for (const o of objects) await this.#writeLoose(o.oid, o.type, o.data);
  }

  async #writeLoose(oid: ObjectId, type: ObjectType, data: Uint8Array): Promise<void> {
    if (await this.has(oid)) return;
    const header = objectHeader(type, data.length);
    const raw = new Uint8Array(header.length + data.length);
    raw.set(header);
    raw.set(data, header.length);
    const dir = `${this.#objects}/${oid.slice(0, 2)}`;
    await this.#mkdir(dir);
    await this.#atomicWrite(this.#loosePath(oid), deflate(raw, 1), dir);
  }

  async #mkdir(path: string): Promise<void> {
    try {
      await this.#fs.mkdir(path, { recursive: true });
    } catch (error) {
      if (!isEexist(error)) throw new PackError('STORE_IO', `cannot create ${path}`, { cause: error });
    }
  }

  #tmpName(dir: string, kind: string): string {
    return `${dir}/tmp_${kind}_${Date.now().toString(36)}_${(tmpCounter++).toString(36)}`;
  }

  async #atomicWrite(path: string, data: Uint8Array | readonly Uint8Array[], dir: string): Promise<void> {
    const tmp = this.#tmpName(dir, 'obj');
    try {
      if (data instanceof Uint8Array || !(await this.#writeChunks(tmp, data))) {
        await this.#fs.writeFile(tmp, data instanceof Uint8Array ? data : concatBytes(data));
      }
      await this.#fs.rename(tmp, path);
    } catch (error) {
      await this.#fs.unlink(tmp).catch(() => undefined);
      throw new PackError('STORE_IO', `cannot write ${path}`, { cause: error });
    }
  }

  /** Writes chunks one by one through a file handle when the fs has one; false otherwise. */
  async #writeChunks(path: string, chunks: readonly Uint8Array[]): Promise<boolean> {
    if (!this.#fs.open) return false;
    const handle = await this.#fs.open(path, 'w');
    try {
      if (!handle.write) return false;
      for (const c of chunks) {
        let done = 0;
        while (done < c.length) {
          const r = await handle.write(c, done, c.length - done);
          const n = typeof r === 'number' ? r : r.bytesWritten;
          if (n <= 0) throw new PackError('STORE_IO', `short write to ${path}`);
          done += n;
        }
      }
      return true;
    } finally {
      await handle.close();
    }
  }

  async writePack(pack: PackFile): Promise<void> {
    await this.#ensureScanned();
    const base = `pack-${pack.hash}`;
    if (this.#packNames.has(base)) return;
    const dir = `${this.#objects}/pack`;
    await this.#mkdir(dir);
    const idx = writeIdx(pack.entries, pack.hash, { strict: true });
    await this.#atomicWrite(`${dir}/${base}.pack`, pack.chunks, dir);
    await this.#atomicWrite(`${dir}/${base}.idx`, idx, dir);
    this.#addPack(base, new PackIndex(idx), pack.length);
  }

  async beginPack(): Promise<PackSpool | undefined> {
    if (!this.#fs.open) return undefined;
    await this.#ensureScanned();
    const dir = `${this.#objects}/pack`;
    await this.#mkdir(dir);
    const tmp = this.#tmpName(dir, 'pack');
    let handle: FileHandleLike;
    try {
      handle = await this.#fs.open(tmp, 'w+');
    } catch {
      // an fs whose open() has no read-write mode (lock-only handles, some browser adapters) gets
      // the in-memory path; a real I/O failure surfaces there, on the pack's own write
      return undefined;
    }
    if (!handle.write) {
      await handle.close();
      await this.#fs.unlink(tmp).catch(() => undefined);
      return undefined;
    }
    const write = handle.write.bind(handle);
    const writeAt = async (bytes: Uint8Array, position: number) => {
      let done = 0;
      while (done < bytes.length) {
        const r = await write(bytes, done, bytes.length - done, position + done);
        const n = typeof r === 'number' ? r : r.bytesWritten;
        if (n <= 0) throw new PackError('STORE_IO', `short write to ${tmp}`);
        done += n;
      }
    };
    const readAt = async (position: number, length: number) => {
      const out = new Uint8Array(length);
      let got = 0;
      while (got < length) {
        const r = await handle.read(out, got, length - got, position + got);
        const n = typeof r === 'number' ? r : r.bytesRead;
        if (n <= 0) throw new PackError('OBJECT_CORRUPT', `${tmp} is shorter than written`);
        got += n;
      }
      return out;
    };
    // appends gather in a block written as one; the last 2 MiB stay in memory too, since
    // delta bases usually lie close behind their deltas (most reads need no file access)
    let length = 0;
    const BLOCK = SPOOL_BLOCK;
    let tail = takeBlock();
    let tailLength = 0;
    /** Blocks in memory; `written` once on file, `dropped` once out of `recent` (then reusable). */
    const recent: Segment[] = [];
    let recentBytes = 0;
    const drop = (seg: Segment) => {
      seg.dropped = true;
      if (seg.written) giveBlock(seg.bytes);
    };
    const RECENT_MAX = 2 * 2 ** 20;
    let queue: Promise<void> = Promise.resolve();
    /** The writes queued before the latest block's (what `drain` waits for). */
    let earlier: Promise<void> = queue;
    let failure: unknown;
    let closed = false;
    const flushTail = () => {
      if (tailLength === 0) return;
      // a full block is handed over as it is (a new one takes its place); a partial one is copied
      const block = tailLength === BLOCK ? tail : tail.slice(0, tailLength);
      if (block === tail) tail = takeBlock();
      const at = length - tailLength;
      tailLength = 0;
      const seg: Segment = { at, bytes: block, written: false, dropped: false };
      recent.push(seg);
      recentBytes += block.length;
      while (recent.length > 1 && recentBytes - recent[0]!.bytes.length >= RECENT_MAX) {
        const first = recent.shift()!;
        recentBytes -= first.bytes.length;
        drop(first);
      }
      earlier = queue;
      queue = queue
        .then(async () => {
          if (failure !== undefined) return;
          await writeAt(block, at);
          seg.written = true;
          if (seg.dropped) giveBlock(seg.bytes);
        })
        .catch((error) => {
          failure ??= error;
        });
    };
    /** A copy of the range from memory, when it lies in the recent blocks and the tail. */
    const fromMemory = (offset: number, n: number): Uint8Array | undefined => {
      if (offset + n > length) return undefined;
      const segments =
        tailLength > 0 ? [...recent, { at: length - tailLength, bytes: tail.subarray(0, tailLength) }] : recent;
      let i = segments.length - 1;
      while (i >= 0 && segments[i]!.at > offset) i--;
      if (i < 0) return undefined;
      const out = new Uint8Array(n);
      let o = 0;
      for (let k = i; k < segments.length && o < n; k++) {
        const seg = segments[k]!;
        const from = offset + o - seg.at;
        if (from < 0 || from >= seg.bytes.length) return undefined;
        const take = Math.min(seg.bytes.length - from, n - o);
        out.set(seg.bytes.subarray(from, from + take), o);
        o += take;
      }
      return o === n ? out : undefined;
    };
    const close = async () => {
      if (closed) return;
      closed = true;
      await queue.catch(() => undefined);
      // every write is done: the blocks go to the next spool
      for (const seg of recent.splice(0)) drop(seg);
      giveBlock(tail);
      tailLength = 0;
      await handle.close();
    };
    const store = this;
    const failed = () => {
      if (failure !== undefined) throw new PackError('STORE_IO', `cannot write ${tmp}`, { cause: failure });
    };
    /** Once closed (committed or aborted) the spool's blocks belong to the next spool: no more use. */
    const ensureOpen = () => {
      if (closed) throw new PackError('STORE_CLOSED', `the pack spool ${tmp} is closed`);
    };
    /** Every byte appended so far on file: what reading the file back, patching and the commit need. */
    const settle = async () => {
      flushTail();
      await queue;
      failed();
    };
    /**
     * Backpressure while appending: waits for the writes queued before the latest block, which
     * goes on being written while the caller works; a partly filled block stays in memory.
     */
    const drain = async () => {
      await earlier;
      failed();
    };
    return {
      get length() {
        return length;
      },
      append(bytes: Uint8Array) {
        ensureOpen();
        let pos = 0;
        while (pos < bytes.length) {
          if (tailLength === tail.length) flushTail();
          const n = Math.min(bytes.length - pos, tail.length - tailLength);
          tail.set(bytes.subarray(pos, pos + n), tailLength);
          tailLength += n;
          length += n;
          pos += n;
        }
      },
      drain,
      async read(offset: number, n: number) {
        ensureOpen();
        const hit = fromMemory(offset, n);
        if (hit) return hit;
        await settle();
        return readAt(offset, n);
      },
      truncate(n: number) {
        ensureOpen();
        if (n >= length) return;
        if (n >= length - tailLength) {
          tailLength -= length - n;
          length = n;
          return;
        }
        flushTail();
        length = n;
        // what lies past the new end will be overwritten by later appends
        while (recent.length > 0 && recent[recent.length - 1]!.at >= n) {
          const last = recent.pop()!;
          recentBytes -= last.bytes.length;
          drop(last);
        }
        const last = recent[recent.length - 1];
        if (last && last.at + last.bytes.length > n) {
          recentBytes -= last.at + last.bytes.length - n;
          last.bytes = last.bytes.subarray(0, n - last.at);
        }
      },
      async patch(offset: number, bytes: Uint8Array) {
        ensureOpen();
        await settle();
        await writeAt(bytes, offset);
        // the blocks still held in memory serve reads before the file: they get the bytes too
        for (const seg of recent) {
          const from = Math.max(offset, seg.at);
          const to = Math.min(offset + bytes.length, seg.at + seg.bytes.length);
          if (from < to) seg.bytes.set(bytes.subarray(from - offset, to - offset), from - seg.at);
        }
      },
      async *chunks() {
        ensureOpen();
        await settle();
        const step = 1 << 20;
        for (let at = 0; at < length; at += step) yield await readAt(at, Math.min(step, length - at));
      },
      async commit(hash: string, entries: readonly IndexEntry[]) {
        const base = `pack-${hash}`;
        if (store.#packNames.has(base)) {
          await settle();
          await close();
          await store.#fs.unlink(tmp).catch(() => undefined);
          return;
        }
        const idx = writeIdx(entries, hash, { strict: true });
        // the .idx goes to its temporary file while the pack's last writes finish and it moves
        // into place; it is renamed into place after the .pack, as git does
        const idxTmp = store.#tmpName(dir, 'idx');
        const [moved, staged] = await Promise.allSettled([
          (async () => {
            await settle();
            await close();
            await store.#fs.rename(tmp, `${dir}/${base}.pack`);
          })(),
          store.#fs.writeFile(idxTmp, idx),
        ]);
        if (moved.status === 'rejected' || staged.status === 'rejected') {
          await store.#fs.unlink(idxTmp).catch(() => undefined);
          if (moved.status === 'rejected') {
            await close().catch(() => undefined);
            await store.#fs.unlink(tmp).catch(() => undefined);
            if (moved.reason instanceof PackError) throw moved.reason;
            throw new PackError('STORE_IO', `cannot write ${dir}/${base}.pack`, { cause: moved.reason });
          }
          // a .pack without its .idx is ignored by readers (git gc removes it), as on git's own failures
          throw new PackError('STORE_IO', `cannot write ${dir}/${base}.idx`, {
            cause: (staged as PromiseRejectedResult).reason,
          });
        }
        try {
          await store.#fs.rename(idxTmp, `${dir}/${base}.idx`);
        } catch (error) {
          await store.#fs.unlink(idxTmp).catch(() => undefined);
          throw new PackError('STORE_IO', `cannot write ${dir}/${base}.idx`, { cause: error });
        }
        // the index just written needs no reading back nor verifying
        store.#addPack(base, new PackIndex(idx), length);
      },
      async abort() {
        await close().catch(() => undefined);
        await store.#fs.unlink(tmp).catch(() => undefined);
      },
    };
  }

  async findPack(oids: readonly ObjectId[]): Promise<StoredPack | undefined> {
    await this.#ensureScanned();
    const pack = this.#packs.find((p) => p.index.count === oids.length);
    if (!pack) return undefined;
    for (const oid of oids) if (pack.index.find(oid) < 0) return undefined;
    pack.ofsDeltas ??= await this.#hasOfsDeltas(pack);
    const store = this;
    return {
      ofsDeltas: pack.ofsDeltas,
      async *stream(signal?: AbortSignal, options?: { borrow?: boolean }) {
        const step = STREAM_PIECE;
        // borrowed pieces are read into two buffers in turn (the one the caller is done with),
        // taken from the store's spares and given back after
        const buffers = options?.borrow ? [store.#streamBuffers.pop(), store.#streamBuffers.pop()] : undefined;
        let turn = 0;
        const piece = (at: number) =>
          store.#copyOut(pack, at, step, buffers && (buffers[turn++ & 1] ??= new Uint8Array(step)));
        // the next piece is read while this one goes out
        let next: Promise<Uint8Array> | undefined = pack.size > 0 ? piece(0) : undefined;
        try {
          for (let at = 0; next; at += step) {
            if (signal?.aborted) throw new PackError('PACK_ABORTED', 'aborted', { cause: signal.reason });
            const bytes = await next;
            next = at + step < pack.size ? piece(at + step) : undefined;
            yield bytes;
          }
        } finally {
          const reading = next?.catch(() => undefined);
          if (buffers) {
            // a read still going on writes into its buffer: given back once it is done
            void Promise.resolve(reading).then(() => {
              for (const b of buffers)
                if (b && store.#streamBuffers.length < MAX_STREAM_SPARES) store.#streamBuffers.push(b);
            });
          }
        }
      },
    };
  }

  /** Whether any entry of the pack is an OFS_DELTA (type 6 in its header). */
  async #hasOfsDeltas(pack: LoadedPack): Promise<boolean> {
    for (let i = 0; i < pack.offsets.length; i++) {
      const head = this.#view(pack, pack.offsets[i]!, 1) ?? (await this.#readAt(pack, pack.offsets[i]!, 1));
      if (((head[0]! >> 4) & 7) === 6) return true;
    }
    return false;
  }

  /**
   * Up to `length` bytes of a pack at `position`: a copy, the caller's to keep, or with `into`
   * (a borrowed piece) read into it, or a view of the pack when it is held whole.
   */
  async #copyOut(pack: LoadedPack, position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const n = Math.min(length, pack.size - position);
    if (!pack.bytes && !pack.handle && this.#fs.open) {
      pack.handle = await this.#fs.open(`${this.#objects}/pack/${pack.name}.pack`, 'r');
    }
    // positional reads fill a new buffer (or the one given); views of a pack held whole are
    // copied unless borrowed
    if (!pack.bytes && pack.handle) return this.#readDirect(pack, position, n, into);
    const view = await this.#readAt(pack, position, n);
    return into ? view : view.slice();
  }

  /** Closes open pack files. */
  async close(): Promise<void> {
    this.#tips.clear();
    for (const p of this.#packs) {
      const h = p.handle;
      p.handle = undefined;
      await h?.close();
    }
  }
}
