/**
 * Pack reuse for upload-pack, remembered per object store.
 *
 * The objects reachable from a set of wants never change (ids name content). Once `createPack`
 * has found them to be exactly a stored pack's (and sent that pack verbatim, as git does), the
 * next request for the same wants and tags, with nothing to exclude, asks the store for that pack
 * directly instead of walking the history again: what git gets from a reachability bitmap on
 * disk. `findPack` still checks that the pack is there and holds exactly those objects. A few
 * wants sets per store are kept (ids only), in a WeakMap: a store that goes away takes its
 * entries with it.
 */
import type { ObjectId, ObjectStore, StoredPack } from '@gitport/pack';

/**
 * Every member of ObjectStore, for views that forward to a store. Listing them all is checked at
 * compile time (below): a member added to the interface fails the build here until it is listed.
 */
const STORE_MEMBERS = [
  'has',
  'read',
  'write',
  'readSync',
  'readHeader',
  'readRaw',
  'writeHashed',
  'writePack',
  'beginPack',
  'findPack',
] as const satisfies readonly (keyof ObjectStore)[];
type Unlisted = Exclude<keyof ObjectStore, (typeof STORE_MEMBERS)[number]>;
const everyMemberListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyMemberListed;

/**
 * A view of `store` whose `findPack` also tells `found` about each stored pack it returns; every
 * other member is the store's own method, called on the store itself (so classes with #private
 * fields, getters or bound state work). Undefined members stay undefined.
 */
export function observeFindPack(
  store: ObjectStore,
  found: (oids: readonly ObjectId[], stored: StoredPack) => void,
): ObjectStore {
  const view: Record<string, unknown> = {};
  for (const name of STORE_MEMBERS) {
    const member: unknown = store[name];
    if (typeof member === 'function') view[name] = member.bind(store);
  }
  const findPack = view.findPack as ObjectStore['findPack'];
  if (findPack !== undefined) {
    view.findPack = async (oids: readonly ObjectId[]) => {
      const stored = await findPack(oids);
      if (stored) found(oids, stored);
      return stored;
    };
  }
  return view as unknown as ObjectStore;
}

/** Wants sets whose objects were found to be exactly a stored pack's, per store. */
export class PackReuseCache {
  readonly #known = new WeakMap<ObjectStore, Map<string, readonly ObjectId[]>>();
  readonly #entries: number;

  /** `entries`: wants sets kept per store (default 8), the oldest forgotten first. */
  constructor(entries = 8) {
    this.#entries = Math.max(1, entries);
  }

  /**
   * The stored pack remembered for `key`, as a stream; undefined (and the entry forgotten) when
   * the store no longer has it or the client cannot read its OFS deltas.
   */
  async stream(
    store: ObjectStore,
    key: string,
    ofsDelta: boolean,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array> | undefined> {
    const known = this.#known.get(store);
    const oids = known?.get(key);
    if (known === undefined || oids === undefined || store.findPack === undefined) return undefined;
    const stored = await store.findPack(oids);
    if (!stored || (stored.ofsDeltas && !ofsDelta)) {
      known.delete(key);
      return undefined;
    }
    return stored.stream(signal);
  }

  remember(store: ObjectStore, key: string, oids: readonly ObjectId[]): void {
    let known = this.#known.get(store);
    if (known === undefined) this.#known.set(store, (known = new Map()));
    known.delete(key);
    known.set(key, oids);
    if (known.size > this.#entries) known.delete(known.keys().next().value!);
  }

  /**
   * `store` as `createPack` should read it to fill this cache: `record` is called with the
   * objects of a stored pack that createPack sends verbatim (one whose OFS deltas the client can
   * read); pass them to `remember` once the pack went out whole.
   */
  observe(store: ObjectStore, ofsDelta: boolean, record: (oids: readonly ObjectId[]) => void): ObjectStore {
    return observeFindPack(store, (oids, stored) => {
      if (!stored.ofsDeltas || ofsDelta) record(oids);
    });
  }
}

/** The cache every upload-pack server of this realm shares. */
export const PACK_REUSE = new PackReuseCache();
