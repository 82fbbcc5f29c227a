/**
 * Corrupted, truncated and hostile packs: every one is rejected with a PackError carrying a
 * stable code, never a crash, a hang or unbounded memory; and the store is left unchanged.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDelta } from './delta.js';
import { EntryType, encodeEntryHeader, encodeOfsOffset } from './entry-header.js';
import { isPackError } from './errors.js';
import { hexToBytes, TYPE_CODES } from './object.js';
import { importPack } from './pack-import.js';
import type { PackLimits } from './pack-reader.js';
import { packObjects } from './pack-writer.js';
import { sha1 } from './sha1.js';
import { MemoryObjectStore } from './store.js';
import { concat } from './test-bytes.js';
import { deflate } from './zlib.js';

const enc = new TextEncoder();

const CODES = new Set([
  'PACK_BAD_SIGNATURE',
  'PACK_BAD_VERSION',
  'PACK_TRUNCATED',
  'PACK_BAD_CHECKSUM',
  'PACK_TRAILING_DATA',
  'PACK_BAD_TYPE',
  'PACK_BAD_HEADER',
  'PACK_CORRUPT_ZLIB',
  'PACK_SIZE_MISMATCH',
  'PACK_BAD_DELTA',
  'PACK_BAD_BASE_OFFSET',
  'PACK_MISSING_BASE',
  'PACK_DUPLICATE_OBJECT',
  'PACK_LIMIT_OBJECTS',
  'PACK_LIMIT_OBJECT_SIZE',
  'PACK_LIMIT_DELTA_SIZE',
  'PACK_LIMIT_DEPTH',
  'PACK_LIMIT_INFLATED',
]);

/** A pack from raw entries, with a correct header count (unless given) and trailer. */
function buildPack(entries: Uint8Array[], count = entries.length): Uint8Array {
  const header = new Uint8Array(12);
  header.set(enc.encode('PACK'));
  new DataView(header.buffer).setUint32(4, 2);
  new DataView(header.buffer).setUint32(8, count >>> 0);
  const body = concat([header, ...entries]);
  return concat([body, sha1(body)]);
}

const whole = (type: keyof typeof TYPE_CODES, data: Uint8Array) =>
  concat([encodeEntryHeader(TYPE_CODES[type], data.length), deflate(data)]);

async function rejects(pack: Uint8Array | AsyncIterable<Uint8Array>, limits?: PackLimits): Promise<string> {
  const store = new MemoryObjectStore();
  try {
    await importPack(store, pack instanceof Uint8Array ? [pack] : pack, limits ? { limits } : {});
  } catch (error) {
    expect(isPackError(error), String(error)).toBe(true);
    expect(store.size).toBe(0);
    return (error as { code: string }).code;
  }
  throw new Error('the pack was accepted');
}

async function validPack(): Promise<Uint8Array> {
  const store = new MemoryObjectStore();
  const oids: string[] = [];
  let text = 'line one\nline two\n'.repeat(40);
  for (let i = 0; i < 6; i++) {
    text += `edit ${i}\n`;
    oids.push(await store.write('blob', enc.encode(text)));
  }
  const parts: Uint8Array[] = [];
  for await (const c of packObjects(store, oids)) parts.push(c);
  return concat(parts);
}

