/**
 * Pack reuse for upload-pack, remembered per object store.
 *
 * The objects reachable from a set of wants never change (ids name content). Once `createPack`
 * has found them to be exactly a stored pack's (and sent that pack verbatim, as git does), the
 * next request for the same wants and tags, with nothing to exclude, asks the store for that pack
 * directly instead of walking the history again: what git gets from a reachability bitmap on
 * disk (createPack's `onStoredPack` tells upload-pack which objects such a pack held). `findPack`
 * still checks that the pack is there and holds exactly those objects. A few wants sets per store
 * are kept (ids only), in a WeakMap: a store that goes away takes its entries with it.
 */
import type { ObjectId, ObjectStore } from '@gitport/pack';
import { findPackOf, hasStoredPacks } from '@gitport/pack/internal/stored-reads';

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
    borrow = false,
  ): Promise<AsyncIterable<Uint8Array> | undefined> {
    const known = this.#known.get(store);
    const oids = known?.get(key);
    if (known === undefined || oids === undefined || !hasStoredPacks(store)) return undefined;
    const stored = await findPackOf(store, oids);
    if (!stored || (stored.ofsDeltas && !ofsDelta)) {
      known.delete(key);
      return undefined;
    }
    return stored.stream(signal, { borrow });
  }

  remember(store: ObjectStore, key: string, oids: readonly ObjectId[]): void {
    let known = this.#known.get(store);
    if (known === undefined) this.#known.set(store, (known = new Map()));
    known.delete(key);
    known.set(key, oids);
    if (known.size > this.#entries) known.delete(known.keys().next().value!);
  }
}

/** The cache every upload-pack server of this realm shares. */
export const PACK_REUSE = new PackReuseCache();
