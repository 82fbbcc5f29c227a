/**
 * A byte cache keyed by small integers, holding copies of its values in one arena allocated once
 * and reused as a ring: the oldest values are overwritten by the newest. Values handed to `set`
 * may be views into shared slabs (inflate and delta outputs): keeping such a view would keep its
 * whole slab alive until the next full garbage collection, so an import that caches a few
 * megabytes of recent objects would hold tens of megabytes of dead slabs. Copying into the arena
 * lets the slabs die young and keeps the cache's memory fixed.
 *
 * A value read back is refreshed (copied to the newest end) once it is older than half the ring,
 * so that a base used again and again stays (LRU-like at the cost of one copy per half turn).
 *
 * `get` returns a view into the arena: valid only until the next `set` (copy it to keep it).
 */
export class RingCache {
  #arena: Uint8Array;
  readonly #limit: number;
  /** key -> arena position of its latest copy. */
  readonly #at = new Map<number, number>();
  /** key -> length of its value. */
  readonly #length = new Map<number, number>();
  /** Bytes written so far (ages of values), and each value's `#written` when it was written. */
  #written = 0;
  readonly #stamp = new Map<number, number>();
  /** Copies in arena order, oldest first, as a queue of (key, position) in typed arrays. */
  #keys: Int32Array;
  #positions: Float64Array;
  #front = 0;
  #back = 0;
  /** Where the next value goes. */
  #head = 0;
  /** Refreshes go through here (the old copy may lie where the new one is written). */
  #scratch: Uint8Array;

  constructor(limit: number) {
    this.#limit = Math.max(16, Math.floor(limit));
    // grown as values come, up to the limit (a pack with few small objects needs little)
    this.#arena = new Uint8Array(Math.min(this.#limit, 64 * 1024));
    this.#keys = new Int32Array(64);
    this.#positions = new Float64Array(64);
    this.#scratch = new Uint8Array(0);
  }

  /** Drops every value and the arena (the cache stays usable). */
  clear(): void {
    this.#arena = new Uint8Array(0);
    this.#at.clear();
    this.#length.clear();
    this.#stamp.clear();
    this.#front = this.#back = this.#head = 0;
    this.#scratch = new Uint8Array(0);
  }

  /** The largest value kept: a quarter of the arena. */
  get maxValue(): number {
    return this.#limit >>> 2;
  }

  has(key: number): boolean {
    return this.#at.has(key);
  }

  /** A view of the value (valid until the next `set`), or undefined. */
  get(key: number): Uint8Array | undefined {
    const at = this.#at.get(key);
    if (at === undefined) return undefined;
    const n = this.#length.get(key)!;
    if (this.#written - this.#stamp.get(key)! > this.#limit >>> 1) {
      // old: copied to the newest end, through the scratch (the write may cover the old copy)
      if (this.#scratch.length < n) this.#scratch = new Uint8Array(Math.max(n, this.#scratch.length * 2));
      this.#scratch.set(this.#arena.subarray(at, at + n));
      return this.#put(key, this.#scratch.subarray(0, n));
    }
    return this.#arena.subarray(at, at + n);
  }

  /** Keeps a copy of `value` unless it is over `maxValue` or the key is kept already. */
  set(key: number, value: Uint8Array): void {
    if (value.length > this.maxValue || this.#at.has(key)) return;
    this.#put(key, value);
  }

  #put(key: number, value: Uint8Array): Uint8Array {
    const n = value.length;
    let head = this.#head;
    if (head + n > this.#arena.length && this.#arena.length < this.#limit) {
      // nothing was overwritten yet: a larger arena keeps every copy where it is
      const arena = new Uint8Array(Math.min(this.#limit, Math.max(this.#arena.length * 2, head + n)));
      arena.set(this.#arena.subarray(0, head));
      this.#arena = arena;
    }
    if (head + n > this.#arena.length) {
      // the rest of the arena is skipped: what lies there goes first
      this.#evictFrom(head, this.#arena.length);
      head = 0;
    }
    this.#evictFrom(head, head + n);
    this.#arena.set(value, head);
    this.#at.set(key, head);
    this.#length.set(key, n);
    this.#written += n;
    this.#stamp.set(key, this.#written);
    this.#push(key, head);
    // 8-byte steps keep every copy aligned
    this.#head = head + ((n + 7) & ~7);
    return this.#arena.subarray(head, head + n);
  }

  /** Drops the oldest copies while they start in [from, to). */
  #evictFrom(from: number, to: number): void {
    while (this.#front < this.#back) {
      const i = this.#front & (this.#keys.length - 1);
      const p = this.#positions[i]!;
      if (p < from || p >= to) break;
      const key = this.#keys[i]!;
      // a key refreshed since has its latest copy elsewhere
      if (this.#at.get(key) === p) {
        this.#at.delete(key);
        this.#length.delete(key);
        this.#stamp.delete(key);
      }
      this.#front++;
    }
  }

  #push(key: number, position: number): void {
    if (this.#back - this.#front === this.#keys.length) {
      const n = this.#keys.length;
      const keys = new Int32Array(n * 2);
      const positions = new Float64Array(n * 2);
      for (let k = 0; k < n; k++) {
        const i = (this.#front + k) & (n - 1);
        keys[k] = this.#keys[i]!;
        positions[k] = this.#positions[i]!;
      }
      this.#keys = keys;
      this.#positions = positions;
      this.#back -= this.#front;
      this.#front = 0;
    }
    const i = this.#back & (this.#keys.length - 1);
    this.#keys[i] = key;
    this.#positions[i] = position;
    this.#back++;
  }
}
