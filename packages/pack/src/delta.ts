/**
 * git's delta format (gitformat-pack, "Deltified representation"):
 *
 *   delta       = varint(base size) varint(result size) *instruction
 *   instruction = copy / insert
 *   copy        = 1xxxxxxx [off1][off2][off3][off4] [size1][size2][size3]   ; bits 0-3 select offset
 *                 bytes, bits 4-6 size bytes (little endian); size 0 means 0x10000
 *   insert      = 0nnnnnnn n*OCTET                                           ; n in 1..127; 0 is reserved
 *   varint      = little-endian groups of 7 bits, high bit set on all but the last byte
 *
 * The encoder indexes the base in 16-byte blocks and scans the target with a rolling hash, like
 * git's diff-delta.c (the idea, not the code): matches become copies, the rest inserts.
 */
import { PackError } from './errors.js';

export function readDeltaSizes(delta: Uint8Array): { baseSize: number; resultSize: number; offset: number } {
  let pos = 0;
  const read = () => {
    let value = 0;
    let shift = 0;
    // 2 ** shift, kept as a product: `**` with a variable exponent is a call to pow
    let scale = 1;
    for (;;) {
      if (pos >= delta.length) throw new PackError('PACK_BAD_DELTA', 'delta header truncated');
      const b = delta[pos++]!;
      value += (b & 0x7f) * scale;
      shift += 7;
      scale *= 128;
      if (!(b & 0x80)) return value;
      if (shift > 49) throw new PackError('PACK_BAD_DELTA', 'delta size varint too long');
    }
  };
  const baseSize = read();
  const resultSize = read();
  return { baseSize, resultSize, offset: pos };
}

/** The largest delta result `applyDelta` builds unless told otherwise (the pack reader's default limit). */
export const DEFAULT_MAX_DELTA_RESULT = 2 ** 30;

/**
 * Results above this size are allocated only once the instructions are known to produce exactly
 * the declared size: a delta of a few bytes cannot make the reader allocate a large buffer.
 */
const CHECK_BEFORE_ALLOCATING = 1 << 20;

/**
 * Applies `delta` to `base`. Throws PACK_BAD_DELTA on any inconsistency, PACK_LIMIT_DELTA_SIZE past
 * `maxResult` (default 1 GiB). `allocate` gives the result's memory (import carves small results
 * from shared slabs); short copies and inserts run as byte loops, cheaper than a subarray view each.
 */
export function applyDelta(
  base: Uint8Array,
  delta: Uint8Array,
  maxResult = DEFAULT_MAX_DELTA_RESULT,
  allocate: (size: number) => Uint8Array = (size) => new Uint8Array(size),
): Uint8Array {
  const { baseSize, resultSize, offset } = readDeltaSizes(delta);
  if (baseSize !== base.length) {
    throw new PackError('PACK_BAD_DELTA', `delta expects a base of ${baseSize} bytes, base has ${base.length}`);
  }
  if (resultSize > maxResult) {
    throw new PackError('PACK_LIMIT_DELTA_SIZE', `delta result of ${resultSize} bytes exceeds the limit ${maxResult}`);
  }
  if (resultSize > CHECK_BEFORE_ALLOCATING) checkDelta(base.length, delta, offset, resultSize);
  const out = allocate(resultSize);
  let o = 0;
  let pos = offset;
  const n = delta.length;
  while (pos < n) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let off = 0;
      let size = 0;
      if (op & 0x01) off = delta[pos++]!;
      if (op & 0x02) off |= delta[pos++]! << 8;
      if (op & 0x04) off |= delta[pos++]! << 16;
      if (op & 0x08) off = (off | (delta[pos++]! << 24)) >>> 0;
      if (op & 0x10) size = delta[pos++]!;
      if (op & 0x20) size |= delta[pos++]! << 8;
      if (op & 0x40) size |= delta[pos++]! << 16;
      if (pos > n) throw new PackError('PACK_BAD_DELTA', 'delta copy instruction truncated');
      if (size === 0) size = 0x10000;
      if (off + size > base.length || o + size > resultSize) {
        throw new PackError('PACK_BAD_DELTA', 'delta copy out of bounds');
      }
      if (size <= 32) for (let k = 0; k < size; k++) out[o + k] = base[off + k]!;
      else out.set(base.subarray(off, off + size), o);
      o += size;
    } else if (op !== 0) {
      if (pos + op > n || o + op > resultSize) throw new PackError('PACK_BAD_DELTA', 'delta insert out of bounds');
      if (op <= 32) for (let k = 0; k < op; k++) out[o + k] = delta[pos + k]!;
      else out.set(delta.subarray(pos, pos + op), o);
      o += op;
      pos += op;
    } else {
      throw new PackError('PACK_BAD_DELTA', 'delta opcode 0 is reserved');
    }
  }
  if (o !== resultSize) throw new PackError('PACK_BAD_DELTA', `delta produced ${o} bytes, header said ${resultSize}`);
  return out;
}

