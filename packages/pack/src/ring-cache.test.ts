import { describe, expect, it } from 'vitest';
import { RingCache } from './ring-cache.js';
import { random } from './test-random.js';

describe('RingCache', () => {
  it('returns what was set or nothing, keeps the latest values and refuses values over a quarter', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = random(seed);
      const limit = 1024 + Math.floor(rand() * 4096);
      const cache = new RingCache(limit);
      const model = new Map<number, Uint8Array>();
      const recent: number[] = [];
      for (let step = 0; step < 3000; step++) {
        if (rand() < 0.5) {
          const key = Math.floor(rand() * 300);
          const n = Math.floor(rand() * (limit / 3));
          const value = new Uint8Array(n);
          for (let i = 0; i < n; i++) value[i] = Math.floor(rand() * 256);
          const had = cache.has(key);
          cache.set(key, value);
          if (n > cache.maxValue) {
            expect(cache.has(key), `seed ${seed}`).toBe(had);
            continue;
          }
          // a kept key is not replaced (the import sets each entry once)
          if (!had) model.set(key, value.slice());
          value.fill(0);
          recent.push(key);
        } else {
          const key = Math.floor(rand() * 300);
          const got = cache.get(key);
          if (got !== undefined) expect([...got], `seed ${seed} key ${key}`).toEqual([...model.get(key)!]);
        }
        // the last value set is always there, intact
        const last = recent[recent.length - 1];
        if (last !== undefined) expect([...cache.get(last)!], `seed ${seed}`).toEqual([...model.get(last)!]);
      }
    }
  });

  it('keeps a base read again and again while newer values pass through (refreshed copies)', () => {
    const cache = new RingCache(4096);
    const base = new Uint8Array(200).fill(7);
    cache.set(-1, base);
    for (let i = 0; i < 500; i++) {
      cache.set(i, new Uint8Array(100).fill(i & 255));
      expect(cache.get(-1)).toEqual(base);
    }
    // values not read again are gone after a turn of the ring
    expect(cache.get(0)).toBeUndefined();
  });

  it('keeps many small values across the growth of its queue, refreshed ones included', () => {
    const cache = new RingCache(64 * 1024);
    const value = (k: number) => Uint8Array.of(k & 255, (k >>> 8) & 255, 1, 2, 3);
    // large values first, so that the queue's oldest copies are gone when it grows
    for (let k = -40; k < -20; k++) cache.set(k, new Uint8Array(16 * 1024));
    expect(cache.get(-40)).toBeUndefined();
    for (let k = 0; k < 3000; k++) {
      cache.set(k, value(k));
      // key 0 is read again and again: refreshed once it is old
      expect(cache.get(0), `key 0 at ${k}`).toEqual(value(0));
    }
    // 3000 values of 8 bytes in a 64 KiB ring: all kept
    for (let k = 0; k < 3000; k++) expect(cache.get(k), `key ${k}`).toEqual(value(k));
    for (let k = 3000; k < 20_000; k++) cache.set(k, value(k));
    expect(cache.get(5)).toBeUndefined();
    expect(cache.get(19_999)).toEqual(value(19_999));
  });
});
