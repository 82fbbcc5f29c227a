/**
 * SHA-1 (FIPS 180-4 §6.1) in plain JavaScript: the web default. Node selects `sha1.node.ts`
 * (node:crypto) through the package's `#sha1` import condition.
 *
 * Written for V8's optimizing compiler: the 80 rounds are fully unrolled over locals, the message
 * schedule lives in sixteen locals updated in place (no schedule array), and the words of whole
 * blocks are read big-endian through a DataView straight from the caller's bytes, at any offset
 * (no per-byte work, no copy: only a partial block goes through the 64-byte block buffer).
 * One-shot hashing (`sha1`, `sha1Hex`: every object id) runs on one shared state and allocates
 * nothing but the DataView of its input and the result. No collision detection (as before).
 * WebAssembly (hash-wasm) and WebCrypto were measured against it in Chromium: the unrolled
 * rounds keep up with WebAssembly on large inputs, at no extra bytes; `crypto.subtle` is
 * asynchronous, one-shot only, and slower than this per object.
 */
export interface Sha1 {
  update(data: Uint8Array): Sha1;
  /** The 20-byte digest; the hasher cannot be used afterwards. */
  digest(): Uint8Array;
}

/** Compresses `count` 64-byte blocks read through `view` from byte `p` into `h` (5 words). */
function compress(h: Int32Array, view: DataView, p: number, count: number): void {
  let h0 = h[0]!;
  let h1 = h[1]!;
  let h2 = h[2]!;
  let h3 = h[3]!;
  let h4 = h[4]!;
  for (; count > 0; count--, p += 64) {
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let x = 0;
    let w0 = view.getInt32(p);
    let w1 = view.getInt32(p + 4);
    let w2 = view.getInt32(p + 8);
    let w3 = view.getInt32(p + 12);
    let w4 = view.getInt32(p + 16);
    let w5 = view.getInt32(p + 20);
    let w6 = view.getInt32(p + 24);
    let w7 = view.getInt32(p + 28);
    let w8 = view.getInt32(p + 32);
    let w9 = view.getInt32(p + 36);
    let w10 = view.getInt32(p + 40);
    let w11 = view.getInt32(p + 44);
    let w12 = view.getInt32(p + 48);
    let w13 = view.getInt32(p + 52);
    let w14 = view.getInt32(p + 56);
    let w15 = view.getInt32(p + 60);
    // rounds 0-19
    e = (((a << 5) | (a >>> 27)) + (d ^ (b & (c ^ d))) + e + 0x5a827999 + w0) | 0;
    b = (b << 30) | (b >>> 2);
    d = (((e << 5) | (e >>> 27)) + (c ^ (a & (b ^ c))) + d + 0x5a827999 + w1) | 0;
    a = (a << 30) | (a >>> 2);
    c = (((d << 5) | (d >>> 27)) + (b ^ (e & (a ^ b))) + c + 0x5a827999 + w2) | 0;
    e = (e << 30) | (e >>> 2);
    b = (((c << 5) | (c >>> 27)) + (a ^ (d & (e ^ a))) + b + 0x5a827999 + w3) | 0;
    d = (d << 30) | (d >>> 2);
    a = (((b << 5) | (b >>> 27)) + (e ^ (c & (d ^ e))) + a + 0x5a827999 + w4) | 0;
    c = (c << 30) | (c >>> 2);
    e = (((a << 5) | (a >>> 27)) + (d ^ (b & (c ^ d))) + e + 0x5a827999 + w5) | 0;
    b = (b << 30) | (b >>> 2);
    d = (((e << 5) | (e >>> 27)) + (c ^ (a & (b ^ c))) + d + 0x5a827999 + w6) | 0;
    a = (a << 30) | (a >>> 2);
    c = (((d << 5) | (d >>> 27)) + (b ^ (e & (a ^ b))) + c + 0x5a827999 + w7) | 0;
    e = (e << 30) | (e >>> 2);
    b = (((c << 5) | (c >>> 27)) + (a ^ (d & (e ^ a))) + b + 0x5a827999 + w8) | 0;
    d = (d << 30) | (d >>> 2);
    a = (((b << 5) | (b >>> 27)) + (e ^ (c & (d ^ e))) + a + 0x5a827999 + w9) | 0;
    c = (c << 30) | (c >>> 2);
    e = (((a << 5) | (a >>> 27)) + (d ^ (b & (c ^ d))) + e + 0x5a827999 + w10) | 0;
    b = (b << 30) | (b >>> 2);
    d = (((e << 5) | (e >>> 27)) + (c ^ (a & (b ^ c))) + d + 0x5a827999 + w11) | 0;
    a = (a << 30) | (a >>> 2);
    c = (((d << 5) | (d >>> 27)) + (b ^ (e & (a ^ b))) + c + 0x5a827999 + w12) | 0;
    e = (e << 30) | (e >>> 2);
    b = (((c << 5) | (c >>> 27)) + (a ^ (d & (e ^ a))) + b + 0x5a827999 + w13) | 0;
    d = (d << 30) | (d >>> 2);
    a = (((b << 5) | (b >>> 27)) + (e ^ (c & (d ^ e))) + a + 0x5a827999 + w14) | 0;
    c = (c << 30) | (c >>> 2);
    e = (((a << 5) | (a >>> 27)) + (d ^ (b & (c ^ d))) + e + 0x5a827999 + w15) | 0;
    b = (b << 30) | (b >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0;
    w0 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (c ^ (a & (b ^ c))) + d + 0x5a827999 + w0) | 0;
    a = (a << 30) | (a >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1;
    w1 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (b ^ (e & (a ^ b))) + c + 0x5a827999 + w1) | 0;
    e = (e << 30) | (e >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2;
    w2 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (a ^ (d & (e ^ a))) + b + 0x5a827999 + w2) | 0;
    d = (d << 30) | (d >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3;
    w3 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (e ^ (c & (d ^ e))) + a + 0x5a827999 + w3) | 0;
    c = (c << 30) | (c >>> 2);
    // rounds 20-39
    x = w1 ^ w12 ^ w6 ^ w4;
    w4 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w4) | 0;
    b = (b << 30) | (b >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5;
    w5 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w5) | 0;
    a = (a << 30) | (a >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6;
    w6 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w6) | 0;
    e = (e << 30) | (e >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7;
    w7 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w7) | 0;
    d = (d << 30) | (d >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8;
    w8 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w8) | 0;
    c = (c << 30) | (c >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9;
    w9 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w9) | 0;
    b = (b << 30) | (b >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10;
    w10 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w10) | 0;
    a = (a << 30) | (a >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11;
    w11 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w11) | 0;
    e = (e << 30) | (e >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12;
    w12 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w12) | 0;
    d = (d << 30) | (d >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13;
    w13 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w13) | 0;
    c = (c << 30) | (c >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14;
    w14 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w14) | 0;
    b = (b << 30) | (b >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15;
    w15 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w15) | 0;
    a = (a << 30) | (a >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0;
    w0 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w0) | 0;
    e = (e << 30) | (e >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1;
    w1 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w1) | 0;
    d = (d << 30) | (d >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2;
    w2 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w2) | 0;
    c = (c << 30) | (c >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3;
    w3 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w3) | 0;
    b = (b << 30) | (b >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4;
    w4 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w4) | 0;
    a = (a << 30) | (a >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5;
    w5 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w5) | 0;
    e = (e << 30) | (e >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6;
    w6 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w6) | 0;
    d = (d << 30) | (d >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7;
    w7 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w7) | 0;
    c = (c << 30) | (c >>> 2);
    // rounds 40-59
    x = w5 ^ w0 ^ w10 ^ w8;
    w8 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + ((b & c) | (d & (b | c))) + e - 0x70e44324 + w8) | 0;
    b = (b << 30) | (b >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9;
    w9 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + ((a & b) | (c & (a | b))) + d - 0x70e44324 + w9) | 0;
    a = (a << 30) | (a >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10;
    w10 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + ((e & a) | (b & (e | a))) + c - 0x70e44324 + w10) | 0;
    e = (e << 30) | (e >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11;
    w11 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + ((d & e) | (a & (d | e))) + b - 0x70e44324 + w11) | 0;
    d = (d << 30) | (d >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12;
    w12 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + ((c & d) | (e & (c | d))) + a - 0x70e44324 + w12) | 0;
    c = (c << 30) | (c >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13;
    w13 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + ((b & c) | (d & (b | c))) + e - 0x70e44324 + w13) | 0;
    b = (b << 30) | (b >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14;
    w14 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + ((a & b) | (c & (a | b))) + d - 0x70e44324 + w14) | 0;
    a = (a << 30) | (a >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15;
    w15 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + ((e & a) | (b & (e | a))) + c - 0x70e44324 + w15) | 0;
    e = (e << 30) | (e >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0;
    w0 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + ((d & e) | (a & (d | e))) + b - 0x70e44324 + w0) | 0;
    d = (d << 30) | (d >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1;
    w1 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + ((c & d) | (e & (c | d))) + a - 0x70e44324 + w1) | 0;
    c = (c << 30) | (c >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2;
    w2 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + ((b & c) | (d & (b | c))) + e - 0x70e44324 + w2) | 0;
    b = (b << 30) | (b >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3;
    w3 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + ((a & b) | (c & (a | b))) + d - 0x70e44324 + w3) | 0;
    a = (a << 30) | (a >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4;
    w4 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + ((e & a) | (b & (e | a))) + c - 0x70e44324 + w4) | 0;
    e = (e << 30) | (e >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5;
    w5 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + ((d & e) | (a & (d | e))) + b - 0x70e44324 + w5) | 0;
    d = (d << 30) | (d >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6;
    w6 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + ((c & d) | (e & (c | d))) + a - 0x70e44324 + w6) | 0;
    c = (c << 30) | (c >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7;
    w7 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + ((b & c) | (d & (b | c))) + e - 0x70e44324 + w7) | 0;
    b = (b << 30) | (b >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8;
    w8 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + ((a & b) | (c & (a | b))) + d - 0x70e44324 + w8) | 0;
    a = (a << 30) | (a >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9;
    w9 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + ((e & a) | (b & (e | a))) + c - 0x70e44324 + w9) | 0;
    e = (e << 30) | (e >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10;
    w10 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + ((d & e) | (a & (d | e))) + b - 0x70e44324 + w10) | 0;
    d = (d << 30) | (d >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11;
    w11 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + ((c & d) | (e & (c | d))) + a - 0x70e44324 + w11) | 0;
    c = (c << 30) | (c >>> 2);
    // rounds 60-79
    x = w9 ^ w4 ^ w14 ^ w12;
    w12 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w12) | 0;
    b = (b << 30) | (b >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13;
    w13 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w13) | 0;
    a = (a << 30) | (a >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14;
    w14 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w14) | 0;
    e = (e << 30) | (e >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15;
    w15 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w15) | 0;
    d = (d << 30) | (d >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0;
    w0 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w0) | 0;
    c = (c << 30) | (c >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1;
    w1 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w1) | 0;
    b = (b << 30) | (b >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2;
    w2 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w2) | 0;
    a = (a << 30) | (a >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3;
    w3 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w3) | 0;
    e = (e << 30) | (e >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4;
    w4 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w4) | 0;
    d = (d << 30) | (d >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5;
    w5 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w5) | 0;
    c = (c << 30) | (c >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6;
    w6 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w6) | 0;
    b = (b << 30) | (b >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7;
    w7 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w7) | 0;
    a = (a << 30) | (a >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8;
    w8 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w8) | 0;
    e = (e << 30) | (e >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9;
    w9 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w9) | 0;
    d = (d << 30) | (d >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10;
    w10 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w10) | 0;
    c = (c << 30) | (c >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11;
    w11 = (x << 1) | (x >>> 31);
    e = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w11) | 0;
    b = (b << 30) | (b >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12;
    w12 = (x << 1) | (x >>> 31);
    d = (((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w12) | 0;
    a = (a << 30) | (a >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13;
    w13 = (x << 1) | (x >>> 31);
    c = (((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w13) | 0;
    e = (e << 30) | (e >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14;
    w14 = (x << 1) | (x >>> 31);
    b = (((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w14) | 0;
    d = (d << 30) | (d >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15;
    w15 = (x << 1) | (x >>> 31);
    a = (((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w15) | 0;
    c = (c << 30) | (c >>> 2);
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

/** The state of one hash: five words, a partial block, the length so far. */
class State {
  readonly h = new Int32Array(5);
  readonly block = new Uint8Array(64);
  readonly blockView = new DataView(this.block.buffer);
  blockLength = 0;
  length = 0;

  constructor() {
    this.reset();
  }

  reset(): void {
    const h = this.h;
    h[0] = 0x67452301;
    h[1] = 0xefcdab89 | 0;
    h[2] = 0x98badcfe | 0;
    h[3] = 0x10325476;
    h[4] = 0xc3d2e1f0 | 0;
    this.blockLength = 0;
    this.length = 0;
  }

  update(data: Uint8Array): void {
    const n = data.length;
    this.length += n;
    const block = this.block;
    let used = this.blockLength;
    let i = 0;
    if (used > 0) {
      // the few bytes that complete the block, byte by byte (no subarray for them)
      const take = Math.min(64 - used, n);
      for (; i < take; i++) block[used + i] = data[i]!;
      used += take;
      if (used < 64) {
        this.blockLength = used;
        return;
      }
      compress(this.h, this.blockView, 0, 1);
    }
    const whole = (n - i) >>> 6;
    if (whole > 0) {
      compress(this.h, new DataView(data.buffer, data.byteOffset, n), i, whole);
      i += whole * 64;
    }
    const rest = n - i;
    for (let k = 0; k < rest; k++) block[k] = data[i + k]!;
    this.blockLength = rest;
  }

  /** Pads the message and compresses the last block(s); the digest is then in \`h\`. */
  finish(): void {
    const bits = this.length * 8;
    const block = this.block;
    let used = this.blockLength;
    block[used++] = 0x80;
    if (used > 56) {
      block.fill(0, used);
      compress(this.h, this.blockView, 0, 1);
      used = 0;
    }
    block.fill(0, used, 56);
    this.blockView.setUint32(56, Math.floor(bits / 0x100000000));
    this.blockView.setUint32(60, bits >>> 0);
    compress(this.h, this.blockView, 0, 1);
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(20);
    const h = this.h;
    for (let k = 0, o = 0; k < 5; k++, o += 4) {
      const v = h[k]!;
      out[o] = v >>> 24;
      out[o + 1] = v >>> 16;
      out[o + 2] = v >>> 8;
      out[o + 3] = v;
    }
    return out;
  }

  hex(): string {
    const h = this.h;
    let s = '';
    for (let k = 0; k < 5; k++) {
      const v = h[k]!;
      s += HEX[v >>> 24]! + HEX[(v >>> 16) & 0xff]! + HEX[(v >>> 8) & 0xff]! + HEX[v & 0xff]!;
    }
    return s;
  }
}

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, '0'));

class JsSha1 implements Sha1 {
  readonly #state = new State();

  update(data: Uint8Array): Sha1 {
    this.#state.update(data);
    return this;
  }

  digest(): Uint8Array {
    this.#state.finish();
    return this.#state.bytes();
  }
}

export function createSha1(): Sha1 {
  return new JsSha1();
}

/** The state of the one-shot functions: hashing is synchronous, so one serves every call. */
const shared = new State();

function hashParts(parts: Uint8Array[]): State {
  shared.reset();
  for (const p of parts) shared.update(p);
  shared.finish();
  return shared;
}

export function sha1(...parts: Uint8Array[]): Uint8Array {
  return hashParts(parts).bytes();
}

/** SHA-1 as 40 lowercase hex digits. */
export function sha1Hex(...parts: Uint8Array[]): string {
  return hashParts(parts).hex();
}

export const sha1Implementation = 'js';
