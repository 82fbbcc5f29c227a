/**
 * The bytes of a pack being imported, kept in large blocks so entries can be re-read by offset
 * (delta bases evicted from the cache) and the pack handed whole to a store at the end.
 * Appended views the caller hands over as kept (`append(bytes, true)`: the reader's input
 * chunks) become blocks as they are, without a copy; smaller pieces are copied into a block.
 */
export class PackBuffer {
  readonly #blocks: Uint8Array[] = [];
  readonly #starts: number[] = [];
  /** Blocks that are views of the caller's memory: copied before they are written to (`patch`). */
  readonly #borrowed = new Set<Uint8Array>();
  #tail: Uint8Array;
  #tailLength = 0;
  #length = 0;
  readonly #blockSize: number;

  constructor(blockSize = 1 << 20) {
    this.#blockSize = blockSize;
    this.#tail = new Uint8Array(blockSize);
  }

  get length(): number {
    return this.#length;
  }

  /** Appends `bytes`; `keep`: they stay as they are and may be kept rather than copied. */
  append(bytes: Uint8Array, keep = false): void {
    if (keep && bytes.length >= KEEP_MIN) {
      // what the tail holds becomes a block and the rest of it the next tail: no new memory
      if (this.#tailLength > 0) {
        this.#blocks.push(this.#tail.subarray(0, this.#tailLength));
        this.#starts.push(this.#length - this.#tailLength);
        this.#tail = this.#tail.subarray(this.#tailLength);
        this.#tailLength = 0;
      }
      this.#blocks.push(bytes);
      this.#starts.push(this.#length);
      this.#borrowed.add(bytes);
      this.#length += bytes.length;
      return;
    }
    let pos = 0;
    while (pos < bytes.length) {
      if (this.#tailLength === this.#tail.length) this.#seal(this.#blockSize);
      const n = Math.min(bytes.length - pos, this.#tail.length - this.#tailLength);
      this.#tail.set(bytes.subarray(pos, pos + n), this.#tailLength);
      this.#tailLength += n;
      this.#length += n;
      pos += n;
    }
  }

  #seal(nextSize: number): void {
    if (this.#tailLength > 0) {
      this.#blocks.push(this.#tail.subarray(0, this.#tailLength));
      this.#starts.push(this.#length - this.#tailLength);
    }
    this.#tail = new Uint8Array(nextSize);
    this.#tailLength = 0;
  }

  /** The index of the block holding `offset` (binary search: kept views make many blocks). */
  #blockAt(offset: number): number {
    let lo = 0;
    let hi = this.#starts.length - 1;
    if (hi < 0 || offset < this.#starts[0]!) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** A copy of `length` bytes at `offset` (a view when they lie in one block). */
  read(offset: number, length: number): Uint8Array {
    const tailStart = this.#length - this.#tailLength;
    const count = this.#blocks.length;
    let out: Uint8Array | undefined;
    let o = 0;
    // the tail comes as block `count`
    for (let i = offset >= tailStart ? count : Math.max(0, this.#blockAt(offset)); o < length && i <= count; i++) {
      const block = i === count ? this.#tail.subarray(0, this.#tailLength) : this.#blocks[i]!;
      const start = i === count ? tailStart : this.#starts[i]!;
      if (start + block.length <= offset + o) continue;
      const from = offset + o - start;
      const n = Math.min(block.length - from, length - o);
      if (o === 0 && n === length) return block.subarray(from, from + n);
      out ??= new Uint8Array(length);
      out.set(block.subarray(from, from + n), o);
      o += n;
    }
    return out ?? new Uint8Array(length);
  }

  *#segments(): Generator<[Uint8Array, number]> {
    for (let i = 0; i < this.#blocks.length; i++) yield [this.#blocks[i]!, this.#starts[i]!];
    if (this.#tailLength > 0) yield [this.#tail.subarray(0, this.#tailLength), this.#length - this.#tailLength];
  }

  /** Drops everything after `length`. */
  truncate(length: number): void {
    const chunks = this.chunks();
    const borrowed = new Set(this.#borrowed);
    this.#blocks.length = 0;
    this.#starts.length = 0;
    this.#borrowed.clear();
    this.#tail = new Uint8Array(this.#blockSize);
    this.#tailLength = 0;
    let total = 0;
    for (const c of chunks) {
      if (total >= length) break;
      const piece = c.subarray(0, Math.min(c.length, length - total));
      this.#blocks.push(piece);
      this.#starts.push(total);
      if (borrowed.has(c)) this.#borrowed.add(piece);
      total += piece.length;
    }
    this.#length = total;
  }

  /** Overwrites bytes in place (the pack header's object count when fixing a thin pack). */
  patch(offset: number, bytes: Uint8Array): void {
    for (let i = 0; i < this.#blocks.length; i++) {
      const block = this.#blocks[i]!;
      const start = this.#starts[i]!;
      if (offset + bytes.length <= start || offset >= start + block.length) continue;
      if (this.#borrowed.has(block)) {
        // never write into the caller's memory
        const copy = block.slice();
        this.#borrowed.delete(block);
        this.#blocks[i] = copy;
      }
    }
    for (const [block, start] of this.#segments()) {
      for (let i = 0; i < bytes.length; i++) {
        const at = offset + i - start;
        if (at >= 0 && at < block.length) block[at] = bytes[i]!;
      }
    }
  }

  chunks(): Uint8Array[] {
    return [...this.#segments()].map(([b]) => b);
  }
}

/** Kept views shorter than this are copied (a block per tiny view would make reads slower). */
const KEEP_MIN = 16 * 1024;