/**
 * Walks the instructions without copying: throws PACK_BAD_DELTA unless they stay in bounds and
 * produce exactly `resultSize` bytes (the same checks as `applyDelta`'s loop).
 */
function checkDelta(baseLength: number, delta: Uint8Array, offset: number, resultSize: number): void {
  let o = 0;
  let pos = offset;
  const n = delta.length;
  while (pos < n) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let off = 0;
      let size = 0;
      if (op & 0x01) off = delta[pos++]!;
      if (op & 0x02) off |= delta[pos++]! << 8;
      if (op & 0x04) off |= delta[pos++]! << 16;
      if (op & 0x08) off = (off | (delta[pos++]! << 24)) >>> 0;
      if (op & 0x10) size = delta[pos++]!;
      if (op & 0x20) size |= delta[pos++]! << 8;
      if (op & 0x40) size |= delta[pos++]! << 16;
      if (pos > n) throw new PackError('PACK_BAD_DELTA', 'delta copy instruction truncated');
      if (size === 0) size = 0x10000;
      if (off + size > baseLength || o + size > resultSize) {
        throw new PackError('PACK_BAD_DELTA', 'delta copy out of bounds');
      }
      o += size;
    } else if (op !== 0) {
      if (pos + op > n || o + op > resultSize) throw new PackError('PACK_BAD_DELTA', 'delta insert out of bounds');
      o += op;
      pos += op;
    } else {
      throw new PackError('PACK_BAD_DELTA', 'delta opcode 0 is reserved');
    }
  }
  if (o !== resultSize) throw new PackError('PACK_BAD_DELTA', `delta produced ${o} bytes, header said ${resultSize}`);
}

const BLOCK = 16;
const PRIME = 0x01000193;
let PRIME_POW = 1;
for (let i = 0; i < BLOCK - 1; i++) PRIME_POW = Math.imul(PRIME_POW, PRIME);

function blockHash(data: Uint8Array, at: number): number {
  let h = 0;
  for (let i = 0; i < BLOCK; i++) h = (Math.imul(h, PRIME) + data[at + i]!) | 0;
  return h;
}

/**
 * Recycled index tables: a delta window builds one index per object and drops one per object,
 * so a pool shared by the window's indexes keeps memory flat instead of churning. Tables come in
 * power-of-two capacities, one free list per capacity, so that taking one is a pop. Bounded.
 */
export class IndexTablePool {
  /**
   * Free tables by log2 of their capacity: every list made up front, each holding tables from the
   * start (emptied), so that neither the outer array nor a list changes its kind of elements
   * once the code using them is optimized (V8 would drop that code).
   */
  readonly #free: Int32Array[][] = Array.from({ length: 32 }, () => emptyObjectList<Int32Array>());
  #bytes = 0;
  constructor(readonly maxBytes = 4 << 20) {}

