/**
 * EWAH compressed bitmaps as git stores them in `.bitmap` files (git's ewah/ewah_io.c,
 * gitformat-bitmap "Encoding of EWAH bitmaps"):
 *
 *   u32be bit_size | u32be word_count | word_count x u64be words | u32be rlw_position
 *
 * The words are run-length words (RLW), each followed by its literal words:
 *
 *   RLW bit 0       the running bit (the value of the run)
 *   RLW bits 1..32  the run's length, in 64-bit words of that bit
 *   RLW bits 33..63 how many literal words follow the RLW
 *
 * Bit i of the bitmap is bit (i % 64) of the (i / 64)th uncompressed word, least significant
 * first. Decoded bitmaps here are `Uint32Array`s (bit i in word i >>> 5, bit i & 31): an
 * uncompressed 64-bit word w is words 2w (low half) and 2w + 1 (high half).
 */
import { PackError } from './errors.js';

/** A decoded bitmap: bit i is `(bits[i >>> 5] >>> (i & 31)) & 1`. */
export type Bits = Uint32Array;

/** A bitmap of `count` bits, all clear. */
export function emptyBits(count: number): Bits {
  return new Uint32Array(Math.ceil(count / 32));
}

export function hasBit(bits: Bits, i: number): boolean {
  return ((bits[i >>> 5]! >>> (i & 31)) & 1) === 1;
}

export function setBit(bits: Bits, i: number): void {
  bits[i >>> 5]! |= 1 << (i & 31);
}

/** `into |= other` (over the shorter length). */
export function orBits(into: Bits, other: Bits): void {
  const n = Math.min(into.length, other.length);
  for (let i = 0; i < n; i++) into[i]! |= other[i]!;
}

/** `into &= ~other`. */
export function andNotBits(into: Bits, other: Bits): void {
  const n = Math.min(into.length, other.length);
  for (let i = 0; i < n; i++) into[i]! &= ~other[i]!;
}

/** `into ^= other`. */
export function xorBits(into: Bits, other: Bits): void {
  const n = Math.min(into.length, other.length);
  for (let i = 0; i < n; i++) into[i]! ^= other[i]!;
}

/** How many bits are set. */
export function countBits(bits: Bits): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) {
    let v = bits[i]!;
    v -= (v >>> 1) & 0x55555555;
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    n += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return n;
}

function corrupt(message: string, at: number): PackError {
  return new PackError('BITMAP_CORRUPT', `${message} (at bitmap offset ${at})`);
}

/** Where the EWAH bitmap at `at` ends (its bytes are checked to be there, not decoded). */
export function ewahEnd(bytes: Uint8Array, at: number): number {
  if (at + 8 > bytes.length) throw corrupt('EWAH header cut short', at);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const words = view.getUint32(at + 4);
  const end = at + 8 + words * 8 + 4;
  if (end > bytes.length) throw corrupt('EWAH words cut short', at);
  return end;
}

/**
 * Decodes the EWAH bitmap at `at` into `count` bits (the pack's objects): a bitmap that sets a
 * bit at or past `count`, or whose words do not parse, throws BITMAP_CORRUPT. Runs of zeros past
 * the end are ignored (they carry nothing). The work is bounded by the encoded words and
 * `count`, whatever the lengths say. `into`, a bitmap of `count` bits no longer needed, is
 * decoded into (cleared first) instead of a new one.
 */
