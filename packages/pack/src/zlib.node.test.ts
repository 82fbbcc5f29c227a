import { constants, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToHex, type ObjectId } from './object.js';
import { importPack } from './pack-import.js';
import { PackReader } from './pack-reader.js';
import { packObjects } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';
import { concat } from './test-bytes.js';
import * as webZlib from './zlib.js';
import * as nodeZlib from './zlib.node.js';

/** Random bytes, or random runs of 512 between repeated ones (compressible). */
function sample(size: number, seed: number, random: boolean): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = random ? x & 255 : (i >> 9) & 1 ? x & 255 : i & 7;
  }
  return out;
}

function outcome(z: Pick<typeof webZlib, 'inflateOne'>, input: Uint8Array, size: number, final: boolean): string {
  try {
    const r = z.inflateOne(input, size, final);
    return r.kind === 'done' ? `done ${r.consumed} ${bytesToHex(r.data)}` : r.kind;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

describe('node:zlib inflateOne, outputs above the slab size', () => {
  it('agrees with the web inflate on every cut and on declared sizes one off, and a large result is its own buffer', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 128 * 1024 + 1, max: 300 * 1024 }),
        fc.nat(),
        fc.boolean(),
        fc.integer({ min: -1, max: 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (size, seed, random, skew, cutAt) => {
          const data = sample(size, seed, random);
          const packed = nodeZlib.deflate(data);
          // whole, a little short (the trailer), or cut anywhere
          const cuts = [packed.length, packed.length - 2, Math.floor(cutAt * packed.length)];
          for (const cut of cuts) {
            for (const final of [false, true]) {
              const input = packed.subarray(0, cut);
              expect(outcome(nodeZlib, input, size + skew, final)).toBe(outcome(webZlib, input, size + skew, final));
            }
          }
          const r = nodeZlib.inflateOne(packed, size, true);
          expect(r.kind).toBe('done');
          if (r.kind === 'done') {
            expect(r.data.byteOffset).toBe(0);
            expect(r.data.buffer.byteLength).toBe(size);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a retry after need-more gives the whole data, and a different entry never gets the unused buffer', () => {
    const a = sample(200 * 1024, 7, true);
    const b = sample(200 * 1024, 8, false);
    const pa = nodeZlib.deflate(a);
    const pb = nodeZlib.deflate(b);
    expect(nodeZlib.inflateOne(pa.subarray(0, 1000), a.length, false).kind).toBe('need-more');
    const rb = nodeZlib.inflateOne(pb, b.length, true);
    const ra = nodeZlib.inflateOne(pa, a.length, true);
    expect(rb.kind === 'done' && bytesToHex(rb.data)).toBe(bytesToHex(b));
    expect(ra.kind === 'done' && bytesToHex(ra.data)).toBe(bytesToHex(a));
    expect(nodeZlib.inflateOne(pa.subarray(0, 1000), a.length, false).kind).toBe('need-more');
    const again = nodeZlib.inflateOne(pa, a.length, true);
    expect(again.kind === 'done' && bytesToHex(again.data)).toBe(bytesToHex(a));
    // the earlier result is untouched by the later inflates
    expect(ra.kind === 'done' && bytesToHex(ra.data)).toBe(bytesToHex(a));
  });
});

/** Where a stream is cut into two pieces, the second continued with `rest.push`. */
function continued(z: Pick<typeof webZlib, 'inflateOne'>, input: Uint8Array, size: number, cut: number): string {
  try {
    const r = z.inflateOne(input.subarray(0, cut), size, false, true);
    if (r.kind === 'done') return `done ${r.consumed} ${bytesToHex(r.data)}`;
    if (!r.rest) return 'need-more without rest';
    const next = r.rest.push(input.subarray(cut), true);
    return next.kind === 'done' ? `done ${cut + next.consumed} ${bytesToHex(next.data)}` : next.kind;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** The shortest prefix of `packed` that inflates to all of its `size` bytes (the stream not yet ended). */
function outputFullAt(packed: Uint8Array, size: number): number {
  let lo = 0;
  let hi = packed.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const n = inflateSync(packed.subarray(0, mid), { finishFlush: constants.Z_SYNC_FLUSH }).length;
    if (n >= size) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

describe('a stream above the slab size continued with rest.push (exact output and its one-byte probe)', () => {
  for (const random of [true, false]) {
    it(`cut where the output fills up and at every input boundary near the end, ${random ? 'stored' : 'compressed'} data: the web inflate and node:zlib agree`, () => {
      const size = 200 * 1024 + 17;
      const data = sample(size, random ? 31 : 32, random);
      const packed = nodeZlib.deflate(data);
      const tail = new Uint8Array([9, 8, 7]);
      const input = concat([packed, tail]);
      const full = outputFullAt(packed, size);
      // the whole output is in before the stream ends (the end of block and the adler32 follow)
      expect(full).toBeLessThan(packed.length);
      const cuts = new Set([1, full - 1, full, full + 1]);
      for (let c = packed.length - 8; c <= input.length; c++) cuts.add(c);
      const whole = `done ${packed.length} ${bytesToHex(data)}`;
      const before = nodeZlib.openInflateRests();
      for (const cut of [...cuts].sort((a, b) => a - b)) {
        expect(continued(nodeZlib, input, size, cut), `node:zlib cut at ${cut}`).toBe(whole);
        expect(continued(webZlib, input, size, cut), `web cut at ${cut}`).toBe(whole);
      }
      expect(nodeZlib.openInflateRests()).toBe(before);

      // in three pieces: up to the full output, nothing, the rest
      for (const z of [nodeZlib, webZlib]) {
        const r = z.inflateOne(input.subarray(0, full), size, false, true);
        expect(r.kind).toBe('need-more');
        const rest = r.kind === 'need-more' ? r.rest : undefined;
        expect(rest?.push(new Uint8Array(0), false).kind).toBe('need-more');
        const last = rest?.push(input.subarray(full), false);
        expect(last?.kind === 'done' && `${full + last.consumed} ${bytesToHex(last.data)}`).toBe(
          `${packed.length} ${bytesToHex(data)}`,
        );
      }
    });
  }

  it('a stream longer than declared fails PACK_SIZE_MISMATCH through rest.push, as in one call', () => {
    for (const size of [3000, 200 * 1024]) {
      for (const random of [true, false]) {
        const data = sample(size, size + (random ? 1 : 2), random);
        const packed = nodeZlib.deflate(data);
        for (const declared of [size - 1, size - 1000]) {
          for (const z of [nodeZlib, webZlib]) {
            expect(() => z.inflateOne(packed, declared, true)).toThrow(
              expect.objectContaining({ code: 'PACK_SIZE_MISMATCH' }),
            );
          }
          const full = outputFullAt(packed, declared);
          const before = nodeZlib.openInflateRests();
          for (const cut of [1, full - 1, full, full + 1, packed.length >>> 1, packed.length - 1]) {
            for (const z of [nodeZlib, webZlib]) {
              expect(continued(z, packed, declared, cut), `${size}/${declared} cut at ${cut}`).toBe(
                'PACK_SIZE_MISMATCH',
              );
            }
          }
          expect(nodeZlib.openInflateRests()).toBe(before);
        }
      }
    }
  });
});

describe('a pack of large entries over any chunking', () => {
  it('PackReader hands every byte to onBytes in order and importPack stores the objects whole', async () => {
    const source = new MemoryObjectStore();
    const oids: ObjectId[] = [];
    for (let i = 0; i < 4; i++)
      oids.push(await source.write('blob', sample(150 * 1024 + i * 40_000, 100 + i, i % 2 === 0)));
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(source, oids, { deltas: false })) parts.push(c.slice());
    const pack = concat(parts);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 90_000 }), { minLength: 1, maxLength: 30 }),
        async (sizes) => {
          const chunks = (): Uint8Array[] => {
            const out: Uint8Array[] = [];
            for (let at = 0, k = 0; at < pack.length; k++) {
              const n = sizes[k % sizes.length]!;
              out.push(pack.slice(at, at + n));
              at += n;
            }
            return out;
          };
          const seen: Uint8Array[] = [];
          const reader = new PackReader(chunks(), { onBytes: (b) => seen.push(b.slice()) });
          const hexes: string[] = [];
          for await (const e of reader.entries()) hexes.push(e.kind === 'whole' ? e.oid : e.kind);
          expect(hexes).toEqual(oids);
          expect(bytesToHex(concat(seen))).toBe(bytesToHex(pack));

          // inflated in one call, and in pieces (entries above the stream threshold)
          for (const streamThreshold of [undefined, 64 * 1024]) {
            const target = new MemoryObjectStore();
            await importPack(target, chunks(), streamThreshold ? { streamThreshold } : {});
            for (const oid of oids) {
              const mine = await source.read(oid);
              const theirs = await target.read(oid);
              expect(theirs && bytesToHex(theirs.data)).toBe(bytesToHex(mine!.data));
            }
          }
        },
      ),
      { numRuns: 10 },
    );
  });
});

