/** Pack order (the reverse index) of seeded random offsets, against a comparison sort. */
import { describe, expect, it } from 'vitest';
import { offsetOrder } from './pack-files.js';
import { randomUint32 as random } from './test-random.js';

/** `n` distinct offsets below `limit`, in random (idx) order. */
function offsets(seed: number, n: number, limit: number): number[] {
  const next = random(seed);
  const seen = new Set<number>();
  while (seen.size < n) {
    // some offsets share their low 16 bits, some their high ones: both passes decide
    const r = next();
    const pick = r % 3 === 0 ? (next() % Math.floor(limit / 65536)) * 65536 + 12 : (r * 2 ** 20 + next()) % limit;
    seen.add(pick);
  }
  return [...seen];
}

const reference = (list: number[]) => [...list.keys()].sort((a, b) => list[a]! - list[b]!);

describe('offsetOrder', () => {
  for (const [seed, n, limit] of [
    [1, 0, 2 ** 20],
    [2, 1, 2 ** 20],
    [3, 1000, 2 ** 16],
    [4, 20_000, 2 ** 26],
    [5, 5000, 2 ** 32],
  ] as const) {
    it(`orders ${n} offsets below ${limit} as a comparison sort does (seed ${seed})`, () => {
      const list = offsets(seed, n, limit);
      const order = offsetOrder({ count: n, offsetAt: (i) => list[i]! }, limit);
      expect([...order]).toEqual(reference(list));
    });
  }

  it('orders offsets past 4 GiB (seed 6)', () => {
    const list = offsets(6, 3000, 2 ** 40);
    const order = offsetOrder({ count: list.length, offsetAt: (i) => list[i]! }, 2 ** 40);
    expect([...order]).toEqual(reference(list));
  });
});
