import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sha1 } from '#sha1';
import type { FileHandleLike } from './fs-like.js';
import { PackIndex, sortedOrder, writeIdx } from './idx.js';
import {
  IndexReadingIds,
  LOOKUP_SPAN_MS,
  LOOKUPS_FROM_FILE,
  MIN_IDS_IN_FILE,
  readPackIndex,
  readPackIndexFile,
} from './idx-read.js';
import { randomUint32 } from './test-random.js';

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

/** Whether `index` still reads its ids from the file. */
const inFile = (index: PackIndex) => index instanceof IndexReadingIds && index.idsInFile;

const sha1Hex = (text: string) =>
  Array.from(sha1(new TextEncoder().encode(text)), (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * An index of `count` made-up entries read with synchronous reads (its ids left in the file),
 * and the largest synchronous read made of it so far.
 */
async function indexWithIdsInFile(count: number) {
  const entries = Array.from({ length: count }, (_, i) => ({ oid: sha1Hex(String(i)), offset: 12 + i, crc32: i }));
  const bytes = writeIdx(entries, '6'.repeat(40));
  const reads = { largest: 0 };
  const readSync = (position: number, into: Uint8Array) => {
    reads.largest = Math.max(reads.largest, into.length);
    into.set(bytes.subarray(position, position + into.length));
  };
  const index = await readPackIndex(bytes.length, reader(bytes).read, readSync);
  return { entries, index, reads };
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
          expect(columns.find(`${'f'.repeat(39)}e`)).toBe(whole.find(`${'f'.repeat(39)}e`));
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

  it("with synchronous reads, leaves a large index's ids in the file and answers lookups as the whole file does", async () => {
    const next = randomUint32(7);
    for (const [count, crowded] of [
      [MIN_IDS_IN_FILE / 20, 0],
      [20_000, 300],
      [16_000, 2000],
      [70_000, 0],
    ] as const) {
      // ids spread as hashes are, `crowded` of them under one two-byte prefix
      const oids = new Set<string>();
      while (oids.size < count) {
        const oid = sha1Hex(`${next()}`);
        oids.add(oids.size < crowded ? `abcd${oid.slice(4)}` : oid);
      }
      const entries = [...oids].map((oid, i) => ({ oid, offset: 12 + i * 7, crc32: i }));
      const bytes = writeIdx(entries, '5'.repeat(40));
      const whole = new PackIndex(bytes, { verify: true });
      const syncReads = { count: 0 };
      const readSync = (position: number, into: Uint8Array) => {
        if (position + into.length > bytes.length) throw new Error('read past the end');
        syncReads.count++;
        into.set(bytes.subarray(position, position + into.length));
      };
      const { read, stats } = reader(bytes);
      const index = await readPackIndex(bytes.length, read, readSync);
      // the ids went through in pieces (hashed, counted), none of them held
      expect(stats.largest).toBeLessThan(70_000);
      expect(inFile(index)).toBe(true);
      expect(syncReads.count).toBe(0);
      const absent = Array.from({ length: 50 }, (_, i) => sha1Hex(`absent ${i}`));
      const probes = [...entries.slice(0, 3000).map((e) => e.oid), ...absent, `abcd${'0'.repeat(36)}`];
      for (const oid of probes) expect(index.find(oid)).toBe(whole.find(oid));
      for (let i = 0; i < 500; i++) expect(index.oidAt(i * 7)).toBe(whole.oidAt(i * 7));
      expect(syncReads.count).toBeGreaterThan(0);
      // a bucket past 1024 ids brings them whole
      expect(inFile(index)).toBe(crowded <= 1024);
      // then every id (past the lookups that bring them whole): the same answers
      for (const e of entries) expect(index.find(e.oid)).toBe(whole.find(e.oid));
      expect(inFile(index)).toBe(false);
      const reads = syncReads.count;
      for (const oid of probes) expect(index.find(oid)).toBe(whole.find(oid));
      expect(syncReads.count).toBe(reads);
    }
  });

  it('holds the ids of a small index, and of a large one once lookups are many', async () => {
    const small = Array.from({ length: 3000 }, (_, i) => ({ oid: sha1Hex(String(i)), offset: 12 + i, crc32: i }));
    const smallBytes = writeIdx(small, '6'.repeat(40));
    const never = () => {
      throw new Error('no synchronous read expected');
    };
    const held = await readPackIndex(smallBytes.length, reader(smallBytes).read, never);
    expect(inFile(held)).toBe(false);
    for (const e of small) expect(held.offsetAt(held.find(e.oid))).toBe(e.offset);
    const { entries, index, reads } = await indexWithIdsInFile(20_000);
    for (const e of entries.slice(0, 16_000)) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
    expect(inFile(index)).toBe(true);
    expect(reads.largest).toBeLessThan(1000);
    for (const e of entries) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
    expect(inFile(index)).toBe(false);
    expect(reads.largest).toBe(entries.length * 20);
  });

  describe('over time', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('leaves the ids in the file for lookups spread over time, as a server makes them', async () => {
      vi.useFakeTimers({ toFake: ['performance'] });
      const { entries, index, reads } = await indexWithIdsInFile(40_000);
      // request after request, each well under the count, far past it in all
      const perRequest = LOOKUPS_FROM_FILE / 4;
      for (let request = 0; request < 12; request++) {
        for (let k = 0; k < perRequest; k++) {
          const e = entries[(request * perRequest + k) % entries.length]!;
          expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
        }
        vi.advanceTimersByTime(LOOKUP_SPAN_MS / 2);
      }
      expect(inFile(index)).toBe(true);
      expect(reads.largest).toBeLessThan(1000);
      // then a walk: the count within one span brings them whole
      for (let k = 0; k <= LOOKUPS_FROM_FILE; k++) index.oidAt(k);
      expect(inFile(index)).toBe(false);
      expect(reads.largest).toBe(entries.length * 20);
      for (const e of entries.slice(0, 100)) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
    });
  });

  it('over an open file: closes it unless its index reads ids from it, and then at closeFile', async () => {
    const file = (bytes: Uint8Array, sync: boolean) => {
      const state = { closed: 0, syncReads: 0 };
      const handle: FileHandleLike & { read: NonNullable<FileHandleLike['read']> } = {
        // a read returns at most 1000 bytes: the reader asks again for the rest
        read: async (into, offset, length, position) => {
          const n = Math.min(length, 1000, bytes.length - position);
          into.set(bytes.subarray(position, position + n), offset);
          return { bytesRead: n };
        },
        ...(sync && {
          readSync: (into: Uint8Array, offset: number, length: number, position: number) => {
            state.syncReads++;
            const n = Math.min(length, 1000, bytes.length - position);
            into.set(bytes.subarray(position, position + n), offset);
            return n;
          },
        }),
        close: async () => {
          state.closed++;
        },
      };
      return { handle, state };
    };
    const entries = Array.from({ length: 20_000 }, (_, i) => ({ oid: sha1Hex(`f${i}`), offset: 12 + i, crc32: i }));
    const bytes = writeIdx(entries, '7'.repeat(40));
    const sample = entries.filter((_, i) => i % 97 === 0);
    // asynchronous reads alone: the ids held, the file closed
    const plain = file(bytes, false);
    const held = await readPackIndexFile(plain.handle, bytes.length, 'p.idx');
    expect(plain.state.closed).toBe(1);
    expect(inFile(held)).toBe(false);
    for (const e of sample) expect(held.offsetAt(held.find(e.oid))).toBe(e.offset);
    // synchronous reads too: the file stays open until closeFile, after which the index answers the same
    const open = file(bytes, true);
    const index = await readPackIndexFile(open.handle, bytes.length, 'p.idx');
    expect(open.state.closed).toBe(0);
    expect(inFile(index)).toBe(true);
    for (const e of sample) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
    expect(index.oidAt(5)).toBe(held.oidAt(5));
    expect(open.state.syncReads).toBeGreaterThan(sample.length);
    await index.closeFile?.();
    await index.closeFile?.();
    expect(open.state.closed).toBe(1);
    expect(inFile(index)).toBe(false);
    const reads = open.state.syncReads;
    for (const e of sample) expect(index.offsetAt(index.find(e.oid))).toBe(e.offset);
    expect(index.find(sha1Hex('absent'))).toBe(-1);
    expect(open.state.syncReads).toBe(reads);
    // a file that turns out shorter than its size, or damaged: IDX_* and the file closed
    const short = file(bytes.subarray(0, bytes.length - 100), true);
    await expectCode(readPackIndexFile(short.handle, bytes.length, 'p.idx'), 'IDX_TRUNCATED');
    expect(short.state.closed).toBe(1);
    const flipped = bytes.slice();
    flipped[8 + 1024 + 5]! ^= 1;
    const damaged = file(flipped, true);
    await expectCode(readPackIndexFile(damaged.handle, bytes.length, 'p.idx'), 'IDX_BAD_CHECKSUM');
    expect(damaged.state.closed).toBe(1);
  });

  it('answers IDX_TRUNCATED, never a wrong id, when its file is cut short under it', async () => {
    const entries = Array.from({ length: 20_000 }, (_, i) => ({ oid: sha1Hex(`g${i}`), offset: 12 + i, crc32: i }));
    const bytes = writeIdx(entries, '8'.repeat(40));
    let current = bytes;
    let closed = 0;
    const copy = (into: Uint8Array, offset: number, length: number, position: number) => {
      const n = Math.max(0, Math.min(length, current.length - position));
      into.set(current.subarray(position, position + n), offset);
      return n;
    };
    const index = await readPackIndexFile(
      {
        read: async (into, offset, length, position) => copy(into, offset, length, position),
        readSync: copy,
        close: async () => {
          closed++;
        },
      },
      bytes.length,
      'p.idx',
    );
    expect(inFile(index)).toBe(true);
    expect(index.find(entries[7]!.oid)).toBeGreaterThanOrEqual(0);
    // the file loses its ids (another process truncated it): lookups and ids fail with a code
    current = bytes.subarray(0, 8 + 1024 + 100);
    const sorted = entries.map((e) => e.oid).sort();
    expect(() => index.find(sorted[19_000]!)).toThrow(expect.objectContaining({ code: 'IDX_TRUNCATED' }));
    expect(() => index.oidAt(19_000)).toThrow(expect.objectContaining({ code: 'IDX_TRUNCATED' }));
    // closing it, which reads the ids whole, fails the same way but closes the file all the same;
    // lookups then fail with a code too
    await expect(index.closeFile!()).rejects.toMatchObject({ code: 'IDX_TRUNCATED' });
    expect(closed).toBe(1);
    current = bytes;
    expect(() => index.find(sorted[0]!)).toThrow(expect.objectContaining({ code: 'STORE_IO' }));
    await index.closeFile!();
    expect(closed).toBe(1);
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
