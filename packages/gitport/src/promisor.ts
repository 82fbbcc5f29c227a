/**
 * Lazy objects of a partial clone: an object store in front of the repository's own that, when
 * an object is missing, fetches it from the promisor remote (the remote the partial clone came
 * from) and reads it again, as git does for a repository with `extensions.partialClone`
 * (promisor-remote.c).
 *
 * Fetches are batched: the misses of one turn of the event loop (the parallel reads of a
 * checkout, a tree's entries read at once) go in one request, and `prefetch` asks for a whole
 * list at once (a checkout asks for every blob it lacks before it writes a file). Misses that
 * come while a request is in flight wait for the next one, never for a request of their own.
 *
 * Only reads fetch: `has` says what is on disk, as git's `has_object` without fetching does, so a
 * fetch's negotiation never brings objects. A read with `{ lazy: false }` never fetches.
 *
 * Errors: a failed lazy fetch rejects the read with `PROMISOR_FETCH_FAILED` (data: the missing
 * ids; cause: the remote's error, say `HTTP_NETWORK` or `PEER_NOT_FOUND`).
 */
import type { GitObject, ObjectId, ObjectStore, ObjectType } from '@gitport/pack';
import { readHeaderOf } from '@gitport/pack/internal/stored-reads';
import type { Repository } from '@gitport/protocol';
import { GitportError, toGitportError } from './errors.js';
import type { GitFs } from './fs.js';

/** The repository a promisor store belongs to: its refs; on a git layout, its fs and git directory. */
export type PromisorOwner = Omit<Repository, 'objects'> & { readonly fs?: GitFs; readonly gitDir?: string };

/** What a promisor store needs of a remote: fetching objects by id (every `remote(...)` has it). */
export interface PromisorRemote {
  /** Fetches these objects (and, with a filter, what the filter keeps of what they reach) into `local`. */
  fetchObjects(local: Repository, oids: readonly ObjectId[], options?: { filter?: string | false }): Promise<unknown>;
}

export interface LazyReadOptions {
  /** Default true: a missing object is fetched from the promisor remote. */
  lazy?: boolean;
}

export interface PromisorStoreOptions {
  /** The filter of lazy fetches; default `blob:none` (git's), `false` for none. */
  filter?: string | false;
}

const brand = Symbol.for('gitport.promisor-store');

/** An object store that fetches what it lacks from a promisor remote. */
export class PromisorObjectStore implements ObjectStore {
  readonly [brand] = true;
  /** The store in front of which this one stands: reads from it never fetch. */
  readonly local: ObjectStore;
  readonly #remote: PromisorRemote;
  /** The repository lazy fetches go into (its refs, and its fs and git directory for `.promisor` files). */
  readonly #owner: PromisorOwner;
  readonly #filter: string | false;
  /** Ids waiting for the next request. */
  readonly #queued = new Set<ObjectId>();
  /** The next request, while it still takes ids. */
  #next: Promise<void> | undefined;
  /** The request in flight (the next one starts after it). */
  #inFlight: Promise<void> = Promise.resolve();
  /** How many lazy fetches this store made. */
  fetches = 0;

  readSync?: ObjectStore['readSync'];
  readRaw?: ObjectStore['readRaw'];
  locateStored?: ObjectStore['locateStored'];
  writeHashed?: ObjectStore['writeHashed'];
  writePack?: ObjectStore['writePack'];
  beginPack?: ObjectStore['beginPack'];
  findPack?: ObjectStore['findPack'];
  storedPacks?: ObjectStore['storedPacks'];
  beginQuarantine?: ObjectStore['beginQuarantine'];
  quarantineHost?: ObjectStore['quarantineHost'];
  remove?: ObjectStore['remove'];

