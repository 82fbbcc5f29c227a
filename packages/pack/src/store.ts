/**
 * The object store interface every store implements, and the in-memory store.
 */
import type { BitmappedPack } from './bitmap-index.js';
import { PackError } from './errors.js';
import type { ObjectStoreFs } from './fs-like.js';
import type { IndexEntries, PackIndex } from './idx.js';
import { type GitObject, hashObjectSync, isObjectId, type ObjectId, type ObjectType } from './object.js';
import type { StoredPacks } from './pack-files.js';
import type { StoreFiles } from './store-files.js';
import type { StoredEntries, StoredLocation } from './stored-location.js';

/** A packed object's stored representation, for reuse by `createPack` without recompressing. */
export type RawEntry = (
  | { kind: 'whole'; type: ObjectType; size: number; compressed: Uint8Array }
  | { kind: 'delta'; base: ObjectId; size: number; compressed: Uint8Array }
) & {
  /** Where the entry lies, when it can be read again later (a pack writer keeps this, not the bytes). */
  stored?: StoredLocation;
};

/** A complete, verified pack handed to a store that keeps packs (see `importPack`). */
export interface PackFile {
  hash: string;
  /** The pack's bytes in order (do not modify). */
  chunks: readonly Uint8Array[];
  length: number;
  /** One per pack entry; an id the pack holds twice comes twice (refuse it: writeIdx's strict). */
  entries: IndexEntries;
}

/**
 * Object storage. Bytes returned by `read` may be shared with the store's caches: callers must
 * not modify or transfer them (copy first).
 */
export interface ObjectStore {
  has(oid: ObjectId): Promise<boolean>;
  read(oid: ObjectId): Promise<GitObject | undefined>;
  write(type: ObjectType, data: Uint8Array): Promise<ObjectId>;
  /**
   * The object when the store can return it without awaiting (held in memory); undefined means
   * "ask `read`", not "missing". Lets hot walks skip a promise per object.
   */
  readSync?(oid: ObjectId): GitObject | undefined;
  /** Type and size without the data where the store can tell cheaply. */
  readHeader?(oid: ObjectId): Promise<{ type: ObjectType; size: number } | undefined>;
  /**
   * `readHeader` when the store can answer without awaiting; undefined means "ask
   * `readHeader`", not "missing".
   */
  readHeaderSync?(oid: ObjectId): { type: ObjectType; size: number } | undefined;
  /** The stored (packed) form of an object, for delta and compression reuse. */
  readRaw?(oid: ObjectId): Promise<RawEntry | undefined>;
  /**
   * Where the stored (packed) forms of many objects lie, in columns (see StoredEntries): what a
   * pack writer keeps instead of one `readRaw` result per object.
   */
  locateStored?(oids: readonly ObjectId[], signal?: AbortSignal): Promise<StoredEntries>;
  /** Writes objects whose ids the caller has computed (importPack). */
  writeHashed?(objects: readonly { oid: ObjectId; type: ObjectType; data: Uint8Array }[]): Promise<void>;
  /** Stores a whole verified pack with its index entries (stores over a .git directory). */
  writePack?(pack: PackFile): Promise<void>;
  /**
   * A place on disk for an incoming pack (stores over a .git directory whose fs can write and
   * read at positions): `importPack` writes the pack there as it arrives and reads entries back
   * by position, so memory stays bounded by the objects, not the pack. Undefined when the store
   * cannot (then `writePack` gets the pack from memory). FsObjectStore offers it when given the
   * `packSpool` option (`openPackSpool`), so that a store that never spools (a browser's memory
   * fs) does not carry the spool's code.
   */
  beginPack?(): Promise<PackSpool | undefined>;
  /**
   * A stored pack holding exactly these objects, streamed verbatim (git's pack reuse): what a
   * server sends on a clone of a freshly repacked repository.
   */
  findPack?(oids: readonly ObjectId[]): Promise<StoredPack | undefined>;
  /**
   * The store's packs, lent to the reads only serving needs (stored-reads.ts: `readHeaderOf`,
   * `readRawOf`, `locateStoredOf`, `findPackOf`), which a store over pack files offers this way
   * rather than as the methods above, so that a worker that only clones does not carry them.
   */
  storedPacks?(): StoredPacks;
  /**
   * The store's pack with a valid reachability bitmap (git's `pack-H.bitmap`), for enumeration by
   * bitmaps and reuse of the pack's byte ranges; undefined when there is none (or it is corrupt,
   * or of another pack: it is then ignored, as git ignores it).
   */
  bitmappedPack?(): Promise<BitmappedPack | undefined>;
  /**
   * A quarantine for incoming objects (see quarantine.ts); stores without one get an overlay in
   * memory from `openQuarantine`.
   */
  beginQuarantine?(): Promise<Quarantine>;
  /**
   * What a store over an objects directory lends a quarantine beside its objects (`openQuarantine`
   * makes it, so that stores that never receive pushes do not carry the quarantine's code).
   */
  quarantineHost?(): DirectoryQuarantineHost;
  /** Takes objects out again (a migrated quarantine's, see `Migration.revert`). */
  remove?(oids: readonly ObjectId[]): Promise<void>;
}

