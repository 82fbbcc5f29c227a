import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requireLine } from './connection.js';
import { applyShallowInfo, decodeShallowInfo, encodeShallowInfo, SHALLOW_INFO_SECTION } from './shallow-info.js';
import { fuzzParameters } from './test-fuzz.js';
import { expectCoded, mutated, readerOf, shallowInfo } from './test-messages.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('ShallowInfo', () => {
  it('v0 ends the lines with a flush, v2 is a section ending with a delim', () => {
    const info = { shallow: [A], unshallow: [B] };
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    expect(text(encodeShallowInfo(info, 0))).toBe(`0035shallow ${A}\n0037unshallow ${B}\n0000`);
    expect(text(encodeShallowInfo(info, 2))).toBe(`0011shallow-info\n0035shallow ${A}\n0037unshallow ${B}\n0001`);
    expect(text(encodeShallowInfo({ shallow: [], unshallow: [] }, 0))).toBe('0000');
  });

  it('v0 and v2 round-trip (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('ShallowInfo round trip', 300);
    await fc.assert(
      fc.asyncProperty(shallowInfo, fc.array(fc.nat(), { maxLength: 4 }), async (info, cuts) => {
        expect(await decodeShallowInfo(readerOf(encodeShallowInfo(info, 0), cuts))).toEqual(info);
        const v2 = readerOf(encodeShallowInfo(info, 2), cuts);
        expect(await requireLine(v2, 'the section')).toBe(SHALLOW_INFO_SECTION);
        expect(await decodeShallowInfo(v2)).toEqual(info);
      }),
      { seed, numRuns },
    );
  });

  it('applies to a shallow list: new shallow commits added, unshallow ones removed', () => {
    expect([...applyShallowInfo([B], { shallow: [A], unshallow: [B] })]).toEqual([A]);
  });

  it('bad lines are PROTOCOL_BAD_LINE; the id is the 40 characters after the keyword, as git reads it', async () => {
    const enc = new TextEncoder();
    await expect(decodeShallowInfo(readerOf(enc.encode('000dshallow 1\n0000')))).rejects.toMatchObject({
      code: 'PROTOCOL_BAD_LINE',
    });
    await expect(decodeShallowInfo(readerOf(enc.encode('0008NAK\n0000')))).rejects.toMatchObject({
      code: 'PROTOCOL_BAD_LINE',
    });
    await expect(decodeShallowInfo(readerOf(enc.encode('0002')))).rejects.toMatchObject({
      code: 'PROTOCOL_UNEXPECTED',
    });
    await expect(decodeShallowInfo(readerOf(enc.encode(`0036shallow ${A}x\n0000`)))).resolves.toEqual({
      shallow: [A],
      unshallow: [],
    });
  });

  it('the decoder gives a boundary or a coded error for truncated, oversized, repeated and random input (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('ShallowInfo decoder', 500);
    const input = mutated(
      fc.tuple(shallowInfo, fc.constantFrom(0 as const, 2 as const)).map(([info, v]) => encodeShallowInfo(info, v)),
    );
    let decoded = 0;
    await fc.assert(
      fc.asyncProperty(input, fc.array(fc.nat({ max: 4096 }), { maxLength: 4 }), async (bytes, cuts) => {
        try {
          const reader = readerOf(bytes, cuts);
          const first = await reader.read();
          if (first?.kind === 'data' && new TextDecoder().decode(first.payload) === `${SHALLOW_INFO_SECTION}\n`) {
            await decodeShallowInfo(reader);
          } else {
            await decodeShallowInfo(readerOf(bytes, cuts));
          }
          decoded++;
        } catch (error) {
          expectCoded(error);
        }
      }),
      { seed, numRuns },
    );
    expect(decoded).toBeGreaterThan(0);
  });
});
