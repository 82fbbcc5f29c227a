/**
 * An object store over a standard `.git/objects` directory (gitrepository-layout):
 *
 *   objects/xx/yyyy…            loose objects (loose-objects.ts)
 *   objects/pack/pack-H.pack    packs, each with its pack-H.idx (pack-files.ts)
 *
 * The fs is injected in the shape isomorphic-git uses (fs-like.ts). New packs are written
 * `.pack` first, then `.idx`, each through a temporary file and a rename, as git does; loose
 * objects likewise. With the `packSpool` option (`openPackSpool` of pack-spool.ts), an incoming
 * pack (`beginPack`) is written to `objects/pack/tmp_pack_*` as it arrives and renamed into place
 * once verified.
 * A push's objects go to a quarantine, `objects/tmp_objdir-incoming-*` (`quarantineHost`, see
 * quarantine.ts), until it is accepted.
 *
 * This file composes them, keeps the objects read in caches, and rebuilds packed objects along
 * their delta chains.
 */
import type { BitmappedPack } from './bitmap-index.js';
import type { BitmapServedStore, BitmapServing } from './bitmap-serving.js';
import { applyDelta } from './delta.js';
import { ChainTips, DEFAULT_MAX_REBUILD_BYTES, rebuildBudget } from './delta-chain-cache.js';
import { type EntryHeader, EntryType, isWholeEntry } from './entry-header.js';
import { isPackError, PackError } from './errors.js';
import type { FsLike, FsPromisesLike, ObjectStoreFs } from './fs-like.js';
import { PackIndex, writeIdx } from './idx.js';
import type { PackIndexReader } from './idx-read.js';
import { LooseObjects } from './loose-objects.js';
import {
  CODE_TYPES,
  type GitObject,
  hashObjectSync,
  isObjectId,
  isObjectType,
  type ObjectId,
  type ObjectType,
} from './object.js';
import { ObjectCache } from './object-cache.js';
import { inflateEntry, type LoadedPack, MAX_CHAIN_STEPS, PackFiles, type StoredPacks } from './pack-files.js';
import { BlockPool } from './pack-spool.js';
import type { DirectoryQuarantineHost, PackFile, PackSpool, PackSpoolHost, PackSpoolOpener } from './store.js';
import { isEnoent, StoreFiles } from './store-files.js';

/** A delta of a chain being walked: read on the way down, applied on the way up. */
interface ChainLink {
  pack: LoadedPack;
  oid: ObjectId;
  offset: number;
  end: number;
  header: EntryHeader;
}

/**
 * The read of one packed object, down its delta chain to a whole (or cached) object, then up
 * applying the deltas. `FsObjectStore.#advance` takes it as far as the bytes at hand allow and
 * says what it waits for (`want*`); it then goes on from the same step with that (`got`).
 */
class ChainWalk {
  readonly links: ChainLink[] = [];
  /** The entry being read on the way down, its end, and its header once read. */
  pack: LoadedPack;
  offset: number;
  oid: ObjectId;
  end = -1;
  header: EntryHeader | undefined;
  /** The object at the bottom of the chain, then each result on the way up. */
  object: GitObject | undefined;
  /** The next link to apply, once on the way up. */
  up = -1;
  steps = 0;
  /** Bytes the walk waits for, or (`wantBase`) a base object in no pack. */
  wantPack: LoadedPack | undefined;
  wantPosition = 0;
  wantLength = 0;
  wantBase: ObjectId | undefined;
  /** The bytes read for the last wait. */
  got: Uint8Array | undefined;
  readonly spend: (bytes: number) => void;

  constructor(oid: ObjectId, pack: LoadedPack, offset: number, spend: (bytes: number) => void) {
    this.oid = oid;
    this.pack = pack;
    this.offset = offset;
    this.spend = spend;
  }
}

export class FsObjectStore implements BitmapServedStore {
  readonly gitDir: string;
  readonly #files: StoreFiles;
  readonly #loose: LooseObjects;
  readonly #packs: PackFiles;
  /** Blocks of this store's pack spools. */
  readonly #blocks = new BlockPool();
  /** The `packSpool` option, handed on to the store of a quarantine. */
  readonly #openSpool: PackSpoolOpener | undefined;
  /**
   * A spool for an incoming pack in `objects/pack` (see `ObjectStore.beginPack`): only with the
   * `packSpool` option; undefined when the fs cannot open a file for positional writes.
   */
  readonly beginPack?: () => Promise<PackSpool | undefined>;
  readonly #cache: ObjectCache<string, GitObject>;
  readonly #cacheLimit: number;
  /** Objects too large for `#cache`: the latest kept, so that reading a delta chain in order is linear. */
  readonly #tips: ChainTips<ObjectId, GitObject>;
  readonly #maxRebuild: number;
  #stored: StoredPacks | undefined;
  /** Packs whose `.bitmap` was looked at: the bitmapped pack, or null (none, or ignored). */
  readonly #bitmaps = new Map<string, BitmappedPack | null>();
  /** Given with the `bitmaps` option only. */
  readonly bitmaps?: BitmapServing;
  readonly bitmappedPack?: () => Promise<BitmappedPack | undefined>;

