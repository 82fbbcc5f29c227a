import { constants, deflateRawSync, deflateSync, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { adler32 } from './inflate.js';
import { StreamInflater } from './inflate-stream.js';
import { bytesToHex } from './object.js';
import { concat } from './test-bytes.js';
import { fuzzParameters } from './test-fuzz.js';
import { randomUint32 } from './test-random.js';
import * as webZlib from './zlib.js';

/** Bytes from fast-check, or runs of a few symbols (so deflate finds matches of every length). */
const payload = fc.oneof(
  fc.uint8Array({ maxLength: 4000 }),
  fc
    .array(fc.tuple(fc.integer({ min: 1, max: 600 }), fc.integer({ min: 0, max: 3 })), { maxLength: 40 })
    .map((runs) => {
      const out: number[] = [];
      for (const [n, k] of runs) for (let i = 0; i < n; i++) out.push((i % (k + 1)) + 65);
      return new Uint8Array(out);
    }),
);

/** What node:zlib makes of a whole stream followed by `tail`: the data and the bytes used, or an error. */
function nodeOutcome(input: Uint8Array): string {
  try {
    let used = -1;
    const data = inflateSync(input, {
      info: true,
    } as never) as unknown as { buffer: Uint8Array; engine: { bytesWritten: number } };
    used = data.engine.bytesWritten;
    return `done ${used} ${bytesToHex(data.buffer)}`;
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === 'Z_BUF_ERROR' ? 'truncated' : 'corrupt';
  }
}

function webOutcome(input: Uint8Array, size: number): string {
  try {
    const r = webZlib.inflateOne(input, size, true);
    return r.kind === 'done' ? `done ${r.consumed} ${bytesToHex(r.data)}` : r.kind;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'PACK_TRUNCATED') return 'truncated';
    if (code === 'PACK_CORRUPT_ZLIB') return 'corrupt';
    return String(code ?? error);
  }
}

describe("gitport's inflate against node:zlib", () => {
  it('inflates what node:zlib deflates at every level and strategy, with the bytes each stream used', () => {
    fc.assert(
      fc.property(
        payload,
        fc.integer({ min: 0, max: 9 }),
        fc.constantFrom(constants.Z_DEFAULT_STRATEGY, constants.Z_FIXED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE),
        fc.uint8Array({ maxLength: 20 }),
        (data, level, strategy, tail) => {
          const packed = deflateSync(data, { level, strategy });
          const r = webZlib.inflateOne(concat([packed, tail]), data.length, true);
          expect(r.kind === 'done' && `${r.consumed} ${bytesToHex(r.data)}`).toBe(
            `${packed.length} ${bytesToHex(data)}`,
          );
        },
      ),
      fuzzParameters('inflate levels', 300),
    );
  });

  it('continues a stream cut anywhere, in any number of pieces, as in one call', () => {
    fc.assert(
      fc.property(payload, fc.integer({ min: 0, max: 9 }), fc.array(fc.nat(), { maxLength: 6 }), (data, level, at) => {
        const packed = deflateSync(data, { level });
        const cuts = [...new Set(at.map((n) => n % (packed.length + 1)))].sort((a, b) => a - b);
        const before = webZlib.openInflateRests();
        let r = webZlib.inflateOne(packed.subarray(0, cuts[0] ?? packed.length), data.length, false, true);
        const rest = r.kind === 'need-more' ? r.rest : undefined;
        if (r.kind === 'need-more') expect(rest).toBeDefined();
        let from = cuts[0] ?? packed.length;
        for (let k = 1; k <= cuts.length && r.kind === 'need-more'; k++) {
          const to = cuts[k] ?? packed.length;
          const next = rest!.push(packed.subarray(from, to), to === packed.length);
          r = next.kind === 'done' ? { ...next, consumed: from + next.consumed } : next;
          from = to;
        }
        expect(r.kind === 'done' && `${r.consumed} ${bytesToHex(r.data)}`).toBe(`${packed.length} ${bytesToHex(data)}`);
        expect(webZlib.openInflateRests()).toBe(before);
      }),
      fuzzParameters('inflate pieces', 200),
    );
  });

  it('refuses every corrupt or cut stream node:zlib refuses, with a code, and agrees on the rest', () => {
    fc.assert(
      fc.property(
        payload,
        fc.integer({ min: 0, max: 9 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }),
        fc.option(fc.nat()),
        (data, level, flips, cut) => {
          const packed = deflateSync(data, { level });
          const bad = packed.slice();
          for (const [at, x] of flips) bad[at % bad.length]! ^= x;
          const input = cut === null ? bad : bad.subarray(0, cut % (bad.length + 1));
          const mine = webOutcome(input, data.length);
          const theirs = nodeOutcome(input);
          if (theirs.startsWith('done')) {
            // the size check is the pack's own: zlib has no declared size
            const [, , hex] = theirs.split(' ');
            if (hex!.length === data.length * 2) expect(mine).toBe(theirs);
            else expect(mine).toBe('PACK_SIZE_MISMATCH');
          } else {
            // refused too, with a code (where a stream is both cut and corrupt, which one shows first may differ)
            expect(['truncated', 'corrupt', 'PACK_SIZE_MISMATCH']).toContain(mine);
          }
        },
      ),
      fuzzParameters('inflate corrupt', 500),
    );
  });

  it('inflates loose objects whole and refuses one past the limit', () => {
    const data = new TextEncoder().encode('blob 12\0hello world\n'.repeat(100));
    expect(bytesToHex(webZlib.inflateAll(deflateSync(data), 1 << 20))).toBe(bytesToHex(data));
    expect(() => webZlib.inflateAll(deflateSync(data), data.length - 1)).toThrow(
      expect.objectContaining({ code: 'PACK_LIMIT_OBJECT_SIZE' }),
    );
    expect(() => webZlib.inflateAll(deflateSync(data).subarray(0, 30), 1 << 20)).toThrow(
      expect.objectContaining({ code: 'PACK_CORRUPT_ZLIB' }),
    );
  });

  it('refuses a preset dictionary, a bad header and a raw deflate stream with PACK_CORRUPT_ZLIB', () => {
    const data = new Uint8Array(100).fill(7);
    const dict = deflateSync(data, { dictionary: new Uint8Array([7, 7, 7]) });
    const raw = deflateRawSync(data);
    for (const input of [dict, raw, new Uint8Array([0x78, 0x9d, 0, 0])]) {
      expect(() => webZlib.inflateOne(input, data.length, true)).toThrow(
        expect.objectContaining({ code: 'PACK_CORRUPT_ZLIB' }),
      );
    }
  });
});