  /** A table of `length` entries (a view of a larger one, at its start); its contents are left over. */
  take(length: number): Int32Array {
    const c = length <= 1 ? 0 : 32 - Math.clz32(length - 1);
    // a table too large to be kept is made to measure (shifts, not `**`, which calls pow)
    if (c > 28 || (1 << c) * 4 > this.maxBytes) return new Int32Array(length);
    const t = this.#free[c]!.pop();
    if (t === undefined) return new Int32Array(1 << c).subarray(0, length);
    this.#bytes -= t.byteLength;
    return t.length === length ? t : t.subarray(0, length);
  }

  give(t: Int32Array): void {
    const whole = t.byteLength === t.buffer.byteLength ? t : new Int32Array(t.buffer);
    const n = whole.length;
    const c = 31 - Math.clz32(n);
    // only tables this pool made (power-of-two capacities)
    if (n === 0 || (n & (n - 1)) !== 0 || this.#bytes + whole.byteLength > this.maxBytes) return;
    this.#free[c]!.push(whole);
    this.#bytes += whole.byteLength;
  }
}

/**
 * A target's bytes as 32-bit words at each of the four byte alignments (`words[k][w]` holds bytes
 * `k + 4w` to `k + 4w + 3`), so that a match against a base is compared four bytes at a time
 * wherever it starts in the target. Built once per target and shared by its tries; the buffers are
 * reused from one target to the next (a delta search is synchronous).
 */
export class DeltaTarget {
  words: Int32Array[];
  #bytes: Uint8Array[];
  data: Uint8Array = new Uint8Array(0);

  constructor() {
    this.words = [];
    this.#bytes = [];
    this.#allocate(0);
  }

  /**
   * Four buffers of `size` bytes. The lists are made whole by literals: lists grown by `push`
   * change their kind of elements on the first object, and V8 drops code optimized for the old kind.
   */
  #allocate(size: number): void {
    const b0 = new ArrayBuffer(size);
    const b1 = new ArrayBuffer(size);
    const b2 = new ArrayBuffer(size);
    const b3 = new ArrayBuffer(size);
    this.#bytes = [new Uint8Array(b0), new Uint8Array(b1), new Uint8Array(b2), new Uint8Array(b3)];
    this.words = [new Int32Array(b0), new Int32Array(b1), new Int32Array(b2), new Int32Array(b3)];
  }

  /** Makes this the target `data` (valid until the next call). */
  set(data: Uint8Array): this {
    const n = data.length;
    const have = this.#bytes[0]!.length;
    // a large target's buffers are not kept for small ones
    if (have < n + 4 || (have > 1 << 20 && n <= 64 * 1024)) this.#allocate((Math.max(n + 4, 4096) + 3) & ~3);
    for (let k = 0; k < 4; k++) this.#bytes[k]!.set(k === 0 ? data : data.subarray(Math.min(k, n)));
    this.data = data;
    return this;
  }
}

let sharedTarget: DeltaTarget | undefined;

/** An index of a delta base, reusable for several targets. */
export class DeltaIndex {
  readonly base: Uint8Array;
  /** The base as 32-bit words (block starts are multiples of 16, so a match starts on a word). */
  readonly #words: Int32Array;
  /** Whether `#words` is a copy from the pool (given back on release). */
  readonly #ownWords: boolean;
  readonly #mask: number;
  readonly #heads: Int32Array;
  readonly #next: Int32Array;
  /** The full hash of each block: most bucket hits of unrelated data are rejected without reading bytes. */
  readonly #hashes: Int32Array;
  readonly #pool: IndexTablePool | undefined;