  /**
   * `owner`: the repository the store belongs to (its `refs`; a GitRepository's `fs` and `gitDir`
   * too, so fetched packs get their `.promisor` file).
   */
  constructor(local: ObjectStore, owner: PromisorOwner, remote: PromisorRemote, options: PromisorStoreOptions = {}) {
    this.local = local;
    this.#owner = owner;
    this.#remote = remote;
    this.#filter = options.filter ?? 'blob:none';
    // what the store under it has, it has (bound, so `typeof store.writePack` still tells)
    if (local.readSync) this.readSync = local.readSync.bind(local);
    if (local.readRaw) this.readRaw = local.readRaw.bind(local);
    if (local.locateStored) this.locateStored = local.locateStored.bind(local);
    if (local.writeHashed) this.writeHashed = local.writeHashed.bind(local);
    if (local.writePack) this.writePack = local.writePack.bind(local);
    if (local.beginPack) this.beginPack = local.beginPack.bind(local);
    if (local.findPack) this.findPack = local.findPack.bind(local);
    if (local.storedPacks) this.storedPacks = local.storedPacks.bind(local);
    if (local.beginQuarantine) this.beginQuarantine = local.beginQuarantine.bind(local);
    if (local.quarantineHost) this.quarantineHost = local.quarantineHost.bind(local);
    if (local.remove) this.remove = local.remove.bind(local);
  }

  has(oid: ObjectId): Promise<boolean> {
    return this.local.has(oid);
  }

  write(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
    return this.local.write(type, data);
  }

  async read(oid: ObjectId, options: LazyReadOptions = {}): Promise<GitObject | undefined> {
    const found = await this.local.read(oid);
    if (found !== undefined || options.lazy === false) return found;
    await this.#request([oid]);
    return this.local.read(oid);
  }

  async readHeader(
    oid: ObjectId,
    options: LazyReadOptions = {},
  ): Promise<{ type: ObjectType; size: number } | undefined> {
    const header = () => readHeaderOf(this.local, oid);
    const found = await header();
    if (found !== undefined || options.lazy === false) return found;
    await this.#request([oid]);
    return header();
  }

  /** Fetches, in one request, those of `oids` that are not here (a checkout's blobs, say). */
  async prefetch(oids: readonly ObjectId[]): Promise<void> {
    const unique = [...new Set(oids)];
    const here = await Promise.all(unique.map((oid) => this.local.has(oid)));
    const missing = unique.filter((_, i) => !here[i]);
    if (missing.length > 0) await this.#request(missing);
  }

  /** Queues `oids` for the next request and waits for it. */
  #request(oids: readonly ObjectId[]): Promise<void> {
    for (const oid of oids) this.#queued.add(oid);
    if (this.#next === undefined) {
      const next = this.#inFlight
        // the other misses of this turn of the event loop join the request
        .then(() => new Promise<void>((resolve) => setTimeout(resolve, 0)))
        .then(() => {
          const batch = [...this.#queued];
          this.#queued.clear();
          this.#next = undefined;
          return this.#fetch(batch);
        });
      this.#next = next;
      this.#inFlight = next.catch(() => {});
    }
    return this.#next;
  }

  async #fetch(oids: ObjectId[]): Promise<void> {
    if (oids.length === 0) return;
    this.fetches++;
    try {
      await this.#remote.fetchObjects({ ...this.#owner, objects: this.local }, oids, { filter: this.#filter });
    } catch (error) {
      const cause = toGitportError(error);
      throw new GitportError(
        'PROMISOR_FETCH_FAILED',
        `could not fetch ${oids.length === 1 ? oids[0] : `${oids.length} objects`} from the promisor remote: ${cause.message}`,
        { cause, data: { oids } },
      );
    }
  }
}

/** Whether `store` fetches missing objects (a partial clone's store with its promisor remote). */
export function isPromisorStore(store: ObjectStore): store is PromisorObjectStore {
  return (store as { [brand]?: boolean })[brand] === true;
}

/** The store's own objects, without lazy fetches (the store itself when it never fetches). */
export function localObjects(store: ObjectStore): ObjectStore {
  return isPromisorStore(store) ? store.local : store;
}

/** Fetches in one request the blobs among `oids` the store lacks, when it is a promisor store. */
export async function prefetchObjects(store: ObjectStore, oids: readonly ObjectId[]): Promise<void> {
  if (isPromisorStore(store)) await store.prefetch(oids);
}
