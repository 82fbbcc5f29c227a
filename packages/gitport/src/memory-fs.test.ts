import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryFs } from './memory-fs.js';

describe('MemoryFs files written through a handle in pieces', () => {
  it('read back whole, by range and by positional reads across the pieces, as written', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 6 }),
        fc.nat(1200),
        fc.nat(300),
        async (pieces, offset, length) => {
          const expected = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
          let at = 0;
          for (const piece of pieces) {
            expected.set(piece, at);
            at += piece.length;
          }
          const fs = new MemoryFs();
          const handle = await fs.promises.open('/f', 'w');
          for (const piece of pieces) {
            await handle.write!(piece);
            // the handle copied: the caller's bytes changing afterwards changes nothing
            piece.fill(0xee);
          }
          await handle.close();
          const whole = (await fs.promises.readFile('/f')) as Uint8Array;
          expect(Array.from(whole)).toEqual(Array.from(expected));
          expect((await fs.promises.stat('/f')).size).toBe(expected.length);
          // a read hands out a copy
          whole.fill(1);
          expect(Array.from((await fs.promises.readFile('/f')) as Uint8Array)).toEqual(Array.from(expected));
          const range = await fs.promises.readRange!('/f', offset, length);
          expect(Array.from(range)).toEqual(Array.from(expected.slice(offset, offset + length)));
          const reader = await fs.promises.open('/f', 'r');
          const buffer = new Uint8Array(length + 3).fill(7);
          const r = await reader.read!(buffer, 3, length, offset);
          const n = typeof r === 'number' ? r : r.bytesRead;
          expect(n).toBe(range.length);
          expect(Array.from(buffer.subarray(3, 3 + n))).toEqual(Array.from(range));
          expect(Array.from(buffer.subarray(0, 3))).toEqual([7, 7, 7]);
          await reader.close();
        },
      ),
    );
  });
});
