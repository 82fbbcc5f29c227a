import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha1 } from '#sha1';
import { PackIndex, sortedOrder, writeIdx } from './idx.js';
import { readPackIndex } from './idx-read.js';

/** Positional reads of `bytes`, counting the bytes they copy at once. */
function reader(bytes: Uint8Array) {
  const stats = { reads: 0, largest: 0 };
  const read = async (position: number, into: Uint8Array) => {
    if (position + into.length > bytes.length) throw new Error('read past the end');
    stats.reads++;
    stats.largest = Math.max(stats.largest, into.length);
    into.set(bytes.subarray(position, position + into.length));
  };
  return { read, stats };
}

const expectCode = async (promise: Promise<unknown>, code: string) => expect(promise).rejects.toMatchObject({ code });

describe('readPackIndex', () => {
  it('holds in columns what the file says: every id, offset (64-bit ones too) and lookup', async () => {
    const hex = fc.stringMatching(/^[0-9a-f]{40}$/);
    const offset = fc.oneof(fc.integer({ min: 12, max: 0x7fffffff }), fc.integer({ min: 0x80000000, max: 2 ** 40 }));
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ oid: hex, offset }), { selector: (e) => e.oid, maxLength: 80 }),
        async (list) => {
          const entries = list.map((e, i) => ({ ...e, crc32: i }));
          const bytes = writeIdx(entries, '3'.repeat(40));
          const whole = new PackIndex(bytes, { verify: true });
          const columns = await readPackIndex(bytes.length, reader(bytes).read);
          expect(columns.count).toBe(whole.count);
          expect(columns.packHash).toBe('3'.repeat(40));
          for (let i = 0; i < whole.count; i++) {
            expect(columns.oidAt(i)).toBe(whole.oidAt(i));
            expect(columns.offsetAt(i)).toBe(whole.offsetAt(i));
          }
          for (const e of entries) expect(columns.find(e.oid)).toBe(whole.find(e.oid));
          expect(columns.find('f'.repeat(39) + 'e')).toBe(whole.find('f'.repeat(39) + 'e'));
          if (whole.count > 0) expect(() => columns.crcAt(0)).toThrow(expect.objectContaining({ code: 'IDX_NO_CRC' }));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('reads the offset and CRC tables a piece at a time, the ids in one read into their column', async () => {
    const entries = Array.from({ length: 40_000 }, (_, i) => ({
      oid: (i * 2654435761).toString(16).padStart(8, '0').slice(-8) + String(i).padStart(32, '0'),
      offset: 12 + i * 100,
      crc32: i,
    }));
    const bytes = writeIdx(entries, '4'.repeat(40));
    const { read, stats } = reader(bytes);
    const index = await readPackIndex(bytes.length, read);
    expect(index.count).toBe(entries.length);
    // the ids (800 KB) in one read; the 160 KB tables in pieces
    expect(stats.largest).toBe(entries.length * 20);
    expect(stats.reads).toBeGreaterThan(4);
    for (const e of entries.slice(0, 500)) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
  });

  it('refuses damaged files with the codes of the whole-file parse', async () => {
    const bytes = writeIdx(
      [
        { oid: 'ab'.repeat(20), offset: 12, crc32: 0 },
        { oid: 'cd'.repeat(20), offset: 2 ** 33, crc32: 1 },
      ],
      '0'.repeat(40),
    );
    const read = (b: Uint8Array) => reader(b).read;
    await expectCode(readPackIndex(100, read(bytes)), 'IDX_TRUNCATED');
    const short = bytes.subarray(0, bytes.length - 4);
    await expectCode(readPackIndex(short.length, read(short)), 'IDX_CORRUPT');
    const signature = bytes.slice();
    signature[0] = 0;
    await expectCode(readPackIndex(signature.length, read(signature)), 'IDX_BAD_SIGNATURE');
    const version = bytes.slice();
    version[7] = 3;
    await expectCode(readPackIndex(version.length, read(version)), 'IDX_BAD_VERSION');
    const fanout = bytes.slice();
    fanout[8 + 0xab * 4 + 3] = 9;
    await expectCode(readPackIndex(fanout.length, read(fanout)), 'IDX_CORRUPT');
    // a flipped bit in each table: the ids, the CRCs, the offsets, the large offsets
    for (const at of [8 + 1024, 8 + 1024 + 40, 8 + 1024 + 48 + 3, 8 + 1024 + 56 + 7]) {
      const flipped = bytes.slice();
      flipped[at]! ^= 1;
      await expectCode(readPackIndex(flipped.length, read(flipped)), 'IDX_BAD_CHECKSUM');
    }
    // a large-offset slot past the table, under a checksum that matches
    const slot = writeIdx([{ oid: 'ab'.repeat(20), offset: 12, crc32: 0 }], '0'.repeat(40));
    slot.set([0x80, 0, 0, 5], 8 + 1024 + 24);
    slot.set(sha1(slot.subarray(0, slot.length - 20)), slot.length - 20);
    await expectCode(readPackIndex(slot.length, read(slot)), 'IDX_CORRUPT');
  });
});

describe('sortedOrder', () => {
  /** Ids in a few buckets of their first bytes (so buckets hold many), some of them twice. */
  function ids(count: number, seed: number): Uint8Array {
    const out = new Uint8Array(count * 20);
    let x = seed;
    const next = () => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x >>> 24;
    };
    for (let i = 0; i < count; i++) {
      if (i > 0 && next() < 16) out.copyWithin(i * 20, (i - 1) * 20, i * 20);
      else for (let b = 0; b < 20; b++) out[i * 20 + b] = b < 2 ? next() & 3 : next();
    }
    return out;
  }

  it('orders ids as a plain comparison does, a repeated id in pack order, below and above the wide buckets', () => {
    for (const count of [0, 1, 2, 300, 4095, 4096, 6000]) {
      const bytes = ids(count, count + 1);
      const expected = Array.from({ length: count }, (_, i) => i).sort((a, b) => {
        for (let k = 0; k < 20; k++) {
          const d = bytes[a * 20 + k]! - bytes[b * 20 + k]!;
          if (d !== 0) return d;
        }
        return a - b;
      });
      expect(Array.from(sortedOrder(bytes, count)), `${count} ids`).toEqual(expected);
    }
  });
});