  constructor(base: Uint8Array, pool?: IndexTablePool) {
    this.#pool = pool;
    if (base.byteOffset % 4 === 0) {
      // whole words of the base where they lie (a last partial word is compared byte by byte)
      this.#words = new Int32Array(base.buffer, base.byteOffset, base.length >>> 2);
      this.#ownWords = false;
    } else {
      // a view off a word boundary: the base is copied to one
      const count = Math.max(1, (base.length + 3) >>> 2);
      const words = pool ? pool.take(count) : new Int32Array(count);
      const aligned = new Uint8Array(words.buffer, words.byteOffset, base.length);
      aligned.set(base);
      this.#words = words;
      this.#ownWords = true;
      base = aligned;
    }
    this.base = base;
    const blocks = Math.floor(base.length / BLOCK);
    let size = 16;
    while (size < blocks * 2) size <<= 1;
    const mask = size - 1;
    this.#mask = mask;
    const heads = pool ? pool.take(size) : new Int32Array(size);
    heads.fill(-1);
    const next = pool ? pool.take(Math.max(1, blocks)) : new Int32Array(Math.max(1, blocks));
    const hashes = pool ? pool.take(Math.max(1, blocks)) : new Int32Array(Math.max(1, blocks));
    // Later blocks first in each chain, so earlier positions win ties (shorter copy offsets).
    for (let b = blocks - 1; b >= 0; b--) {
      const h = blockHash(base, b * BLOCK);
      const slot = h & mask;
      hashes[b] = h;
      next[b] = heads[slot]!;
      heads[slot] = b;
    }
    this.#heads = heads;
    this.#next = next;
    this.#hashes = hashes;
  }

