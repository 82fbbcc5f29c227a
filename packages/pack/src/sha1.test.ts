import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSha1, sha1, sha1Hex } from './sha1.js';

const enc = new TextEncoder();
const hex = (d: Uint8Array) => Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
const reference = (data: Uint8Array) => createHash('sha1').update(data).digest('hex');

describe('the JS SHA-1', () => {
  it('gives the FIPS 180 test vectors', () => {
    expect(sha1Hex(enc.encode(''))).toBe('da39a3ee5e6b4b0d3255bfef95601890afd80709');
    expect(sha1Hex(enc.encode('abc'))).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(sha1Hex(enc.encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))).toBe(
      '84983e441c3bd26ebaae4aa1f95129e5e54670f1',
    );
    const million = new Uint8Array(1_000_000).fill(0x61);
    expect(sha1Hex(million)).toBe('34aa973cd4c4daa4f61eeb2bdbad27316534016f');
    const h = createSha1();
    for (let i = 0; i < 1000; i++) h.update(million.subarray(i * 1000, (i + 1) * 1000));
    expect(hex(h.digest())).toBe('34aa973cd4c4daa4f61eeb2bdbad27316534016f');
  });

  it('pads every length around the block boundaries', () => {
    const data = new Uint8Array(300).map((_, i) => (i * 131 + 7) & 0xff);
    for (let n = 0; n <= 300; n++) {
      const part = data.subarray(0, n);
      expect(sha1Hex(part)).toBe(reference(part));
      expect(hex(sha1(part))).toBe(reference(part));
    }
  });

  it('reads views at any offset of a larger buffer, split anywhere, in any number of updates', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 5000 }),
        fc.nat(7),
        fc.array(fc.nat(5000), { maxLength: 6 }),
        (data, shift, cuts) => {
          // the same bytes at an odd place of a bigger buffer, so words are read unaligned
          const backing = new Uint8Array(data.length + 16);
          backing.set(data, shift);
          const view = backing.subarray(shift, shift + data.length);
          const points = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b);
          const h = createSha1();
          let from = 0;
          for (const p of [...points, data.length]) {
            h.update(view.subarray(from, p));
            from = p;
          }
          const expected = reference(data);
          expect(hex(h.digest())).toBe(expected);
          const parts = [0, ...points, data.length]
            .slice(1)
            .map((p, i, all) => view.subarray(i === 0 ? 0 : all[i - 1]!, p));
          expect(sha1Hex(...parts)).toBe(expected);
        },
      ),
    );
  });

  it('keeps a streaming hash apart from one-shot hashes done in between', () => {
    const a = enc.encode('a'.repeat(150));
    const b = enc.encode('b'.repeat(90));
    const h = createSha1().update(a);
    expect(sha1Hex(b)).toBe(reference(b));
    const other = createSha1().update(b);
    h.update(b);
    expect(hex(other.digest())).toBe(reference(b));
    const joined = new Uint8Array(a.length + b.length);
    joined.set(a);
    joined.set(b, a.length);
    expect(hex(h.digest())).toBe(reference(joined));
  });

  it('hands out a new digest array each time', () => {
    const x = sha1(enc.encode('x'));
    const y = sha1(enc.encode('y'));
    expect(hex(x)).toBe(reference(enc.encode('x')));
    expect(hex(y)).toBe(reference(enc.encode('y')));
  });
});
