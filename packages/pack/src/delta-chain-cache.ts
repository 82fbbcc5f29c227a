/**
 * Rebuilding objects along delta chains, in bounded work.
 *
 * An object stored as a delta is rebuilt from its base, which may itself be a delta: reading the
 * object at depth d applies d deltas unless some base on the way is cached. Object caches refuse
 * large objects (a quarter or an eighth of their budget), so without more a chain of large
 * objects read in order (what an import and a walk of a pack do) rebuilds every object from the
 * chain's root: quadratic work, which a small hostile pack (hundreds of tiny deltas over one
 * large blob) turns into minutes. Two things bound it:
 *
 * - `ChainTips` keeps the last large results (the tips of the chains being walked), whatever
 *   their size: the next object of a chain walked in order is one delta away. At most `maxCount`
 *   of them and at most `maxBytes` in all, except that the latest is always kept.
 * - every byte inflated or rebuilt is counted against a budget (`rebuildBudget`, or the import's
 *   inflated-bytes limit), so whatever order a pack forces still ends, with a coded error.
 */
import { PackError } from './errors.js';

export class ChainTips<K, V> {
  /** Tips whose chain went on (their result is a base already used): the first to go. */
  readonly #spent = new Map<K, V>();
  /** The others, oldest first. */
  readonly #live = new Map<K, V>();
  #bytes = 0;

  constructor(
    readonly maxBytes: number,
    readonly sizeOf: (value: V) => number,
    readonly maxCount = 8,
  ) {}

  get size(): number {
    return this.#spent.size + this.#live.size;
  }

  get(key: K): V | undefined {
    const value = this.#live.get(key);
    if (value !== undefined) {
      this.#live.delete(key);
      this.#live.set(key, value);
      return value;
    }
    return this.#spent.get(key);
  }

  /**
   * Keeps `value` as the latest tip. `base`, the tip it was rebuilt from, is now a step behind
   * its chain: it stays while there is room (another delta may use it too) but goes first. The
   * oldest go past the count or byte bound; the latest always stays.
   */
  set(key: K, value: V, base?: K): void {
    this.#drop(key);
    if (base !== undefined) {
      const old = this.#live.get(base);
      if (old !== undefined) {
        this.#live.delete(base);
        this.#spent.set(base, old);
      }
    }
    this.#live.set(key, value);
    this.#bytes += this.sizeOf(value);
    while (this.size > 1 && (this.size > this.maxCount || this.#bytes > this.maxBytes)) {
      const from = this.#spent.size > 0 ? this.#spent : this.#live;
      this.#drop(from.keys().next().value!);
    }
  }

  #drop(key: K): void {
    for (const map of [this.#spent, this.#live]) {
      const v = map.get(key);
      if (v !== undefined) {
        map.delete(key);
        this.#bytes -= this.sizeOf(v);
      }
    }
  }

  clear(): void {
    this.#spent.clear();
    this.#live.clear();
    this.#bytes = 0;
  }
}

/** Bytes one read of a store may inflate and rebuild along a delta chain, by default. */
export const DEFAULT_MAX_REBUILD_BYTES = 16 * 2 ** 30;

/**
 * A counter of bytes produced (inflated or rebuilt) for one read: throws PACK_LIMIT_INFLATED
 * once past `limit`.
 */
export function rebuildBudget(limit: number, what: string): (bytes: number) => void {
  let spent = 0;
  return (bytes) => {
    spent += bytes;
    if (spent > limit) {
      throw new PackError('PACK_LIMIT_INFLATED', `rebuilding ${what} takes more than ${limit} bytes of inflated data`);
    }
  };
}
