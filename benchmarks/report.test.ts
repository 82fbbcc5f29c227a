/** The figures helpers every bench file shares (report.ts). */
import { describe, expect, it } from 'vitest';
import { median } from './report.js';

describe('median', () => {
  it('is the middle value of an odd count and the upper middle one of an even count, in any order', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(median([7])).toBe(7);
    expect(median([0.5, -2, 10, 3, 3])).toBe(3);
  });

  it('leaves its input as it was', () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });

  it('refuses an empty list, naming what had no runs', () => {
    expect(() => median([], 'decode:gitport')).toThrow(
      expect.objectContaining({ code: 'BENCH_NO_RUNS', message: 'no runs for decode:gitport' }),
    );
  });
});
