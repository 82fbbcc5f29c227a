/**
 * The bytes of a pack being imported, kept in large blocks so entries can be re-read by offset
 * (delta bases evicted from the cache) and the pack handed whole to a store at the end.
 */
export class PackBuffer {
  readonly #blocks: Uint8Array[] = [];
  readonly #starts: number[] = [];
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

  append(bytes: Uint8Array): void {
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

  /** A copy of `length` bytes at `offset` (a view when they lie in one block). */
  read(offset: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    let o = 0;
    for (const [block, start] of this.#segments()) {
      if (o >= length) break;
      const end = start + block.length;
      if (end <= offset + o) continue;
      const from = offset + o - start;
      const n = Math.min(block.length - from, length - o);
      if (o === 0 && n === length) return block.subarray(from, from + n);
      out.set(block.subarray(from, from + n), o);
      o += n;
    }
    return out;
  }

  *#segments(): Generator<[Uint8Array, number]> {
    // binary search would be faster for many blocks; blocks are large so there are few
    for (let i = 0; i < this.#blocks.length; i++) yield [this.#blocks[i]!, this.#starts[i]!];
    if (this.#tailLength > 0) yield [this.#tail.subarray(0, this.#tailLength), this.#length - this.#tailLength];
  }

  /** Drops everything after `length`. */
  truncate(length: number): void {
    const chunks = this.chunks();
    this.#blocks.length = 0;
    this.#starts.length = 0;
    this.#tail = new Uint8Array(this.#blockSize);
    this.#tailLength = 0;
    let total = 0;
    for (const c of chunks) {
      if (total >= length) break;
      const piece = c.subarray(0, Math.min(c.length, length - total));
      this.#blocks.push(piece);
      this.#starts.push(total);
      total += piece.length;
    }
    this.#length = total;
  }

  /** Overwrites bytes in place (the pack header's object count when fixing a thin pack). */
  patch(offset: number, bytes: Uint8Array): void {
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
