/**
 * A byte cache keyed by 32-bit integers (but -2^31), holding copies of its values in one arena allocated once
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
  /**
   * key -> sequence number of its latest copy in the queue below: typed arrays, not a Map, whose
   * tables, rebuilt as keys churn, would pile up garbage for the full collector.
   */
  readonly #seq = new SeqIndex();
  /** Bytes written so far (ages of values). */
  #written = 0;
  /**
   * Copies in arena order, oldest first: a queue of (key, position, length, `#written` when
   * written) in typed arrays; the copy numbered `s` lies at `s & (capacity - 1)`.
   */
  #keys: Int32Array;
  #positions: Float64Array;
  #lengths: Int32Array;
  #stamps: Float64Array;
  #front = 0;
  #back = 0;
  /** Where the next value goes. */
  #head = 0;
  /** Refreshes go through here (the old copy may lie where the new one is written). */
  #scratch: Uint8Array;

  constructor(limit: number) {
    this.#limit = Math.max(16, Math.floor(limit));
    // at its full size at once: zero-filled memory is private only once written (a pack with
    // few small objects touches little of it), where growing it would free arena after arena,
    // and each buffer freed back to the system makes malloc keep later ones of that size in its
    // heap, fragmented
    this.#arena = new Uint8Array(this.#limit);
    this.#keys = new Int32Array(64);
    this.#positions = new Float64Array(64);
    this.#lengths = new Int32Array(64);
    this.#stamps = new Float64Array(64);
    this.#scratch = new Uint8Array(0);
  }

  /** Drops every value and the arena (the cache stays usable). */
  clear(): void {
    this.#arena = new Uint8Array(0);
    this.#seq.clear();
    this.#front = this.#back = this.#head = 0;
    this.#scratch = new Uint8Array(0);
  }

  /** The largest value kept: a quarter of the arena. */
  get maxValue(): number {
    return this.#limit >>> 2;
  }

  has(key: number): boolean {
    return this.#seq.has(key);
  }

  /** A view of the value (valid until the next `set`), or undefined. */
  get(key: number): Uint8Array | undefined {
    const seq = this.#seq.get(key);
    if (seq === undefined) return undefined;
    const i = seq & (this.#keys.length - 1);
    const at = this.#positions[i]!;
    const n = this.#lengths[i]!;
    if (this.#written - this.#stamps[i]! > this.#limit >>> 1) {
      // old: copied to the newest end, through the scratch (the write may cover the old copy)
      if (this.#scratch.length < n) this.#scratch = new Uint8Array(Math.max(n, this.#scratch.length * 2));
      this.#scratch.set(this.#arena.subarray(at, at + n));
      return this.#put(key, this.#scratch.subarray(0, n));
    }
    return this.#arena.subarray(at, at + n);
  }

  /** Keeps a copy of `value` unless it is over `maxValue` or the key is kept already. */
  set(key: number, value: Uint8Array): void {
    if (value.length > this.maxValue || this.#seq.has(key)) return;
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
    this.#written += n;
    this.#seq.set(key, this.#push(key, head, n, this.#written));
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
      if (this.#seq.get(key) === this.#front) this.#seq.delete(key);
      this.#front++;
    }
  }

  /** Queues a copy; its sequence number. */
  #push(key: number, position: number, length: number, stamp: number): number {
    if (this.#back - this.#front === this.#keys.length) {
      // twice the capacity: every queued copy keeps its number, at its place in the new arrays
      const n = this.#keys.length;
      const keys = new Int32Array(n * 2);
      const positions = new Float64Array(n * 2);
      const lengths = new Int32Array(n * 2);
      const stamps = new Float64Array(n * 2);
      for (let s = this.#front; s < this.#back; s++) {
        const i = s & (n - 1);
        const j = s & (2 * n - 1);
        keys[j] = this.#keys[i]!;
        positions[j] = this.#positions[i]!;
        lengths[j] = this.#lengths[i]!;
        stamps[j] = this.#stamps[i]!;
      }
      this.#keys = keys;
      this.#positions = positions;
      this.#lengths = lengths;
      this.#stamps = stamps;
    }
    const seq = this.#back++;
    const i = seq & (this.#keys.length - 1);
    this.#keys[i] = key;
    this.#positions[i] = position;
    this.#lengths[i] = length;
    this.#stamps[i] = stamp;
    return seq;
  }
}

/** A slot of SeqIndex no key holds. */
const EMPTY = -0x80000000;

/**
 * A map from keys (32-bit integers but -2^31) to numbers: open addressing with linear probing
 * over typed arrays, deletions shifting later entries back (no tombstones), the table doubled
 * when half full. Sequential keys (entry indexes) land on distinct slots: the hash is a
 * multiplication by an odd number, a bijection on the low bits.
 */
class SeqIndex {
  #keys = new Int32Array(64).fill(EMPTY);
  #values = new Float64Array(64);
  #size = 0;

  #home(key: number, mask: number): number {
    return Math.imul(key, 0x9e3779b1) & mask;
  }

  #slot(key: number): number {
    const mask = this.#keys.length - 1;
    let i = this.#home(key, mask);
    for (;;) {
      const k = this.#keys[i]!;
      if (k === EMPTY || k === key) return i;
      i = (i + 1) & mask;
    }
  }

  has(key: number): boolean {
    return this.#keys[this.#slot(key)] !== EMPTY;
  }

  get(key: number): number | undefined {
    const i = this.#slot(key);
    return this.#keys[i] === EMPTY ? undefined : this.#values[i];
  }

  set(key: number, value: number): void {
    let i = this.#slot(key);
    if (this.#keys[i] === EMPTY) {
      if ((this.#size + 1) * 2 > this.#keys.length) {
        this.#grow();
        i = this.#slot(key);
      }
      this.#keys[i] = key;
      this.#size++;
    }
    this.#values[i] = value;
  }

  delete(key: number): void {
    const keys = this.#keys;
    const mask = keys.length - 1;
    let i = this.#slot(key);
    if (keys[i] === EMPTY) return;
    this.#size--;
    // entries after the hole move into it unless that would put them before their home slot
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.#home(keys[j]!, mask);
      // the entry at j stays when its home lies cyclically in (i, j]
      if (i <= j ? home > i && home <= j : home > i || home <= j) continue;
      keys[i] = keys[j]!;
      this.#values[i] = this.#values[j]!;
      i = j;
    }
    keys[i] = EMPTY;
  }

  clear(): void {
    this.#keys = new Int32Array(64).fill(EMPTY);
    this.#values = new Float64Array(64);
    this.#size = 0;
  }

  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Int32Array(keys.length * 2).fill(EMPTY);
    this.#values = new Float64Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === EMPTY) continue;
      const j = this.#slot(keys[i]!);
      this.#keys[j] = keys[i]!;
      this.#values[j] = values[i]!;
    }
  }
}
