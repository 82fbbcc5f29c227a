import { describe, expect, it } from 'vitest';
import { ObjectCache } from './object-cache.js';

const bytes = (n: number) => new Uint8Array(n);

describe('ObjectCache', () => {
  it('stays within its byte budget and keeps the latest entries', () => {
    const cache = new ObjectCache<number, Uint8Array>(1000, (v) => v.length);
    for (let i = 0; i < 10_000; i++) {
      cache.set(i, bytes(30));
      expect(cache.bytes).toBeLessThanOrEqual(1000);
    }
    expect(cache.get(9999)?.length).toBe(30);
    expect(cache.get(9990)?.length).toBe(30);
    expect(cache.get(0)).toBeUndefined();
    expect(cache.size * 30).toBe(cache.bytes);
  });

  it('counts a key set twice once', () => {
    const cache = new ObjectCache<string, Uint8Array>(1000, (v) => v.length);
    cache.set('a', bytes(100));
    cache.set('a', bytes(100));
    cache.set('a', bytes(50));
    expect(cache.bytes).toBe(50);
    expect(cache.size).toBe(1);
    for (let i = 0; i < 20; i++) cache.set(`k${i}`, bytes(100));
    cache.set('a', bytes(100));
    for (let i = 0; i < 100; i++) cache.get('a');
    expect(cache.bytes).toBeLessThanOrEqual(1000);
    let sum = 0;
    for (const k of ['a', ...Array.from({ length: 20 }, (_, i) => `k${i}`)]) sum += cache.has(k) ? 100 : 0;
    expect(sum).toBe(cache.bytes);
  });

  it('keeps what is used: a hit in the old generation survives the next swap', () => {
    const cache = new ObjectCache<number, Uint8Array>(400, (v) => v.length);
    cache.set(0, bytes(100));
    for (let i = 1; i < 4; i++) cache.set(i, bytes(100));
    // 0 and 1 are old now: reading 0 moves it to the young generation
    expect(cache.get(0)).toBeDefined();
    for (let i = 4; i < 5; i++) cache.set(i, bytes(100));
    expect(cache.has(0)).toBe(true);
    expect(cache.has(1)).toBe(false);
  });

  it('refuses values larger than half the budget and empties on clear', () => {
    const cache = new ObjectCache<number, Uint8Array>(100, (v) => v.length);
    cache.set(1, bytes(60));
    expect(cache.has(1)).toBe(false);
    cache.set(2, bytes(10));
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
  });
});
