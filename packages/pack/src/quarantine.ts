/**
 * Quarantines for incoming objects, as git's receive-pack keeps them (git's tmp-objdir.c,
 * `GIT_QUARANTINE_PATH`): a push's pack is imported into a temporary object store that reads
 * fall back from onto the repository's store, so every check sees the pushed objects, while the
 * repository's store gains nothing until the push is accepted.
 *
 *   const q = await openQuarantine(store);
 *   await importPack(q, pack);        // into the quarantine only
 *   ...checks read through q...       // quarantine first, then the store
 *   const m = await q.migrate();      // into the store, before any ref moves
 *   await m.revert();                 // only when no ref took any of it (every ref refused)
 *   await q.discard();                // a refused push: nothing of it stays
 *
 * Over a `.git` directory the quarantine is `objects/tmp_objdir-incoming-*` (the name git gives
 * its own), holding a `pack/` directory; migrating renames each pack into `objects/pack`,
 * `.pack` then `.idx`, skipping packs the store already has. Stores without a directory get an
 * overlay in memory whose objects are written to the store on migration.
 */
import { PackError } from './errors.js';
import { type IndexEntries, indexIds } from './idx.js';
import type { GitObject, ObjectId, ObjectType } from './object.js';
import {
  type DirectoryQuarantineHost,
  MemoryObjectStore,
  type Migration,
  type ObjectStore,
  type PackFile,
  type PackSpool,
  type Quarantine,
  type QuarantineFs,
  type RawEntry,
} from './store.js';
import { readHeaderOf, readHeaderSyncOf, readRawOf } from './stored-reads.js';

/**
 * A store's quarantine: its own when it has `beginQuarantine`, a directory beside its objects
 * when it lends one (`quarantineHost`), an overlay in memory otherwise.
 */
export async function openQuarantine(store: ObjectStore): Promise<Quarantine> {
  if (store.beginQuarantine) return store.beginQuarantine();
  const host = store.quarantineHost?.();
  if (host) return DirectoryQuarantine.create(host);
  return new OverlayQuarantine(store, store.remove ? (oids) => store.remove!(oids) : undefined);
}

/**
 * Quarantines open per store. A push still in its checks may have read a migrated quarantine's
 * objects through the store (and lean on them): while one is open, nothing migrated is reverted.
 */
const openQuarantines = new WeakMap<ObjectStore, number>();

/** Reads through to the store for anything not written into the quarantine. */
abstract class QuarantineBase implements Quarantine {
  protected readonly base: ObjectStore;
  protected readonly inner: ObjectStore;
  protected readonly written = new Set<ObjectId>();
  #state: 'open' | 'migrated' | 'discarded' = 'open';

  constructor(base: ObjectStore, inner: ObjectStore) {
    this.base = base;
    this.inner = inner;
    openQuarantines.set(base, (openQuarantines.get(base) ?? 0) + 1);
  }

  protected get state(): 'open' | 'migrated' | 'discarded' {
    return this.#state;
  }

  protected set state(next: 'migrated' | 'discarded') {
    if (this.#state === 'open') openQuarantines.set(this.base, (openQuarantines.get(this.base) ?? 1) - 1);
    this.#state = next;
  }

  /** Whether a revert may take objects out now (no other quarantine of the store is open). */
  protected mayRevert(): boolean {
    return (openQuarantines.get(this.base) ?? 0) === 0;
  }

  get incoming(): ReadonlySet<ObjectId> {
    return this.written;
  }

  protected ensureOpen(): void {
    if (this.state !== 'open') throw new PackError('STORE_CLOSED', `the quarantine is ${this.state}`);
  }

  #from(oid: ObjectId): ObjectStore {
    return this.state === 'open' && this.written.has(oid) ? this.inner : this.base;
  }

  async has(oid: ObjectId): Promise<boolean> {
    return (this.state === 'open' && this.written.has(oid)) || this.base.has(oid);
  }

  async read(oid: ObjectId): Promise<GitObject | undefined> {
    return this.#from(oid).read(oid);
  }

  readSync(oid: ObjectId): GitObject | undefined {
    return this.#from(oid).readSync?.(oid);
  }