describe('adler32', () => {
  /** RFC 1950's definition, reduced at every byte. */
  const reference = (data: Uint8Array, start: number, end: number, adler = 1) => {
    let a = adler & 0xffff;
    let b = adler >>> 16;
    for (let i = start; i < end; i++) {
      a = (a + data[i]!) % 65521;
      b = (b + a) % 65521;
    }
    return ((b << 16) | a) >>> 0;
  };

  it('agrees with the definition on any length, continued from any split, at the largest byte values', () => {
    const next = randomUint32(29);
    const noise = Uint8Array.from({ length: 20_000 }, () => next() & 0xff);
    for (const data of [noise, new Uint8Array(20_000).fill(0xff)]) {
      for (const length of [0, 1, 7, 8, 9, 3799, 3800, 3801, 5552, 7601, 20_000]) {
        expect(adler32(data, 0, length)).toBe(reference(data, 0, length));
        const split = next() % (length + 1);
        expect(adler32(data, split, length, adler32(data, 0, split))).toBe(reference(data, 0, length));
      }
    }
  });
});

describe('StreamInflater', () => {
  it('hands out the data in chunks across any input pieces, matches reaching back across chunks', () => {
    fc.assert(
      fc.property(
        payload,
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 300, max: 5000 }),
        fc.integer({ min: 1, max: 700 }),
        (data, level, chunkSize, piece) => {
          const big = concat([data, data, data, data]);
          const packed = deflateSync(big, { level });
          const input = concat([packed, new Uint8Array([1, 2, 3])]);
          const out: Uint8Array[] = [];
          const inflater = new StreamInflater((chunk) => out.push(chunk), chunkSize);
          let used = 0;
          for (let at = 0; !inflater.done; at += piece) {
            expect(at).toBeLessThan(input.length);
            used += inflater.push(input.subarray(at, at + piece));
          }
          expect(used).toBe(packed.length);
          expect(bytesToHex(concat(out))).toBe(bytesToHex(big));
        },
      ),
      fuzzParameters('stream inflater', 100),
    );
  });
});