  /**
   * `cacheBytes`: objects kept (default 32 MiB; as much again for the latest objects rebuilt from
   * deltas that are too large for it, the last one always). `pageCacheBytes`: pages of packs
   * read at positions (default 64 MiB). `maxRebuildBytes`: bytes one read may inflate and
   * rebuild along a delta chain (default 16 GiB), past which it fails with PACK_LIMIT_INFLATED.
   * An fs without `rename` is refused (STORE_IO): new files are moved into place.
   */
  constructor(
    fs: ObjectStoreFs | { promises: ObjectStoreFs } | FsLike | FsPromisesLike,
    gitDir: string,
    options: {
      cacheBytes?: number;
      pageCacheBytes?: number;
      maxRebuildBytes?: number;
      /** Serve by the packs' reachability bitmaps (`bitmapServing`); without it, by the walk. */
      bitmaps?: BitmapServing;
      /**
       * Reads pack indexes piece by piece into columns when the fs reads at positions
       * (`readPackIndex`); without it, an index file is read and held whole.
       */
      indexReader?: PackIndexReader;
      /**
       * Spools incoming packs to a temporary file in the pack directory (`openPackSpool`), where
       * the fs writes and reads at positions; without it, an incoming pack is gathered in memory.
       */
      packSpool?: PackSpoolOpener;
    } = {},
  ) {
    if (options.bitmaps) {
      const bitmaps = options.bitmaps;
      this.bitmaps = bitmaps;
      this.bitmappedPack = () => this.#bitmappedPack(bitmaps);
    }
    const raw = 'promises' in fs ? fs.promises : fs;
    if (typeof raw.rename !== 'function') throw new PackError('STORE_IO', 'the fs has no rename');
    this.#files = new StoreFiles(raw as ObjectStoreFs);
    this.gitDir = gitDir.replace(/\/+$/, '');
    this.#loose = new LooseObjects(this.#files, this.#objects);
    this.#packs = new PackFiles(
      this.#files,
      `${this.#objects}/pack`,
      options.pageCacheBytes ?? 64 * 2 ** 20,
      options.indexReader,
    );
    this.#cacheLimit = options.cacheBytes ?? 32 * 2 ** 20;
    this.#cache = new ObjectCache(this.#cacheLimit, (o) => o.data.length);
    this.#tips = new ChainTips(this.#cacheLimit, (o) => o.data.length);
    this.#maxRebuild = options.maxRebuildBytes ?? DEFAULT_MAX_REBUILD_BYTES;
    const open = options.packSpool;
    this.#openSpool = open;
    if (open) {
      this.beginPack = async () => {
        const host = await this.packSpoolHost();
        return host ? open(host) : undefined;
      };
    }
  }

  get #objects(): string {
    return `${this.gitDir}/objects`;
  }

  /**
   * Whether this store reads through `fs` (the fs given to the constructor, or its `promises`):
   * another thread may then open the same directory through its own copy of that fs.
   */
  readsThrough(fs: object): boolean {
    const raw = 'promises' in fs ? (fs as { promises: unknown }).promises : fs;
    return this.#files.fs === raw;
  }

  /** What a quarantine in `objects/tmp_objdir-incoming-*` needs of this store (see quarantine.ts). */
  quarantineHost(): DirectoryQuarantineHost {
    const fs = this.#files.fs;
    return {
      fs,
      objectsDir: this.#objects,
      store: this,
      open: (dir) => new FsObjectStore(fs, dir, { packSpool: this.#openSpool }),
      hasPack: async (name) => {
        await this.refresh();
        return this.#packs.has(name);
      },
      refresh: () => this.refresh(),
      forgetPack: async (name) => {
        if (await this.#packs.forget(name)) this.#cache.clear();
      },
    };
  }

  /** Re-reads the pack directory (packs added by others, e.g. real git). */
  refresh(): Promise<void> {
    return this.#packs.refresh();
  }

  async #locate(oid: ObjectId): Promise<{ pack: LoadedPack; offset: number } | undefined> {
    await this.#packs.ensureScanned();
    return this.#packs.find(oid);
  }

  #remember(oid: ObjectId, obj: GitObject): void {
    const data = obj.data;
    if (data.length > this.#cacheLimit / 8) return;
    // a small inflated object is a view of a shared slab (see slab.ts): kept as it is, it would
    // hold the whole slab for as long as it stays in the cache
    this.#cache.set(oid, data.byteLength * 2 < data.buffer.byteLength ? { type: obj.type, data: data.slice() } : obj);
  }

  /**
   * Keeps an object rebuilt from a delta that is too large for the cache as a tip of its chain,
   * so that the next object of the chain is one delta away (see ChainTips).
   */
  #keepTip(oid: ObjectId, obj: GitObject): void {
    if (obj.data.length > this.#cacheLimit / 8) this.#tips.set(oid, obj);
  }

  /** The bytes a walk needs next: those read for its last wait, or a view; else it waits for them. */
  #bytes(walk: ChainWalk, pack: LoadedPack, position: number, length: number, pages: boolean): Uint8Array | undefined {
    const got = walk.got;
    if (got) {
      walk.got = undefined;
      return got;
    }
    const view = this.#packs.view(pack, position, length, pages);
    if (view) return view;
    walk.wantPack = pack;
    walk.wantPosition = position;
    walk.wantLength = length;
    return undefined;
  }

  /**
   * Takes a walk as far as it goes without awaiting (views of packs held whole, and with
   * `pages`, of cached pages): true once `walk.object` is the object read, false when it waits.
   */
  #advance(walk: ChainWalk, pages: boolean): boolean {
    const packs = this.#packs;
    while (walk.object === undefined) {
      if (walk.steps > MAX_CHAIN_STEPS) throw new PackError('OBJECT_CORRUPT', 'delta chain too long or cyclic');
      if (walk.header === undefined) {
        if (walk.end < 0) walk.end = packs.entryEnd(walk.pack, walk.offset);
        const head = this.#bytes(walk, walk.pack, walk.offset, packs.headerRange(walk.offset, walk.end), pages);
        if (!head) return false;
        walk.header = packs.decodeHeader(walk.pack, walk.offset, head);
      }
      const header = walk.header;
      const dataOffset = walk.offset + header.length;
      if (isWholeEntry(header)) {
        const compressed = this.#bytes(walk, walk.pack, dataOffset, walk.end - dataOffset, pages);
        if (!compressed) return false;
        walk.spend(header.size);
        walk.object = { type: CODE_TYPES[header.type]!, data: inflateEntry(compressed, header.size) };
        if (walk.links.length > 0) this.#remember(walk.oid, walk.object);
        break;
      }
      walk.links.push({ pack: walk.pack, oid: walk.oid, offset: walk.offset, end: walk.end, header });
      walk.steps++;
      walk.header = undefined;
      walk.end = -1;
      const baseOid =
        header.type === EntryType.OFS_DELTA ? packs.oidAtOffset(walk.pack, header.baseOffset) : header.baseOid;
      const hit = this.#cache.get(baseOid) ?? this.#tips.get(baseOid);
      if (hit) {
        walk.object = hit;
        break;
      }
      walk.oid = baseOid;
      if (header.type === EntryType.OFS_DELTA) {
        walk.offset = header.baseOffset;
        continue;
      }
      const loc = packs.find(baseOid);
      if (!loc) {
        walk.wantBase = baseOid;
        return false;
      }
      walk.pack = loc.pack;
      walk.offset = loc.offset;
    }
    if (walk.up < 0) walk.up = walk.links.length - 1;
    for (; walk.up >= 0; walk.up--) {
      const link = walk.links[walk.up]!;
      const dataOffset = link.offset + link.header.length;
      const compressed = this.#bytes(walk, link.pack, dataOffset, link.end - dataOffset, pages);
      if (!compressed) return false;
      walk.spend(link.header.size);
      const delta = inflateEntry(compressed, link.header.size);
      const result: GitObject = { type: walk.object.type, data: applyDelta(walk.object.data, delta) };
      walk.spend(result.data.length);
      if (walk.up > 0) this.#remember(link.oid, result);
      this.#keepTip(link.oid, result);
      walk.object = result;
    }
    return true;
  }

  async #readPacked(oid: ObjectId, pack: LoadedPack, offset: number): Promise<GitObject> {
    const walk = new ChainWalk(oid, pack, offset, rebuildBudget(this.#maxRebuild, oid));
    while (!this.#advance(walk, true)) {
      const base = walk.wantBase;
      if (base !== undefined) {
        walk.wantBase = undefined;
        walk.object = await this.read(base);
        if (!walk.object) throw new PackError('OBJECT_NOT_FOUND', `delta base ${base} is missing`);
      } else {
        walk.got = await this.#packs.readAt(walk.wantPack!, walk.wantPosition, walk.wantLength);
      }
    }
    return walk.object!;
  }

  /**
   * The object when it can be had without awaiting (cached, or packed in packs held whole or in
   * pages of the page cache); undefined means "use `read`", not "missing".
   */
  readSync(oid: ObjectId): GitObject | undefined {
    const hit = this.#cache.get(oid) ?? this.#tips.get(oid);
    if (hit) return hit;
    if (!this.#packs.scanned || oid.length !== 40) return undefined;
    const loc = this.#packs.find(oid);
    if (!loc) return undefined;
    const walk = new ChainWalk(oid, loc.pack, loc.offset, rebuildBudget(this.#maxRebuild, oid));
    // a walk through pages not cached stops at the first one: `read` then goes on from the start
    if (!this.#advance(walk, true)) return undefined;
    this.#remember(oid, walk.object!);
    return walk.object;
  }

  async has(oid: ObjectId): Promise<boolean> {
    if (!isObjectId(oid)) return false;
    if (this.#cache.has(oid) || (await this.#locate(oid))) return true;
    if (await this.#loose.has(oid)) return true;
    await this.refresh();
    return this.#packs.find(oid) !== undefined;
  }

  async read(oid: ObjectId): Promise<GitObject | undefined> {
    if (!isObjectId(oid)) return undefined;
    const hit = this.#cache.get(oid) ?? this.#tips.get(oid);
    if (hit) return hit;
    let loc = await this.#locate(oid);
    let obj: GitObject | undefined;
    if (!loc) {
      obj = await this.#loose.read(oid);
      if (!obj) {
        await this.refresh();
        loc = this.#packs.find(oid);
      }
    }
    if (loc) obj = await this.#readPacked(oid, loc.pack, loc.offset);
    if (obj) this.#remember(oid, obj);
    return obj;
  }

  /** This store's packs, for the reads only serving needs (stored-reads.ts). */
  storedPacks(): StoredPacks {
    this.#stored ??= { packs: this.#packs, locate: (oid) => this.#locate(oid) };
    return this.#stored;
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
    await this.#loose.write(oid, type, data);
  }

  async writePack(pack: PackFile): Promise<void> {
    const dir = this.#packs.dir;
    // the directory is made (or found) while its packs are listed
    await Promise.all([this.#packs.ensureScanned(), this.#files.mkdir(dir)]);
    const base = `pack-${pack.hash}`;
    if (this.#packs.has(base)) return;
    const idx = writeIdx(pack.entries, pack.hash, { strict: true });
    // both written at once, the pack renamed into place before its index (as git does)
    await this.#files.atomicWriteAll(
      [
        { path: `${dir}/${base}.pack`, data: pack.chunks },
        { path: `${dir}/${base}.idx`, data: idx },
      ],
      dir,
    );
    this.#packs.add(base, new PackIndex(idx), pack.length);
  }

  /**
   * What a spool of an incoming pack in `objects/pack` needs of this store (see `beginPack`),
   * given at once: the packs are listed and the directory made meanwhile (`ready`), so that a
   * spool that can take bytes before its file is open (a browser's) holds back no import.
   */
  async packSpoolHost(): Promise<PackSpoolHost | undefined> {
    const packs = this.#packs;
    const ready = Promise.all([packs.ensureScanned(), this.#files.mkdir(packs.dir)]).then(() => undefined);
    ready.catch(() => {});
    return {
      files: this.#files,
      dir: packs.dir,
      ready,
      pool: this.#blocks,
      hasPack: (base) => packs.has(base),
      addPack: (base, index, size) => {
        packs.add(base, index, size);
      },
    };
  }

  /**
   * The first pack (in the directory's order) with a usable `pack-H.bitmap`. A bitmap that does
   * not parse or names another pack is ignored, as git ignores it: the walk is taken instead.
   */
  async #bitmappedPack(bitmaps: BitmapServing): Promise<BitmappedPack | undefined> {
    await this.#packs.ensureScanned();
    for (const pack of this.#packs.list) {
      let found = this.#bitmaps.get(pack.name);
      if (found === undefined) {
        found = null;
        try {
          const path = `${this.#packs.dir}/${pack.name}.bitmap`;
          found = bitmaps.load(pack, await this.#files.readBytes(path), () => this.#files.readBytes(path));
        } catch (error) {
          if (!isEnoent(error) && !isPackError(error)) throw error;
        }
        this.#bitmaps.set(pack.name, found);
      }
      if (found) return found;
    }
    return undefined;
  }

  /** Closes open pack files. */
  async close(): Promise<void> {
    this.#tips.clear();
    await this.#packs.close();
  }
}
