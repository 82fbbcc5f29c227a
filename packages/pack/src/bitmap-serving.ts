/**
 * Serving by reachability bitmaps as a plug-in: reading a pack's `.bitmap`, the bitmap walk and
 * the reuse of the bitmapped pack's byte ranges, bundled in one value that a store is given
 * (`new FsObjectStore(fs, gitDir, { bitmaps: bitmapServing })`). The store and the pack writer
 * see it only through the `BitmapServing` type, so that code which never gives it (a browser
 * worker, whose repositories have no `.bitmap`) does not carry it.
 */
import { BitmapIndex, type BitmappedPack, bitmappedPack, type PackOrder } from './bitmap-index.js';
import {
  type BitmapEnumeration,
  type BitmapWalkOptions,
  bitmapHaves,
  bitmapObjects,
  tryBitmapWalk,
} from './bitmap-walk.js';
import type { ObjectId } from './object.js';
import { type PackPrefix, type RangeReuseOptions, rangeReuse } from './pack-range-reuse.js';
import type { ObjectStore } from './store.js';
import type { PackObject } from './walk.js';

export interface BitmapServing {
  /**
   * Joins a pack with the bytes of its `.bitmap`; throws a PackError when they do not parse or
   * name another pack (the store then ignores the bitmap, as git does). `reread` reads the file
   * again: the parts that serving seldom needs are then read again when needed, not kept.
   */
  load(pack: PackOrder, bytes: Uint8Array, reread?: () => Promise<Uint8Array>): BitmappedPack;
  /** The bitmap walk, or undefined when the store has no usable bitmap or the request needs the walk. */
  walk(store: ObjectStore, options: BitmapWalkOptions): Promise<BitmapEnumeration | undefined>;
  /** The objects a bitmap walk selected, the bitmapped pack's first in pack order. */
  objects(e: BitmapEnumeration): Promise<PackObject[]>;
  /** The objects the receiver has, by the bitmaps. */
  haves(e: BitmapEnumeration): { has(oid: ObjectId): boolean };
  /** The selected entries of the bitmapped pack, copied by ranges. */
  rangeReuse(store: ObjectStore, e: BitmapEnumeration, options?: RangeReuseOptions): PackPrefix;
}

/**
 * A store that serves by bitmaps: `createPack` takes the bitmap walk and range reuse from its
 * `bitmaps` (with its `bitmappedPack`); a store without them is served by the walk.
 */
export interface BitmapServedStore extends ObjectStore {
  readonly bitmaps?: BitmapServing;
}

/** git's reachability bitmaps, for `FsObjectStore`'s `bitmaps` option. */
export const bitmapServing: BitmapServing = {
  load: (pack, bytes, reread) =>
    bitmappedPack(
      pack,
      new BitmapIndex(bytes, { count: pack.index.count, packHash: pack.index.packHash }, reread ? { reread } : {}),
    ),
  walk: tryBitmapWalk,
  objects: bitmapObjects,
  haves: bitmapHaves,
  rangeReuse,
};
