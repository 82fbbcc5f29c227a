/**
 * A byte-bounded cache of objects with O(1) eviction: two generations of Maps. New entries go to
 * the young generation; once it holds half the budget it becomes the old one and the previous
 * old generation is dropped whole. A hit in the old generation moves the entry to the young one,
 * so what is used stays. At most `limit` bytes are held (each generation stays under half of it,
 * but for its last entry).
 *
 * Evicting one entry at a time from the front of a single Map (`keys().next()` after many
 * deletions) walks over the deleted slots V8 leaves at its front: a cost that grows with the
 * churn, which a pack walk of hundreds of thousands of objects makes dominant.
 */
export class ObjectCache<K, V> {
  #young = new Map<K, V>();
  #old = new Map<K, V>();
  #youngBytes = 0;
  #oldBytes = 0;

  constructor(
    readonly limit: number,
    readonly sizeOf: (value: V) => number,
  ) {}

  /** Bytes held. */
  get bytes(): number {
    return this.#youngBytes + this.#oldBytes;
  }

  get size(): number {
    return this.#young.size + this.#old.size;
  }

  get(key: K): V | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    if (old === undefined) return undefined;
    this.#old.delete(key);
    this.#oldBytes -= this.sizeOf(old);
    this.#add(key, old);
    return old;
  }

  has(key: K): boolean {
    return this.#young.has(key) || this.#old.has(key);
  }

  /** Keeps `value` (a value larger than half the budget is not kept). */
  set(key: K, value: V): void {
    const size = this.sizeOf(value);
    if (size > this.limit / 2) return;
    const young = this.#young.get(key);
    if (young !== undefined) {
      this.#young.delete(key);
      this.#youngBytes -= this.sizeOf(young);
    }
    const old = this.#old.get(key);
    if (old !== undefined) {
      this.#old.delete(key);
      this.#oldBytes -= this.sizeOf(old);
    }
    this.#add(key, value);
  }

  #add(key: K, value: V): void {
    const size = this.sizeOf(value);
    if (this.#youngBytes + size > this.limit / 2 && this.#young.size > 0) {
      this.#old = this.#young;
      this.#oldBytes = this.#youngBytes;
      this.#young = new Map();
      this.#youngBytes = 0;
    }
    this.#young.set(key, value);
    this.#youngBytes += size;
  }

  clear(): void {
    this.#young = new Map();
    this.#old = new Map();
    this.#youngBytes = 0;
    this.#oldBytes = 0;
  }
}