describe.each([
  ['web inflate', webZlib],
  ['node:zlib', nodeZlib],
])('%s inflateOne into a given buffer', (_name, z) => {
  it('inflates into it when it holds one byte more than the data, and checks the size as ever', () => {
    const data = sample(50_000, 7, true);
    const packed = nodeZlib.deflate(data);
    const into = new Uint8Array(60_000);
    const r = z.inflateOne(packed, data.length, true, false, into);
    expect(r.kind === 'done' && r.data.buffer).toBe(into.buffer);
    expect(r.kind === 'done' && bytesToHex(r.data)).toBe(bytesToHex(data));
    // a buffer too short for the check byte is not used
    const short = new Uint8Array(data.length);
    const s = z.inflateOne(packed, data.length, true, false, short);
    expect(s.kind === 'done' && s.data.buffer).not.toBe(short.buffer);
    expect(s.kind === 'done' && bytesToHex(s.data)).toBe(bytesToHex(data));
    // a stream longer or shorter than declared is refused, into the buffer or not
    expect(() => z.inflateOne(packed, data.length - 1, true, false, into)).toThrow(
      expect.objectContaining({ code: 'PACK_SIZE_MISMATCH' }),
    );
    expect(() => z.inflateOne(packed, data.length + 1, true, false, into)).toThrow(
      expect.objectContaining({ code: 'PACK_SIZE_MISMATCH' }),
    );
    // a stream continued across pieces goes on in the same buffer
    const first = z.inflateOne(packed.subarray(0, 20_000), data.length, false, true, into);
    expect(first.kind).toBe('need-more');
    const rest = first.kind === 'need-more' ? first.rest! : undefined;
    const done = rest!.push(packed.subarray(20_000), true);
    expect(done.kind === 'done' && done.data.buffer).toBe(into.buffer);
    expect(done.kind === 'done' && bytesToHex(done.data)).toBe(bytesToHex(data));
  });
});
