/**
 * SHA-1 (FIPS 180-4 §6.1) in plain JavaScript: the web default. Node selects `sha1.node.ts`
 * (node:crypto) through the package's `#sha1` import condition.
 *
 * Written for V8's optimizing compiler: the state lives in an Int32Array, blocks are compressed
 * by one function over locals with the four 20-round stages as separate branch-free loops, and
 * whole blocks are read straight from the caller's bytes (only a partial block is copied), so
 * hashing allocates nothing per block (pack-primitives.bench.ts compares it with node:crypto).
 */
export interface Sha1 {
  update(data: Uint8Array): Sha1;
  /** The 20-byte digest; the hasher cannot be used afterwards. */
  digest(): Uint8Array;
}

/** The message schedule, shared: compression is synchronous and never re-entered. */
const W = new Int32Array(80);

/**
 * Compresses `count` 64-byte blocks of `bytes` from offset `o` into `h` (5 words). Each 20-round
 * stage is unrolled by five, renaming the working variables instead of moving them.
 */
function compress(h: Int32Array, bytes: Uint8Array, o: number, count: number): void {
  const w = W;
  let h0 = h[0]!;
  let h1 = h[1]!;
  let h2 = h[2]!;
  let h3 = h[3]!;
  let h4 = h[4]!;
  for (let block = 0; block < count; block++, o += 64) {
    for (let t = 0; t < 16; t++) {
      const p = o + t * 4;
      w[t] = (bytes[p]! << 24) | (bytes[p + 1]! << 16) | (bytes[p + 2]! << 8) | bytes[p + 3]!;
    }
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3]! ^ w[t - 8]! ^ w[t - 14]! ^ w[t - 16]!;
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    for (let t = 0; t < 20; t += 5) {
      e = (((a << 5) | (a >>> 27)) + (d ^ (b & (c ^ d))) + e + 0x5a827999 + w[t]!) | 0;
      b = (b << 30) | (b >>> 2);
      d = (((e << 5) | (e >>> 27)) + (c ^ (a & (b ^ c))) + d + 0x5a827999 + w[t + 1]!) | 0;
      a = (a << 30) | (a >>> 2);
      c = (((d << 5) | (d >>> 27)) + (b ^ (e & (a ^ b))) + c + 0x5a827999 + w[t + 2]!) | 0;
      e = (e << 30) | (e >>> 2);
      b = (((c << 5) | (c >>> 27)) + (a ^ (d & (e ^ a))) + b + 0x5a827999 + w[t + 3]!) | 0;
      d = (d << 30) | (d >>> 2);
      a = (((b << 5) | (b >>> 27)) + (e ^ (c & (d ^ e))) + a + 0x5a827999 + w[t + 4]!) | 0;
      c = (c << 30) | (c >>> 2);
    }
    for (let t = 20; t < 40; t += 5) {
      e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w[t]!) | 0;
      b = (b << 30) | (b >>> 2);
      d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w[t + 1]!) | 0;
      a = (a << 30) | (a >>> 2);
      c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w[t + 2]!) | 0;
      e = (e << 30) | (e >>> 2);
      b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w[t + 3]!) | 0;
      d = (d << 30) | (d >>> 2);
      a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w[t + 4]!) | 0;
      c = (c << 30) | (c >>> 2);
    }
    for (let t = 40; t < 60; t += 5) {
      e = (((a << 5) | (a >>> 27)) + ((b & c) | (d & (b | c))) + e - 0x70e44324 + w[t]!) | 0;
      b = (b << 30) | (b >>> 2);
      d = (((e << 5) | (e >>> 27)) + ((a & b) | (c & (a | b))) + d - 0x70e44324 + w[t + 1]!) | 0;
      a = (a << 30) | (a >>> 2);
      c = (((d << 5) | (d >>> 27)) + ((e & a) | (b & (e | a))) + c - 0x70e44324 + w[t + 2]!) | 0;
      e = (e << 30) | (e >>> 2);
      b = (((c << 5) | (c >>> 27)) + ((d & e) | (a & (d | e))) + b - 0x70e44324 + w[t + 3]!) | 0;
      d = (d << 30) | (d >>> 2);
      a = (((b << 5) | (b >>> 27)) + ((c & d) | (e & (c | d))) + a - 0x70e44324 + w[t + 4]!) | 0;
      c = (c << 30) | (c >>> 2);
    }
    for (let t = 60; t < 80; t += 5) {
      e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w[t]!) | 0;
      b = (b << 30) | (b >>> 2);
      d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w[t + 1]!) | 0;
      a = (a << 30) | (a >>> 2);
      c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w[t + 2]!) | 0;
      e = (e << 30) | (e >>> 2);
      b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w[t + 3]!) | 0;
      d = (d << 30) | (d >>> 2);
      a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w[t + 4]!) | 0;
      c = (c << 30) | (c >>> 2);
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  h[0] = h0;
  h[1] = h1;
  h[2] = h2;
  h[3] = h3;
  h[4] = h4;
}

class JsSha1 implements Sha1 {
  readonly #h = new Int32Array([0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476, 0xc3d2e1f0 | 0]);
  readonly #block = new Uint8Array(64);
  #blockLength = 0;
  #length = 0;

  update(data: Uint8Array): Sha1 {
    let i = 0;
    const n = data.length;
    this.#length += n;
    if (this.#blockLength > 0) {
      const take = Math.min(64 - this.#blockLength, n);
      this.#block.set(take === n ? data : data.subarray(0, take), this.#blockLength);
      this.#blockLength += take;
      i = take;
      if (this.#blockLength < 64) return this;
      compress(this.#h, this.#block, 0, 1);
      this.#blockLength = 0;
    }
    const whole = (n - i) >>> 6;
    if (whole > 0) {
      compress(this.#h, data, i, whole);
      i += whole * 64;
    }
    if (i < n) {
      this.#block.set(data.subarray(i), 0);
      this.#blockLength = n - i;
    }
    return this;
  }

  digest(): Uint8Array {
    const bits = this.#length * 8;
    const block = this.#block;
    let used = this.#blockLength;
    block[used++] = 0x80;
    if (used > 56) {
      block.fill(0, used);
      compress(this.#h, block, 0, 1);
      used = 0;
    }
    block.fill(0, used, 56);
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    block[56] = hi >>> 24;
    block[57] = hi >>> 16;
    block[58] = hi >>> 8;
    block[59] = hi;
    block[60] = lo >>> 24;
    block[61] = lo >>> 16;
    block[62] = lo >>> 8;
    block[63] = lo;
    compress(this.#h, block, 0, 1);
    const out = new Uint8Array(20);
    const h = this.#h;
    for (let k = 0; k < 5; k++) {
      const v = h[k]!;
      out[k * 4] = v >>> 24;
      out[k * 4 + 1] = v >>> 16;
      out[k * 4 + 2] = v >>> 8;
      out[k * 4 + 3] = v;
    }
    return out;
  }
}

export function createSha1(): Sha1 {
  return new JsSha1();
}

export function sha1(...parts: Uint8Array[]): Uint8Array {
  const h = createSha1();
  for (const p of parts) h.update(p);
  return h.digest();
}

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, '0'));

/** SHA-1 as 40 lowercase hex digits. */
export function sha1Hex(...parts: Uint8Array[]): string {
  const d = sha1(...parts);
  let s = '';
  for (let i = 0; i < 20; i++) s += HEX[d[i]!];
  return s;
}

export const sha1Implementation = 'js';
