import { MemoryObjectStore } from '@gitport/pack';
import { describe, expect, it } from 'vitest';
import { yieldingStore } from './yielding-store.js';

describe('yieldingStore', () => {
  it('lets the event loop run during a walk over objects held in memory', async () => {
    const memory = new MemoryObjectStore();
    const oid = await memory.write('blob', new TextEncoder().encode('x'));
    const store = yieldingStore(memory);
    expect(yieldingStore(memory)).toBe(store);
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    // a hot walk as the pack code does it: the sync read first, the promise only when declined
    let reads = 0;
    while (!turned && reads < 20_000_000) {
      const object = store.readSync?.(oid) ?? (await store.read(oid));
      expect(object?.type).toBe('blob');
      reads++;
    }
    expect(turned).toBe(true);
    // the plain store would never have let it run
    turned = false;
    setImmediate(() => {
      turned = true;
    });
    for (let i = 0; i < reads; i++) memory.readSync(oid) ?? (await memory.read(oid));
    expect(turned).toBe(false);
  });

  it('keeps the optional parts of the store it wraps, and only those', async () => {
    const memory = new MemoryObjectStore();
    const store = yieldingStore(memory);
    expect(store.readHeader).toBeDefined();
    expect(store.findPack).toBeUndefined();
    const oid = await store.write('blob', new Uint8Array([1, 2]));
    expect(await store.has(oid)).toBe(true);
    expect(await store.readHeader?.(oid)).toEqual({ type: 'blob', size: 2 });
  });
});
