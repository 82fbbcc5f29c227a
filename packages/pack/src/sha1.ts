/**
 * SHA-1 (FIPS 180-4 §6.1) in plain JavaScript: the web default. Node selects `sha1.node.ts`
 * (node:crypto) through the package's `#sha1` import condition.
 */
export interface Sha1 {
  update(data: Uint8Array): Sha1;
  /** The 20-byte digest; the hasher cannot be used afterwards. */
  digest(): Uint8Array;
}

const W = new Int32Array(80);

class JsSha1 implements Sha1 {
  #h0 = 0x67452301;
  #h1 = 0xefcdab89 | 0;
  #h2 = 0x98badcfe | 0;
  #h3 = 0x10325476;
  #h4 = 0xc3d2e1f0 | 0;
  #block = new Uint8Array(64);
  #blockLength = 0;
  #length = 0;

  update(data: Uint8Array): Sha1 {
    let i = 0;
    const n = data.length;
    this.#length += n;
    if (this.#blockLength > 0) {
      const take = Math.min(64 - this.#blockLength, n);
      this.#block.set(data.subarray(0, take), this.#blockLength);
      this.#blockLength += take;
      i = take;
      if (this.#blockLength < 64) return this;
      this.#compress(this.#block, 0);
      this.#blockLength = 0;
    }
    for (; i + 64 <= n; i += 64) this.#compress(data, i);
    if (i < n) {
      this.#block.set(data.subarray(i), 0);
      this.#blockLength = n - i;
    }
    return this;
  }

  digest(): Uint8Array {
    const bits = this.#length * 8;
    const pad = new Uint8Array(this.#blockLength < 56 ? 64 - this.#blockLength : 128 - this.#blockLength);
    pad[0] = 0x80;
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    const end = pad.length;
    pad[end - 8] = hi >>> 24;
    pad[end - 7] = hi >>> 16;
    pad[end - 6] = hi >>> 8;
    pad[end - 5] = hi;
    pad[end - 4] = lo >>> 24;
    pad[end - 3] = lo >>> 16;
    pad[end - 2] = lo >>> 8;
    pad[end - 1] = lo;
    this.#length -= pad.length;
    this.update(pad);
    const out = new Uint8Array(20);
    const hs = [this.#h0, this.#h1, this.#h2, this.#h3, this.#h4];
    for (let k = 0; k < 5; k++) {
      const h = hs[k]!;
      out[k * 4] = h >>> 24;
      out[k * 4 + 1] = h >>> 16;
      out[k * 4 + 2] = h >>> 8;
      out[k * 4 + 3] = h;
    }
    return out;
  }

  #compress(b: Uint8Array, o: number): void {
    const w = W;
    for (let t = 0; t < 16; t++, o += 4) w[t] = (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!;
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3]! ^ w[t - 8]! ^ w[t - 14]! ^ w[t - 16]!;
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = this.#h0;
    let bb = this.#h1;
    let c = this.#h2;
    let d = this.#h3;
    let e = this.#h4;
    for (let t = 0; t < 80; t++) {
      let f: number;
      let k: number;
      if (t < 20) {
        f = (bb & c) | (~bb & d);
        k = 0x5a827999;
      } else if (t < 40) {
        f = bb ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (t < 60) {
        f = (bb & c) | (bb & d) | (c & d);
        k = 0x8f1bbcdc | 0;
      } else {
        f = bb ^ c ^ d;
        k = 0xca62c1d6 | 0;
      }
      const temp = (((a << 5) | (a >>> 27)) + f + e + k + w[t]!) | 0;
      e = d;
      d = c;
      c = (bb << 30) | (bb >>> 2);
      bb = a;
      a = temp;
    }
    this.#h0 = (this.#h0 + a) | 0;
    this.#h1 = (this.#h1 + bb) | 0;
    this.#h2 = (this.#h2 + c) | 0;
    this.#h3 = (this.#h3 + d) | 0;
    this.#h4 = (this.#h4 + e) | 0;
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