  readHeaderSync(oid: ObjectId): { type: ObjectType; size: number } | undefined {
    return readHeaderSyncOf(this.#from(oid), oid);
  }

  readHeader(oid: ObjectId): Promise<{ type: ObjectType; size: number } | undefined> {
    return readHeaderOf(this.#from(oid), oid);
  }

  readRaw(oid: ObjectId): Promise<RawEntry | undefined> {
    return readRawOf(this.#from(oid), oid);
  }

  async write(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
    this.ensureOpen();
    const oid = await this.inner.write(type, data);
    this.written.add(oid);
    return oid;
  }

  async writeHashed(objects: readonly { oid: ObjectId; type: ObjectType; data: Uint8Array }[]): Promise<void> {
    this.ensureOpen();
    if (this.inner.writeHashed) await this.inner.writeHashed(objects);
    else for (const o of objects) await this.inner.write(o.type, o.data);
    for (const o of objects) this.written.add(o.oid);
  }

  abstract migrate(): Promise<Migration>;
  abstract discard(): Promise<void>;
}

/**
 * The quarantine of a store that keeps objects one by one: a MemoryObjectStore in front of it.
 * `remove` (when the store can) takes objects out again on `revert`.
 */
export class OverlayQuarantine extends QuarantineBase {
  readonly #remove: ((oids: readonly ObjectId[]) => Promise<void>) | undefined;

  constructor(base: ObjectStore, remove?: (oids: readonly ObjectId[]) => Promise<void>) {
    super(base, new MemoryObjectStore());
    this.#remove = remove;
  }

  async migrate(): Promise<Migration> {
    this.ensureOpen();
    const added = new Set<ObjectId>();
    const batch: { oid: ObjectId; type: ObjectType; data: Uint8Array }[] = [];
    for (const oid of this.written) {
      if (await this.base.has(oid)) continue;
      const o = (await this.inner.read(oid))!;
      batch.push({ oid, type: o.type, data: o.data });
      added.add(oid);
    }
    if (this.base.writeHashed) await this.base.writeHashed(batch);
    else for (const o of batch) await this.base.write(o.type, o.data);
    this.state = 'migrated';
    const remove = this.#remove;
    let reverted = false;
    return {
      added,
      revert: async () => {
        if (reverted || !remove || !this.mayRevert()) return false;
        reverted = true;
        await remove([...added]);
        return true;
      },
    };
  }

  async discard(): Promise<void> {
    if (this.state === 'open') this.state = 'discarded';
  }
}

export type { DirectoryQuarantineHost, QuarantineFs };

let counter = 0;

/** Creates one directory level (not every fs has `recursive`); one that exists is fine. */
async function mkdirOnce(fs: QuarantineFs, path: string): Promise<void> {
  try {
    await fs.mkdir(path);
  } catch (error) {
    if ((error as { code?: unknown })?.code !== 'EEXIST') throw error;
  }
}

/**
 * A quarantine in `objects/tmp_objdir-incoming-*` of a store over a `.git` directory; its own
 * objects directory is `objects/` inside it (so a store of the same kind opens it as a `.git`).
 */
export class DirectoryQuarantine extends QuarantineBase {
  readonly #host: DirectoryQuarantineHost;
  readonly #dir: string;
  /** The quarantine's objects directory. */
  readonly #objects: string;
  readonly #innerStore: ObjectStore & { close?(): Promise<void> };

  private constructor(host: DirectoryQuarantineHost, dir: string, inner: ObjectStore & { close?(): Promise<void> }) {
    super(host.store, inner);
    this.#host = host;
    this.#dir = dir;
    this.#objects = `${dir}/objects`;
    this.#innerStore = inner;
  }

  static async create(host: DirectoryQuarantineHost): Promise<DirectoryQuarantine> {
    const rand = Math.random().toString(36).slice(2, 8);
    const dir = `${host.objectsDir}/tmp_objdir-incoming-${Date.now().toString(36)}${rand}${(counter++).toString(36)}`;
    try {
      for (const path of [host.objectsDir, dir, `${dir}/objects`, `${dir}/objects/pack`])
        await mkdirOnce(host.fs, path);
    } catch (error) {
      throw new PackError('STORE_IO', `cannot create ${dir}`, { cause: error });
    }
    return new DirectoryQuarantine(host, dir, host.open(dir));
  }

  /** The quarantine's objects directory (what git calls GIT_QUARANTINE_PATH). */
  get path(): string {
    return this.#objects;
  }

  async writePack(pack: PackFile): Promise<void> {
    this.ensureOpen();
    await this.#innerStore.writePack!(pack);
    for (const oid of indexIds(pack.entries)) this.written.add(oid);
  }

  async beginPack(): Promise<PackSpool | undefined> {
    this.ensureOpen();
    const spool = await this.#innerStore.beginPack?.();
    if (!spool) return undefined;
    const written = this.written;
    // the spool as it is, with `commit` recording what the pack holds
    return {
      get length() {
        return spool.length;
      },
      append: (bytes) => spool.append(bytes),
      drain: () => spool.drain(),
      read: (offset, length) => spool.read(offset, length),
      truncate: (length) => spool.truncate(length),
      patch: (offset, bytes) => spool.patch(offset, bytes),
      chunks: () => spool.chunks(),
      commit: async (hash: string, entries: IndexEntries) => {
        await spool.commit(hash, entries);
        for (const oid of indexIds(entries)) written.add(oid);
      },
      abort: () => spool.abort(),
    };
  }

  async migrate(): Promise<Migration> {
    this.ensureOpen();
    const { fs, objectsDir } = this.#host;
    await this.#innerStore.close?.();
    const moved: string[] = [];
    const added = new Set<ObjectId>();
    const packDir = `${objectsDir}/pack`;
    // an empty pack (a push of refs to objects already there) is not worth keeping
    const names = this.written.size > 0 ? await this.#list(`${this.#objects}/pack`) : [];
    const packs = names.filter((n) => n.startsWith('pack-') && n.endsWith('.idx')).map((n) => n.slice(0, -4));
    try {
      if (packs.length > 0) await mkdirOnce(fs, packDir);
      for (const name of packs) {
        if (!names.includes(`${name}.pack`)) continue;
        if (await this.#host.hasPack(name)) continue;
        // `.pack` first, then `.idx`: a reader never sees an index without its pack
        await fs.rename(`${this.#objects}/pack/${name}.pack`, `${packDir}/${name}.pack`);
        await fs.rename(`${this.#objects}/pack/${name}.idx`, `${packDir}/${name}.idx`);
        moved.push(name);
      }
      // loose objects (stores written one by one)
      for (const sub of await this.#list(this.#objects)) {
        if (!/^[0-9a-f]{2}$/.test(sub)) continue;
        for (const rest of await this.#list(`${this.#objects}/${sub}`)) {
          const oid = sub + rest;
          if (!this.written.has(oid)) continue;
          if (await this.base.has(oid)) continue;
          await mkdirOnce(fs, `${objectsDir}/${sub}`);
          await fs.rename(`${this.#objects}/${sub}/${rest}`, `${objectsDir}/${sub}/${rest}`);
          added.add(oid);
        }
      }
    } catch (error) {
      throw new PackError('STORE_IO', `cannot migrate the quarantine ${this.#dir}`, { cause: error });
    }
    await this.#host.refresh();
    if (moved.length > 0) for (const oid of this.written) added.add(oid);
    this.state = 'migrated';
    await this.#remove();
    const host = this.#host;
    let reverted = false;
    return {
      added,
      revert: async () => {
        if (reverted || !this.mayRevert()) return false;
        reverted = true;
        for (const name of moved) {
          await host.forgetPack(name);
          // the index first: a pack without its index is invisible to readers (and to git)
          await fs.unlink(`${packDir}/${name}.idx`).catch(() => undefined);
          await fs.unlink(`${packDir}/${name}.pack`).catch(() => undefined);
        }
        return true;
      },
    };
  }

  async discard(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'discarded';
    await this.#innerStore.close?.();
    await this.#remove();
  }

  async #list(dir: string): Promise<string[]> {
    try {
      return await this.#host.fs.readdir(dir);
    } catch {
      return [];
    }
  }

  /** Removes the quarantine directory and whatever is left in it. */
  async #remove(): Promise<void> {
    await this.#removeTree(this.#dir, 4);
  }

  /** Files first, then directories (a name that is no file), up to `depth` levels down. */
  async #removeTree(path: string, depth: number): Promise<void> {
    const { fs } = this.#host;
    for (const name of await this.#list(path)) {
      const child = `${path}/${name}`;
      const removed = await fs.unlink(child).then(
        () => true,
        () => false,
      );
      if (!removed && depth > 0) await this.#removeTree(child, depth - 1);
    }
    await fs.rmdir?.(path).catch(() => undefined);
  }
}
