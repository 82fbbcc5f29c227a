import { describe, expect, it } from 'vitest';
import { writeIdx } from './idx.js';
import { ImportSlots } from './import-slots.js';
import { bytesToHex } from './object.js';
import { random } from './test-random.js';

const PACK_HASH = 'ab'.repeat(20);

/** `count` entries with random ids (a few repeated prefixes), offsets `offsetOf(i)`. */
function fill(slots: ImportSlots, count: number, rand: () => number, offsetOf: (i: number) => number) {
  const id = new Uint8Array(20);
  const previous = new Uint8Array(20);
  const entries: { oid: string; offset: number; crc32: number }[] = [];
  for (let i = 0; i < count; i++) {
    for (let k = 0; k < 20; k++) id[k] = Math.floor(rand() * 256);
    // ids sharing their first bytes, so that buckets hold several entries
    if (i % 3 === 1) id.set(previous.subarray(0, 4), 0);
    previous.set(id);
    const crc32 = Math.floor(rand() * 2 ** 32) >>> 0;
    const offset = offsetOf(i);
    const e = slots.add(offset, offsetOf(i + 1), crc32);
    slots.setOid(e, bytesToHex(id));
    entries.push({ oid: bytesToHex(id), offset, crc32 });
  }
  return entries;
}

describe('ImportSlots', () => {
  it('builds in place the .idx writeIdx makes, with each entry ranked where the .idx lists it', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const rand = random(seed);
      const count = 1 + Math.floor(rand() * 3000);
      // the declared count, or fewer than come (the columns grow past it: thin bases)
      const declared = seed % 2 === 0 ? count : Math.max(1, count - 1 - Math.floor(rand() * 40));
      const slots = new ImportSlots(Math.min(declared, 64), declared);
      const entries = fill(slots, count, rand, (i) => 12 + i * 37);
      slots.release();
      const built = slots.buildIndex(PACK_HASH)!;
      expect(built, `seed ${seed}`).toBeDefined();
      const expected = writeIdx(entries, PACK_HASH, { strict: true });
      expect(Buffer.from(built.idx).equals(Buffer.from(expected)), `seed ${seed}`).toBe(true);
      for (let i = 0; i < count; i++) {
        const at = 8 + 1024 + built.rank[i]! * 20;
        expect(bytesToHex(built.idx, at, at + 20), `seed ${seed} entry ${i}`).toBe(entries[i]!.oid);
      }
    }
  });

  it('keeps offsets past 4 GiB exactly, and leaves such a pack to writeIdx', () => {
    const rand = random(7);
    const slots = new ImportSlots(16, 100);
    const offsetOf = (i: number) => 2 ** 32 - 50 * 37 + i * 37;
    const entries = fill(slots, 100, rand, offsetOf);
    for (let i = 0; i < 100; i++) {
      expect(slots.offset[i]).toBe(offsetOf(i));
      expect(slots.end(i)).toBe(offsetOf(i + 1));
    }
    expect(slots.offset[99]! > 2 ** 32).toBe(true);
    slots.release();
    expect(slots.buildIndex(PACK_HASH)).toBeUndefined();
    const idx = writeIdx({ count: 100, ids: slots.ids, offsets: slots.offset, crc32s: slots.crc32 }, PACK_HASH);
    expect(Buffer.from(idx).equals(Buffer.from(writeIdx(entries, PACK_HASH)))).toBe(true);
  });

  it('gives every type code in entry order', () => {
    const slots = new ImportSlots(4, 10);
    const types = ['commit', 'tree', 'blob', 'tag', undefined] as const;
    for (let i = 0; i < 10; i++) {
      const e = slots.add(12 + i, 13 + i, 0);
      slots.setType(e, types[i % 5]);
      if (i % 2 === 0) slots.setOid(e, bytesToHex(new Uint8Array(20).fill(i)));
    }
    expect([...slots.takeTypeCodes()]).toEqual([1, 2, 3, 4, 0, 1, 2, 3, 4, 0]);
  });
});