describe('hostile packs', () => {
  it('every single-byte corruption is rejected with a stable code', async () => {
    const pack = await validPack();
    await fc.assert(
      fc.asyncProperty(fc.nat(pack.length - 1), fc.integer({ min: 1, max: 255 }), async (at, xor) => {
        const bad = pack.slice();
        bad[at]! ^= xor;
        expect(CODES).toContain(await rejects(bad));
      }),
      { numRuns: 300 },
    );
  });

  it('every truncation is rejected', async () => {
    const pack = await validPack();
    for (let n = 0; n < pack.length; n += 1) {
      const code = await rejects(pack.subarray(0, n));
      expect(['PACK_TRUNCATED', 'PACK_BAD_CHECKSUM']).toContain(code);
    }
  });

  it('random bytes after a valid header are rejected', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 400 }), fc.nat(10), async (body, count) => {
        const header = concat([enc.encode('PACK'), Uint8Array.of(0, 0, 0, 2, 0, 0, 0, count)]);
        expect(CODES).toContain(await rejects(concat([header, body])));
      }),
      { numRuns: 300 },
    );
  });

  it('bad signature, version, type, trailing data', async () => {
    const blob = whole('blob', enc.encode('x'));
    const good = buildPack([blob]);
    const sig = good.slice();
    sig[0] = 0x51;
    expect(await rejects(sig)).toBe('PACK_BAD_SIGNATURE');
    const ver = good.slice();
    ver[7] = 4;
    expect(await rejects(ver)).toBe('PACK_BAD_VERSION');
    expect(await rejects(buildPack([concat([Uint8Array.of(0x51), deflate(enc.encode('x'))])]))).toBe('PACK_BAD_TYPE');
    expect(await rejects(concat([good, Uint8Array.of(0)]))).toBe('PACK_TRAILING_DATA');
  });

  it('declared counts and sizes past the limits', async () => {
    expect(await rejects(buildPack([], 0xffffffff))).toBe('PACK_LIMIT_OBJECTS');
    expect(await rejects(buildPack([whole('blob', enc.encode('a'))], 5), { maxObjects: 4 })).toBe('PACK_LIMIT_OBJECTS');
    // a header declaring 2^40 bytes
    const huge = concat([Uint8Array.of(0xb0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), deflate(enc.encode('x'))]);
    expect(await rejects(buildPack([huge]))).toBe('PACK_LIMIT_OBJECT_SIZE');
    // declared 10 bytes, inflates to far more: stopped at the declared size
    const bomb = concat([encodeEntryHeader(EntryType.BLOB, 10), deflate(new Uint8Array(10_000_000))]);
    expect(await rejects(buildPack([bomb]))).toBe('PACK_SIZE_MISMATCH');
    const big = whole('blob', new Uint8Array(1000));
    expect(await rejects(buildPack([big, big]), { maxInflatedBytes: 1500 })).toBe('PACK_LIMIT_INFLATED');
  });

  it('an endless zlib stream (empty stored blocks) is cut off', async () => {
    async function* endless() {
      yield concat([
        enc.encode('PACK'),
        Uint8Array.of(0, 0, 0, 2, 0, 0, 0, 1),
        encodeEntryHeader(EntryType.BLOB, 10),
        Uint8Array.of(0x78, 0x01),
      ]);
      const block = Uint8Array.of(0x00, 0x00, 0x00, 0xff, 0xff);
      const chunk = concat(Array.from({ length: 2000 }, () => block));
      for (;;) yield chunk;
    }
    expect(await rejects(endless())).toBe('PACK_CORRUPT_ZLIB');
  });

  it('delta chains past the depth limit, bad offsets, delta results past the limit, cycles', async () => {
    const base = enc.encode('base text for deltas '.repeat(20));
    const entries: Uint8Array[] = [whole('blob', base)];
    const offsets: number[] = [12];
    let off = 12 + entries[0]!.length;
    let prev: Uint8Array = base;
    for (let i = 0; i < 8; i++) {
      const next = concat([prev, enc.encode(`+${i}`)]);
      const delta = createDelta(prev, next)!;
      const e = concat([
        encodeEntryHeader(EntryType.OFS_DELTA, delta.length),
        encodeOfsOffset(off - offsets[offsets.length - 1]!),
        deflate(delta),
      ]);
      entries.push(e);
      offsets.push(off);
      off += e.length;
      prev = next;
    }
    const store = new MemoryObjectStore();
    await importPack(store, [buildPack(entries)]);
    expect(store.size).toBe(9);
    expect(await rejects(buildPack(entries), { maxDeltaDepth: 5 })).toBe('PACK_LIMIT_DEPTH');
    expect(await rejects(buildPack(entries), { maxDeltaResultSize: base.length + 4 })).toBe('PACK_LIMIT_DELTA_SIZE');

    const delta = createDelta(base, enc.encode('other'))!;
    const beyond = concat([
      encodeEntryHeader(EntryType.OFS_DELTA, delta.length),
      encodeOfsOffset(100_000),
      deflate(delta),
    ]);
    expect(await rejects(buildPack([whole('blob', base), beyond]))).toBe('PACK_BAD_BASE_OFFSET');
    const midEntry = concat([
      encodeEntryHeader(EntryType.OFS_DELTA, delta.length),
      encodeOfsOffset(entries[0]!.length - 1),
      deflate(delta),
    ]);
    expect(await rejects(buildPack([whole('blob', base), midEntry]))).toBe('PACK_BAD_BASE_OFFSET');

    // two REF deltas naming each other
    const a = 'aa'.repeat(20);
    const b = 'bb'.repeat(20);
    const refDelta = (baseOid: string) =>
      concat([encodeEntryHeader(EntryType.REF_DELTA, delta.length), hexToBytes(baseOid), deflate(delta)]);
    expect(await rejects(buildPack([refDelta(b), refDelta(a)]))).toBe('PACK_MISSING_BASE');
    // a delta whose base has the wrong size
    const wrong = createDelta(enc.encode('short'), enc.encode('shorter'))!;
    const mismatched = concat([
      encodeEntryHeader(EntryType.OFS_DELTA, wrong.length),
      encodeOfsOffset(entries[0]!.length),
      deflate(wrong),
    ]);
    expect(await rejects(buildPack([whole('blob', base), mismatched]))).toBe('PACK_BAD_DELTA');
  });

  it('aborts with PACK_ABORTED', async () => {
    const pack = await validPack();
    const controller = new AbortController();
    async function* slow() {
      yield pack.subarray(0, 20);
      controller.abort();
      yield pack.subarray(20);
    }
    await expect(importPack(new MemoryObjectStore(), slow(), { signal: controller.signal })).rejects.toMatchObject({
      code: 'PACK_ABORTED',
    });
  });
});