export function decodeEwah(bytes: Uint8Array, at: number, count: number, into?: Bits): { bits: Bits; end: number } {
  const end = ewahEnd(bytes, at);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const wordCount = view.getUint32(at + 4);
  const bits = into?.length === Math.ceil(count / 32) ? into.fill(0) : emptyBits(count);
  // uncompressed 64-bit words that hold bits below `count`
  const limit = Math.ceil(count / 64);
  let out = 0;
  let p = at + 8;
  const wordsEnd = p + wordCount * 8;
  const fill = (from: number, n: number) => {
    for (let w = from; w < from + n; w++) {
      bits[2 * w] = 0xffffffff;
      if (2 * w + 1 < bits.length) bits[2 * w + 1] = 0xffffffff;
    }
  };
  while (p < wordsEnd) {
    const hi = view.getUint32(p);
    const lo = view.getUint32(p + 4);
    p += 8;
    const runBit = lo & 1;
    const run = (lo >>> 1) + (hi & 1) * 2 ** 31;
    const literals = hi >>> 1;
    if (run > 0) {
      if (runBit === 1) {
        if (out + run > limit) throw corrupt('EWAH run of ones past the end', p - 8);
        fill(out, run);
      }
      out += run;
    }
    if (literals > 0) {
      if (p + literals * 8 > wordsEnd) throw corrupt('EWAH literal words cut short', p - 8);
      for (let k = 0; k < literals; k++, p += 8, out++) {
        const whi = view.getUint32(p);
        const wlo = view.getUint32(p + 4);
        if (wlo === 0 && whi === 0) continue;
        if (out >= limit) throw corrupt('EWAH literal word past the end', p);
        bits[2 * out] = wlo;
        if (2 * out + 1 < bits.length) bits[2 * out + 1] = whi;
        else if (whi !== 0) throw corrupt('EWAH literal word past the end', p);
      }
    }
  }
  // bits past `count` in the last word
  const tail = count & 31;
  if (tail !== 0 && bits.length > 0 && bits[bits.length - 1]! >>> tail !== 0) {
    throw corrupt('EWAH bit set past the end', at);
  }
  return { bits, end };
}

/**
 * Encodes `count` bits as EWAH (the mirror of `decodeEwah`; git reads it): runs of all-zero or
 * all-one words become run lengths, other words literals.
 */
export function encodeEwah(bits: Bits, count: number): Uint8Array {
  const total = Math.ceil(count / 64);
  const word = (w: number): [number, number] => [bits[2 * w] ?? 0, bits[2 * w + 1] ?? 0];
  // trailing zero words are left out (bit_size still says how many bits there are)
  let last = total;
  while (last > 0) {
    const [lo, hi] = word(last - 1);
    if (lo !== 0 || hi !== 0) break;
    last--;
  }
  const out: number[] = [];
  let rlwAt = 0;
  let w = 0;
  const MAX_RUN = 2 ** 32 - 1;
  const MAX_LITERALS = 2 ** 31 - 1;
  while (w < last) {
    const [lo0, hi0] = word(w);
    const fillBit = lo0 === 0xffffffff && hi0 === 0xffffffff ? 1 : lo0 === 0 && hi0 === 0 ? 0 : -1;
    let run = 0;
    if (fillBit >= 0) {
      const v = fillBit === 1 ? 0xffffffff : 0;
      while (w < last && run < MAX_RUN) {
        const [lo, hi] = word(w);
        if (lo !== v || hi !== v) break;
        run++;
        w++;
      }
    }
    const literalsFrom = w;
    while (w < last && w - literalsFrom < MAX_LITERALS) {
      const [lo, hi] = word(w);
      if ((lo === 0 && hi === 0) || (lo === 0xffffffff && hi === 0xffffffff)) break;
      w++;
    }
    const literals = w - literalsFrom;
    rlwAt = out.length / 2;
    const bit = fillBit === 1 ? 1 : 0;
    out.push((literals * 2 + Math.floor(run / 2 ** 31)) >>> 0, ((run % 2 ** 31) * 2 + bit) >>> 0);
    for (let k = literalsFrom; k < w; k++) {
      const [lo, hi] = word(k);
      out.push(hi, lo);
    }
  }
  const bytes = new Uint8Array(8 + out.length * 4 + 4);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, count);
  view.setUint32(4, out.length / 2);
  for (let i = 0; i < out.length; i++) view.setUint32(8 + i * 4, out[i]!);
  view.setUint32(8 + out.length * 4, rlwAt);
  return bytes;
}
