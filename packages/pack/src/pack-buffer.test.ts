import { describe, expect, it } from 'vitest';
import { PackBuffer } from './pack-buffer.js';

function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function joined(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The first index where the two differ (their length when one is a prefix), -1 when equal. */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

describe('PackBuffer', () => {
  it('reads back any range of copied and kept pieces', () => {
    const buffer = new PackBuffer(40_000);
    const parts: Uint8Array[] = [];
    const sizes = [5, 70_000, 3, 20_000, 16_384, 100, 39_990, 50_000, 1, 17_000, 9_000];
    sizes.forEach((n, i) => {
      const p = bytes(n, i + 1);
      parts.push(p);
      buffer.append(p, i % 2 === 1);
    });
    const all = joined(parts);
    expect(buffer.length).toBe(all.length);
    expect(firstDifference(joined(buffer.chunks()), all)).toBe(-1);
    for (let k = 0; k < 300; k++) {
      const offset = (k * 7919) % all.length;
      const length = Math.min(all.length - offset, (k * 104_729) % 90_000);
      expect(firstDifference(buffer.read(offset, length), all.subarray(offset, offset + length))).toBe(-1);
    }
  });

  it('keeps a kept view without copying it, and copies it before patching', () => {
    const buffer = new PackBuffer(1024);
    const input = bytes(64 * 1024, 9);
    const original = input.slice();
    buffer.append(input, true);
    expect(buffer.chunks()[0]!.buffer).toBe(input.buffer);
    buffer.truncate(input.length - 20);
    buffer.append(bytes(30, 3));
    buffer.patch(8, Uint8Array.of(1, 2, 3, 4));
    expect(firstDifference(input, original)).toBe(-1);
    const expected = joined([original.subarray(0, input.length - 20), bytes(30, 3)]);
    expected.set([1, 2, 3, 4], 8);
    expect(firstDifference(joined(buffer.chunks()), expected)).toBe(-1);
    expect(buffer.read(0, 16)).toEqual(expected.subarray(0, 16));
  });
});