/**
 * An object store in front of another whose new objects are kept apart until `migrate`, as git's
 * receive-pack quarantines a push (see quarantine.ts).
 */
export interface Quarantine extends ObjectStore {
  /** Objects written into the quarantine (not those read through from the store). */
  readonly incoming: ReadonlySet<ObjectId>;
  /** Moves the quarantined objects into the store; the quarantine is then closed. */
  migrate(): Promise<Migration>;
  /** Removes the quarantine and everything in it (nothing once migrated or discarded). */
  discard(): Promise<void>;
}

/** What a quarantine's migration added to the store. */
export interface Migration {
  /** The objects that were not in the store before. */
  readonly added: ReadonlySet<ObjectId>;
  /**
   * Takes the migrated objects out of the store again (packs that were already there stay), for
   * a push whose every ref was refused after migration; resolves whether it did. They stay when
   * the store cannot remove objects, or while another quarantine of the store is open (a push
   * still in its checks may lean on them).
   */
  revert(): Promise<boolean>;
}

/**
 * An incoming pack being written to a temporary file (see `ObjectStore.beginPack`). Once committed
 * or aborted it is closed: `append`, `truncate`, `read`, `patch` and `chunks` then throw STORE_CLOSED.
 */
export interface PackSpool {
  /** Bytes written so far (appends go at this position). */
  readonly length: number;
  /** Queues a copy of `bytes` at the end. */
  append(bytes: Uint8Array): void;
  /**
   * Backpressure for appends: waits for the writes queued before the latest block (rejects with
   * the first write error). Bytes of a partly filled block stay in memory until it fills, or
   * until the pack is read back, patched or committed.
   */
  drain(): Promise<void>;
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Later appends go at `length` (the thin-pack trailer is overwritten). */
  truncate(length: number): void;
  patch(offset: number, bytes: Uint8Array): Promise<void>;
  /** The bytes in order, read back (hashing a rewritten pack). */
  chunks(): AsyncIterable<Uint8Array>;
  /** Moves the verified pack into place (`.pack`, then its `.idx`). */
  commit(hash: string, entries: IndexEntries): Promise<void>;
  /** Removes the temporary file; nothing of the pack stays. */
  abort(): Promise<void>;
}

export interface StoredPack {
  /** Whether the pack uses OFS_DELTA entries. */
  readonly ofsDeltas: boolean;
  /**
   * The pack's bytes, in pieces the caller may keep; with `borrow` (a caller that is done with
   * each piece before it asks for the next), pieces may be views of buffers the store reuses.
   */
  stream(signal?: AbortSignal, options?: { borrow?: boolean }): AsyncIterable<Uint8Array>;
}

