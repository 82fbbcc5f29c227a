/** EWAH bitmaps: round trips of seeded random bitmaps, and hostile encodings rejected with a code. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPackError } from './errors.js';
import { countBits, decodeEwah, emptyBits, encodeEwah, ewahEnd, hasBit, setBit } from './ewah.js';
import { fuzzParameters } from './test-fuzz.js';

/** A bitmap of `count` bits from runs of ones, zeros and random words (what EWAH compresses). */
const bitmaps = fc.integer({ min: 0, max: 3000 }).chain((count) =>
  fc
    .array(fc.tuple(fc.constantFrom('zeros', 'ones', 'random'), fc.integer({ min: 1, max: 400 }), fc.nat()), {
      maxLength: 20,
    })
    .map((runs) => {
      const bits = emptyBits(count);
      let at = 0;
      for (const [kind, length, seed] of runs) {
        for (let i = 0; i < length && at < count; i++, at++) {
          if (kind === 'ones' || (kind === 'random' && ((seed >>> (i % 31)) ^ i) & 1)) setBit(bits, at);
        }
      }
      return { count, bits };
    }),
);

describe('EWAH', () => {
  it('decodes what it encodes', () => {
    fc.assert(
      fc.property(bitmaps, ({ count, bits }) => {
        const encoded = encodeEwah(bits, count);
        const { bits: decoded, end } = decodeEwah(encoded, 0, count);
        expect(end).toBe(encoded.length);
        expect(decoded).toEqual(bits);
        expect(countBits(decoded)).toBe(countBits(bits));
      }),
      fuzzParameters('ewah round trip', 300),
    );
  });

  it('reads runs of ones and literal words by git layout', () => {
    // 130 bits: a run of two words of ones, then one literal word with bit 1 set
    const bytes = new Uint8Array(8 + 16 + 4);
    const view = new DataView(bytes.buffer);
    view.setUint32(0, 130);
    view.setUint32(4, 2);
    // RLW: running bit 1, run length 2, 1 literal word
    view.setUint32(8, 1 << 1);
    view.setUint32(12, (2 << 1) | 1);
    view.setUint32(16, 0);
    view.setUint32(20, 0b10);
    const { bits } = decodeEwah(bytes, 0, 130);
    for (let i = 0; i < 128; i++) expect(hasBit(bits, i)).toBe(true);
    expect(hasBit(bits, 128)).toBe(false);
    expect(hasBit(bits, 129)).toBe(true);
  });

  it('rejects bits past the end, cut words and oversized lengths with BITMAP_CORRUPT, never hanging', () => {
    const count = 100;
    const ones = emptyBits(count);
    for (let i = 0; i < count; i++) setBit(ones, i);
    const good = encodeEwah(ones, count);
    // the same bitmap read as one of fewer objects
    expect(() => decodeEwah(good, 0, 50)).toThrow(expect.objectContaining({ code: 'BITMAP_CORRUPT' }));
    for (let n = 0; n < good.length; n++) {
      expect(() => decodeEwah(good.subarray(0, n), 0, count)).toThrow(
        expect.objectContaining({ code: 'BITMAP_CORRUPT' }),
      );
    }
    // a run of 2^32 - 1 words of zeros, then a literal past the end
    const huge = new Uint8Array(8 + 16 + 4);
    const view = new DataView(huge.buffer);
    view.setUint32(4, 2);
    view.setUint32(8, (1 << 1) | 1);
    view.setUint32(12, 0xfffffffe);
    view.setUint32(20, 1);
    expect(() => decodeEwah(huge, 0, count)).toThrow(expect.objectContaining({ code: 'BITMAP_CORRUPT' }));
    // a word count far past the bytes
    view.setUint32(4, 0xffffffff);
    expect(() => ewahEnd(huge, 0)).toThrow(expect.objectContaining({ code: 'BITMAP_CORRUPT' }));
  });

  it('random bytes decode or fail with BITMAP_CORRUPT', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(5000), (bytes, count) => {
        try {
          const { bits } = decodeEwah(bytes, 0, count);
          expect(bits.length).toBe(Math.ceil(count / 32));
        } catch (error) {
          expect(isPackError(error) && error.code).toBe('BITMAP_CORRUPT');
        }
      }),
      fuzzParameters('ewah random bytes', 500),
    );
  });
});
