/**
 * A set of binary object ids (20-byte SHA-1) in one open-addressing table, for the object
 * enumeration's hot loop: a tree entry's id is looked up where it lies in the tree's bytes, so
 * only ids not seen before are hex-encoded. SHA-1 bytes are uniform, so the first four bytes
 * serve as the hash.
 */
import { hexToBytes, type ObjectId } from './object.js';

const ID = 20;

export class OidSet {
  #ids: Uint8Array;
  /** Slot -> 1 + index of the id in `#ids`, 0 when empty. */
  #slots: Uint32Array;
  #mask: number;
  #size = 0;
  readonly #scratch = new Uint8Array(ID);

  constructor(capacity = 1024) {
    let n = 16;
    while (n < capacity * 2) n *= 2;
    this.#slots = new Uint32Array(n);
    this.#mask = n - 1;
    this.#ids = new Uint8Array(Math.max(16, capacity) * ID);
  }

  get size(): number {
    return this.#size;
  }

  #slot(bytes: Uint8Array, at: number): number {
    return findIdSlot(this.#slots, this.#mask, this.#ids, bytes, at);
  }

  /** Whether the id at `bytes[at..at+20]` is in the set. */
  hasBytes(bytes: Uint8Array, at = 0): boolean {
    return this.#slots[this.#slot(bytes, at)] !== 0;
  }

  /** Adds the id at `bytes[at..at+20]`; false when it was already there. */
  addBytes(bytes: Uint8Array, at = 0): boolean {
    const s = this.#slot(bytes, at);
    if (this.#slots[s] !== 0) return false;
    if ((this.#size + 1) * ID > this.#ids.length) {
      const grown = new Uint8Array(this.#ids.length * 2);
      grown.set(this.#ids);
      this.#ids = grown;
    }
    this.#ids.set(bytes.subarray(at, at + ID), this.#size * ID);
    this.#slots[s] = ++this.#size;
    if (this.#size * 2 > this.#slots.length) this.#rehash();
    return true;
  }

  has(oid: ObjectId): boolean {
    return this.hasBytes(hexToBytes(oid, this.#scratch));
  }

  add(oid: ObjectId): boolean {
    return this.addBytes(hexToBytes(oid, this.#scratch));
  }

  /** A copy with the same ids. */
  clone(): OidSet {
    const copy = new OidSet(this.#size);
    for (let i = 0; i < this.#size; i++) copy.addBytes(this.#ids, i * ID);
    return copy;
  }

  #rehash(): void {
    const slots = new Uint32Array(this.#slots.length * 2);
    const mask = slots.length - 1;
    const ids = this.#ids;
    for (let i = 0; i < this.#size; i++) {
      const at = i * ID;
      let s = ((ids[at]! << 24) | (ids[at + 1]! << 16) | (ids[at + 2]! << 8) | ids[at + 3]!) & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = i + 1;
    }
    this.#slots = slots;
    this.#mask = mask;
  }
}

/**
 * Open addressing over 20-byte ids kept in one buffer: `table` holds entry numbers plus one (0 is
 * empty), entry `e`'s id at `ids[(e - 1) * 20]`, probed linearly from the id's first four bytes
 * (ids are hashes already). Answers the slot holding the id at `bytes[at..at+20]`, or the empty
 * slot where it would go.
 */
export function findIdSlot(
  table: Uint32Array | Int32Array,
  mask: number,
  ids: Uint8Array,
  bytes: Uint8Array,
  at: number,
): number {
  let s = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) & mask;
  for (;;) {
    const e = table[s]!;
    if (e === 0) return s;
    const base = (e - 1) * ID;
    let k = 0;
    while (k < ID && ids[base + k] === bytes[at + k]) k++;
    if (k === ID) return s;
    s = (s + 1) & mask;
  }
}