/** Objects in a Map: ids are verified on write, data is copied in and shared out (do not modify). */
export class MemoryObjectStore implements ObjectStore {
  readonly #objects = new Map<ObjectId, GitObject>();

  get size(): number {
    return this.#objects.size;
  }

  async has(oid: ObjectId): Promise<boolean> {
    return this.#objects.has(oid);
  }

  async read(oid: ObjectId): Promise<GitObject | undefined> {
    return this.#objects.get(oid);
  }

  readSync(oid: ObjectId): GitObject | undefined {
    return this.#objects.get(oid);
  }

  async readHeader(oid: ObjectId): Promise<{ type: ObjectType; size: number } | undefined> {
    return this.readHeaderSync(oid);
  }

  readHeaderSync(oid: ObjectId): { type: ObjectType; size: number } | undefined {
    const o = this.#objects.get(oid);
    return o && { type: o.type, size: o.data.length };
  }

  async write(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
    const oid = hashObjectSync(type, data);
    if (!this.#objects.has(oid)) this.#objects.set(oid, { type, data: data.slice() });
    return oid;
  }

  async writeHashed(objects: readonly { oid: ObjectId; type: ObjectType; data: Uint8Array }[]): Promise<void> {
    for (const o of objects) {
      if (!isObjectId(o.oid)) throw new PackError('OBJECT_BAD_ID', `bad object id ${o.oid}`);
      // import hands out views of shared buffers: keep an own copy of those
      const own = o.data.byteOffset === 0 && o.data.byteLength === o.data.buffer.byteLength;
      if (!this.#objects.has(o.oid)) this.#objects.set(o.oid, { type: o.type, data: own ? o.data : o.data.slice() });
    }
  }

  async remove(oids: readonly ObjectId[]): Promise<void> {
    for (const oid of oids) this.#objects.delete(oid);
  }

  keys(): IterableIterator<ObjectId> {
    return this.#objects.keys();
  }
}

/** The part of an fs (Node's `fs.promises` and the like) a directory quarantine needs. */
export type QuarantineFs = Pick<ObjectStoreFs, 'readdir' | 'rename' | 'unlink' | 'mkdir' | 'rmdir'>;

/** What a store over an objects directory lends its quarantine (see FsObjectStore). */
export interface DirectoryQuarantineHost {
  fs: QuarantineFs;
  /** The store's objects directory. */
  objectsDir: string;
  /** The store itself (what reads fall back on). */
  store: ObjectStore;
  /** A store of the same kind over another directory (its objects in `<dir>/objects`). */
  open(dir: string): ObjectStore & { close?(): Promise<void> };
  /** Whether the store has this pack (`pack-<hash>`) already. */
  hasPack(name: string): Promise<boolean>;
  /** Makes packs moved into the objects directory readable. */
  refresh(): Promise<void>;
  /** Stops reading a pack (closes it, forgets its objects) before its files go. */
  forgetPack(name: string): Promise<void>;
}

/** What a store lends the spools it opens. */
export interface PackSpoolHost {
  files: StoreFiles;
  /** The pack directory (`objects/pack`). */
  dir: string;
  /** Settles once the store's packs are listed and the pack directory exists (rejects if either failed). */
  ready: Promise<void>;
  /** Blocks reused across the store's spools (`BlockPool`). */
  pool: { take(): Uint8Array; give(block: Uint8Array): void };
  /** Whether the store has the pack `pack-<hash>` already. */
  hasPack(base: string): boolean;
  /** Makes a pack just moved into place readable, with its index. */
  addPack(base: string, index: PackIndex, size: number): void;
}

/** Opens a spool over a store's pack directory (`openPackSpool`, the FsObjectStore `packSpool` option). */
export type PackSpoolOpener = (host: PackSpoolHost) => Promise<PackSpool | undefined>;
