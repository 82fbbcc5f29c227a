import { inflateSync, crc32 as nodeCrc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PackError } from './errors.js';
import { crc32, deflateAsync, deflateEntry, inflateOne } from './zlib.js';

describe('the web CRC-32', () => {
  it('agrees with node:zlib on views at any offset, continued across any split', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(7), fc.nat(3000), (data, shift, cut) => {
        const backing = new Uint8Array(data.length + 8);
        backing.set(data, shift);
        const view = backing.subarray(shift, shift + data.length);
        const at = Math.min(cut, data.length);
        const expected = nodeCrc32(data);
        expect(crc32(view)).toBe(expected);
        expect(crc32(view.subarray(at), crc32(view.subarray(0, at)))).toBe(expected);
      }),
    );
  });
});

describe('the web deflate of a few objects (CompressionStream)', () => {
  it('gives zlib streams node:zlib and the web inflate read back, empty data included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 70_000 }), async (data) => {
        const z = await deflateAsync(data, 1);
        expect(new Uint8Array(inflateSync(z))).toEqual(data);
        const r = inflateOne(z, data.length, true);
        expect(r.kind === 'done' && r.consumed).toBe(z.length);
      }),
      { numRuns: 30 },
    );
  });
});

describe('the web deflate of pack entries (CompressionStream)', () => {
  it('gives zlib streams node:zlib reads back, at any level', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 70_000 }), fc.integer({ min: 0, max: 9 }), async (data, level) => {
        const z = await deflateEntry(data, level);
        expect(new Uint8Array(inflateSync(z))).toEqual(data);
      }),
      { numRuns: 20 },
    );
  });

  it('refuses a level zlib does not have, with the code the web `deflate` gives', () => {
    for (const level of [-1, 10, 1.5]) {
      expect(() => deflateEntry(new Uint8Array(1), level)).toThrow(PackError);
      expect(() => deflateEntry(new Uint8Array(1), level)).toThrow(
        expect.objectContaining({ code: 'PACK_CORRUPT_ZLIB' }),
      );
    }
  });
});