  /** Gives the tables back to the pool the index was built from; the index must not be used afterwards. */
  release(): void {
    const pool = this.#pool;
    if (!pool) return;
    pool.give(this.#heads);
    pool.give(this.#next);
    pool.give(this.#hashes);
    if (this.#ownWords) pool.give(this.#words);
  }

  /**
   * A delta turning the base into `target`, or undefined if it would exceed `maxSize` bytes.
   * `prepared`: the target already set in a DeltaTarget (a search trying several bases).
   */
  createDelta(target: Uint8Array, maxSize = Number.MAX_SAFE_INTEGER, prepared?: DeltaTarget): Uint8Array | undefined {
    if (prepared?.data !== target) prepared = (sharedTarget ??= new DeltaTarget()).set(target);
    const tw = prepared.words;
    const base = this.base;
    const bw = this.#words;
    const blen = base.length;
    const out = scratchWriter(Math.min(maxSize, target.length + 64) + 32);
    out.varint(blen);
    out.varint(target.length);
    const n = target.length;
    const heads = this.#heads;
    const next = this.#next;
    const hashes = this.#hashes;
    const mask = this.#mask;
    let insertStart = 0;
    let i = 0;
    let h = n >= BLOCK ? blockHash(target, 0) : 0;
    // past this position the pending insert alone would overflow maxSize: give up early
    let abortAt = insertStart + Math.floor(((maxSize - out.length) * 127) / 128);
    const last = n - BLOCK;
    while (i <= last) {
      if (i > abortAt) return undefined;
      let b = heads[h & mask]!;
      let bestLen = 0;
      let bestOff = 0;
      let tries = 0;
      while (b >= 0 && tries < 16) {
        tries++;
        if (hashes[b] === h) {
          const off = b * BLOCK;
          const maxLen = Math.min(blen - off, n - i);
          // four bytes at a time, then the last few one by one
          const words = tw[i & 3]!;
          const wb = off >>> 2;
          const wt = i >>> 2;
          const maxWords = maxLen >>> 2;
          let w = 0;
          while (w < maxWords && bw[wb + w] === words[wt + w]) w++;
          let len = w << 2;
          while (len < maxLen && base[off + len] === target[i + len]) len++;
          if (len > bestLen) {
            bestLen = len;
            bestOff = off;
            if (len >= 4096) break;
          }
        }
        b = next[b]!;
      }
      if (bestLen >= BLOCK) {
        // extend backwards into the pending insert
        while (i > insertStart && bestOff > 0 && base[bestOff - 1] === target[i - 1]) {
          i--;
          bestOff--;
          bestLen++;
        }
        if (!out.insert(target, insertStart, i, maxSize)) return undefined;
        let left = bestLen;
        let off = bestOff;
        while (left > 0) {
          const size = Math.min(left, 0x10000);
          if (!out.copy(off, size, maxSize)) return undefined;
          off += size;
          left -= size;
        }
        i += bestLen;
        insertStart = i;
        abortAt = insertStart + Math.floor(((maxSize - out.length) * 127) / 128);
        if (i <= last) h = blockHash(target, i);
        continue;
      }
      if (i < last) h = (Math.imul(h - Math.imul(target[i]!, PRIME_POW), PRIME) + target[i + BLOCK]!) | 0;
      i++;
    }
    if (!out.insert(target, insertStart, n, maxSize)) return undefined;
    return out.result();
  }
}

function emptyObjectList<T>(): T[] {
  const list = [null as T];
  list.length = 0;
  return list;
}

/** An object in a delta search window (see DeltaWindow). */
export interface DeltaObject {
  type: string | number;
  size: number;
  /** Stored whole in the source's packs: the repack that wrote it already tried deltas against other such objects. */
  whole?: boolean;
  /** Delta chain depth (0: stored whole in the output). */
  depth: number;
  /** Set while the object is in a window and indexed. */
  index?: DeltaIndex;
}

/**
 * git's sliding delta window (pack-objects.c find_deltas / try_delta, the heuristics, not the
 * code): objects come sorted (type, name hash, size descending); each is tried against the
 * window's bases, newest first, for the smallest delta under a size limit that shrinks with
 * the base's depth; the best base then moves to the newest end so it stays longest.
 */
export class DeltaWindow<T extends DeltaObject> {
  /**
   * Oldest first. Made holding objects (then emptied): a list made empty holds small integers
   * until its first object comes, and that change of its kind of elements makes V8 drop the
   * search's optimized code, once for each window made.
   */
  readonly slots: T[] = emptyObjectList<T>();
  readonly #pool = new IndexTablePool();
  readonly #target = new DeltaTarget();
  constructor(
    readonly size: number,
    readonly maxDepth: number,
  ) {}

  usable(base: T, target: T): boolean {
    return base.type === target.type && base.depth < this.maxDepth && !(target.whole && base.whole);
  }

  /** Whether a search for `target` could find anything. */
  hasUsable(target: T): boolean {
    for (const base of this.slots) if (this.usable(base, target)) return true;
    return false;
  }

  /** The bases a search for a target of `n` bytes may try that have no index yet (the caller indexes them). */
  unindexed(target: T, n: number): T[] {
    const out: T[] = [];
    for (const base of this.slots) {
      if (base.index || !this.usable(base, target)) continue;
      const max = this.#limit(n, base, 1);
      if (n < base.size / 32 || max <= 0 || Math.abs(n - base.size) >= max) continue;
      out.push(base);
    }
    return out;
  }

  /** Indexes `base` (one of `unindexed`) with its data. */
  provide(base: T, data: Uint8Array): void {
    base.index = new DeltaIndex(data, this.#pool);
  }

  #limit(n: number, base: T, refDepth: number): number {
    // half the target at most, less for deep bases, so that long chains only grow for deltas worth it
    const d = this.maxDepth;
    // n - n % 2 halves exactly: an odd n / 2 would be a fraction where V8 had seen integers
    return Math.floor((((n - (n % 2)) / 2 - 20) * (d - base.depth)) / (d - refDepth + 1));
  }

  /**
   * The best delta for `target` (its bytes `data`) against the window's indexed bases, or
   * undefined. Sets `target.depth` when a delta is chosen.
   */
  search(target: T, data: Uint8Array): { base: T; delta: Uint8Array } | undefined {
    const n = data.length;
    let prepared: DeltaTarget | undefined;
    let best: Uint8Array | undefined;
    let bestBase: T | undefined;
    const slots = this.slots;
    for (let w = slots.length - 1; w >= 0; w--) {
      const base = slots[w]!;
      if (!base.index || !this.usable(base, target)) continue;
      const bsize = base.size;
      if (n < bsize / 32) continue;
      let max = this.#limit(n, base, bestBase ? bestBase.depth + 1 : 1);
      // never more than the best delta so far
      if (best && best.length - 1 < max) max = best.length - 1;
      if (max <= 0 || Math.abs(n - bsize) >= max) continue;
      prepared ??= this.#target.set(data);
      const d = base.index.createDelta(data, max, prepared);
      if (d && (!best || d.length < best.length)) {
        best = d;
        bestBase = base;
      }
    }
    if (!best || !bestBase) return undefined;
    target.depth = bestBase.depth + 1;
    return { base: bestBase, delta: best };
  }

  /**
   * Adds `target` after its search: indexed with `data` when given (else on demand through
   * `unindexed`); `best` is the base it was deltified against. An object at the depth limit
   * cannot be a base and takes no slot (as git does).
   */
  push(target: T, data: Uint8Array | undefined, best: T | undefined): void {
    if (target.depth >= this.maxDepth) return;
    if (data) target.index = new DeltaIndex(data, this.#pool);
    const slots = this.slots;
    slots.push(target);
    if (best) {
      const at = slots.lastIndexOf(best, slots.length - 2);
      if (at >= 0) {
        slots.splice(at, 1);
        slots.push(best);
      }
    }
    while (slots.length > this.size) {
      const old = slots.shift()!;
      old.index?.release();
      old.index = undefined;
    }
  }

  /** Drops the window (and its indexes). */
  clear(): void {
    for (const s of this.slots) {
      s.index?.release();
      s.index = undefined;
    }
    this.slots.length = 0;
  }
}

export function createDelta(base: Uint8Array, target: Uint8Array, maxSize?: number): Uint8Array | undefined {
  return new DeltaIndex(base).createDelta(target, maxSize);
}

/**
 * One writer for every delta computed (createDelta is synchronous, so it is never shared by
 * two calls at once): most attempts fail or lose to a better base, and a fresh buffer per
 * attempt was mostly garbage. The result is copied out.
 */
let scratch: DeltaWriter | undefined;
function scratchWriter(capacity: number): DeltaWriter {
  if (!scratch) scratch = new DeltaWriter(Math.max(capacity, 64 * 1024));
  scratch.reset(capacity);
  return scratch;
}

class DeltaWriter {
  buf: Uint8Array;
  length = 0;
  constructor(capacity: number) {
    this.buf = new Uint8Array(capacity);
  }
  reset(capacity: number): void {
    this.length = 0;
    // keep a large buffer only while it is needed: a 2 MiB target must not pin 2 MiB forever
    if (this.buf.length < capacity || (this.buf.length > 1 << 20 && capacity <= 64 * 1024)) {
      this.buf = new Uint8Array(Math.max(capacity, 64 * 1024));
    }
  }
  #ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }
  varint(value: number): void {
    this.#ensure(10);
    while (value >= 0x80) {
      this.buf[this.length++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 128);
    }
    this.buf[this.length++] = value;
  }
  insert(src: Uint8Array, start: number, end: number, maxSize: number): boolean {
    while (start < end) {
      const n = Math.min(127, end - start);
      if (this.length + n + 1 > maxSize) return false;
      this.#ensure(n + 1);
      this.buf[this.length++] = n;
      this.buf.set(src.subarray(start, start + n), this.length);
      this.length += n;
      start += n;
    }
    return true;
  }
  copy(off: number, size: number, maxSize: number): boolean {
    this.#ensure(8);
    const at = this.length++;
    let op = 0x80;
    for (let k = 0; k < 4; k++) {
      const byte = (off >>> (8 * k)) & 0xff;
      if (byte) {
        op |= 1 << k;
        this.buf[this.length++] = byte;
      }
    }
    const s = size === 0x10000 ? 0 : size;
    for (let k = 0; k < 3; k++) {
      const byte = (s >>> (8 * k)) & 0xff;
      if (byte) {
        op |= 0x10 << k;
        this.buf[this.length++] = byte;
      }
    }
    this.buf[at] = op;
    return this.length <= maxSize;
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}
