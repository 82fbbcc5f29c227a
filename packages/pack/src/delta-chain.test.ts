/**
 * Deep delta chains over large objects cost work linear in the bytes they produce: a chain
 * walked in order applies each delta once (on import and on reads from the store), and a pack
 * that forces rebuilding chains from their roots runs into the inflated-bytes budget with a coded
 * error instead of quadratic work. Work is counted as delta applications and bytes they produce
 * (applyDelta wrapped by a counting mock), never timed.
 */
import * as nodeFs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ChainTips } from './delta-chain-cache.js';
import { EntryType, encodeEntryHeader, encodeOfsOffset } from './entry-header.js';
import type { ObjectStoreFs } from './fs-like.js';
import { FsObjectStore } from './fs-store.js';
import { hashObjectSync, type ObjectId } from './object.js';
import { importPack } from './pack-import.js';
import { openPackSpool } from './pack-spool.js';
import { sha1 } from './sha1.js';
import { MemoryObjectStore, type ObjectStore } from './store.js';
import { concat } from './test-bytes.js';
import { deflate } from './zlib.js';

const applied = vi.hoisted(() => ({ calls: 0, bytes: 0 }));
vi.mock('./delta.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./delta.js')>();
  return {
    ...original,
    applyDelta: (...args: Parameters<typeof original.applyDelta>) => {
      const out = original.applyDelta(...args);
      applied.calls++;
      applied.bytes += out.length;
      return out;
    },
  };
});

beforeEach(() => {
  applied.calls = 0;
  applied.bytes = 0;
});

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Object size: above a quarter of the import's cache and an eighth of the store's. */
const SIZE = 96 * 1024;
const CACHE = 320 * 1024;

function varint(v: number): number[] {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** A delta that keeps the base's bytes but the last 8, which become `tail`. */
function tailDelta(size: number, tail: string): Uint8Array {
  const keep = size - 8;
  const copy = [0x80 | 0x10 | 0x20 | 0x40, keep & 255, (keep >>> 8) & 255, (keep >>> 16) & 255];
  const insert = [8, ...new TextEncoder().encode(tail.padEnd(8).slice(0, 8))];
  return Uint8Array.from([...varint(size), ...varint(size), ...copy, ...insert]);
}

function root(seed: number, size = SIZE): Uint8Array {
  const data = new Uint8Array(size);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    // few distinct bytes: compresses, and inflates quickly
    data[i] = 97 + ((x >>> 0) % 4);
  }
  return data;
}

/**
 * `chains` chains of `depth` OFS deltas each over their own root, interleaved entry by entry
 * (the roots first, then the first delta of every chain, then the second...); each delta's base
 * is the previous entry of its chain. The ids of every chain's objects, in chain order.
 */
function chainPack(chains: number, depth: number, size = SIZE): { pack: Uint8Array; ids: ObjectId[][] } {
  const entries: Uint8Array[] = [];
  const lastOffset: number[] = [];
  const ids: ObjectId[][] = [];
  const current: Uint8Array[] = [];
  let offset = 12;
  for (let c = 0; c < chains; c++) {
    const data = root(c + 1, size);
    const e = concat([encodeEntryHeader(EntryType.BLOB, data.length), deflate(data)]);
    entries.push(e);
    lastOffset.push(offset);
    offset += e.length;
    ids.push([hashObjectSync('blob', data)]);
    current.push(data);
  }
  for (let d = 1; d <= depth; d++) {
    for (let c = 0; c < chains; c++) {
      const tail = `${c}:${d}`;
      const delta = tailDelta(size, tail);
      const e = concat([
        encodeEntryHeader(EntryType.OFS_DELTA, delta.length),
        encodeOfsOffset(offset - lastOffset[c]!),
        deflate(delta),
      ]);
      entries.push(e);
      lastOffset[c] = offset;
      offset += e.length;
      const next = current[c]!.slice();
      next.set(new TextEncoder().encode(tail.padEnd(8).slice(0, 8)), size - 8);
      current[c] = next;
      ids[c]!.push(hashObjectSync('blob', next));
    }
  }
  const header = new Uint8Array(12);
  header.set(new TextEncoder().encode('PACK'));
  new DataView(header.buffer).setUint32(4, 2);
  new DataView(header.buffer).setUint32(8, entries.length);
  const body = concat([header, ...entries]);
  return { pack: concat([body, sha1(body)]), ids };
}

async function gitDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-chain-'));
  dirs.push(dir);
  return dir;
}

const withoutOpen = (): ObjectStoreFs => {
  const { open: _open, ...rest } = nodeFs.promises as unknown as ObjectStoreFs;
  return rest;
};

const importStores: [string, () => Promise<{ store: ObjectStore; dir?: string }>][] = [
  [
    'a store over .git that spools the pack',
    async () => {
      const dir = await gitDir();
      return { store: new FsObjectStore(nodeFs, dir, { packSpool: openPackSpool }), dir };
    },
  ],
  [
    'a store over .git that takes the pack from memory',
    async () => {
      const dir = await gitDir();
      return { store: new FsObjectStore(withoutOpen(), dir), dir };
    },
  ],
  ['a store that takes objects', async () => ({ store: new MemoryObjectStore() })],
];

describe('delta chains over large objects', () => {
  const depth = 40;

  for (const [name, make] of importStores) {
    it(`import applies each delta once, chains in order or interleaved (${name})`, async () => {
      for (const chains of [1, 3]) {
        const { pack, ids } = chainPack(chains, depth);
        const { store } = await make();
        const r = await importPack(store, [pack], {
          cacheBytes: CACHE,
          // room for the objects once each, and a little more (roots read back from the pack)
          limits: { maxInflatedBytes: chains * (depth + 3) * SIZE + 64 * 1024 },
        });
        expect(r.objects).toHaveLength(chains * (depth + 1));
        expect(applied.calls).toBe(chains * depth);
        for (const chain of ids) expect((await store.read(chain.at(-1)!))?.data.length).toBe(SIZE);
        applied.calls = 0;
      }
    });
  }

  for (const [name, make] of importStores) {
    it(`import keeps copies of whole roots read into the reader's reused buffer (${name})`, async () => {
      // roots of 16 KiB: cached whole (not read back), over a quarter of this cache (so kept
      // among the latest large results, two of them), and each chain's first delta comes after
      // the other roots were read into the same buffer
      const { pack, ids } = chainPack(3, 4, 16 * 1024);
      const { store } = await make();
      await importPack(store, [pack], { cacheBytes: 48 * 1024 });
      for (const chain of ids) for (const id of chain) expect((await store.read(id))?.data.length).toBe(16 * 1024);
    });
  }

  it('import of chains interleaved past what is kept stops at the inflated-bytes budget', async () => {
    const chains = 12;
    const { pack } = chainPack(chains, 12);
    const { store } = await importStores[0]![1]();
    // the objects once each fit four times over; rebuilding each chain from its root does not
    const budget = 4 * chains * 13 * SIZE;
    await expect(
      importPack(store, [pack], { cacheBytes: CACHE, limits: { maxInflatedBytes: budget } }),
    ).rejects.toMatchObject({ code: 'PACK_LIMIT_INFLATED' });
    expect(applied.bytes).toBeLessThanOrEqual(budget);
  });

  it('a store reading a chain in order applies each delta once', async () => {
    const { pack, ids } = chainPack(1, depth);
    const dir = await gitDir();
    await importPack(new FsObjectStore(nodeFs, dir), [pack]);
    for (const fs of [nodeFs, withoutOpen()]) {
      const store = new FsObjectStore(fs, dir, { cacheBytes: CACHE });
      applied.calls = 0;
      for (const id of ids[0]!) expect((await store.read(id))?.data.length).toBe(SIZE);
      expect(applied.calls).toBe(depth);
      await store.close();
    }
    // readSync too (the pack held whole)
    const store = new FsObjectStore(withoutOpen(), dir, { cacheBytes: CACHE });
    await store.read(ids[0]![0]!);
    applied.calls = 0;
    for (const id of ids[0]!.slice(1)) expect(store.readSync(id)?.data.length).toBe(SIZE);
    expect(applied.calls).toBe(depth);
  });

  it('a store stops a read past its rebuild budget with a coded error', async () => {
    const { pack, ids } = chainPack(1, depth);
    const dir = await gitDir();
    await importPack(new FsObjectStore(nodeFs, dir), [pack]);
    const store = new FsObjectStore(nodeFs, dir, { cacheBytes: CACHE, maxRebuildBytes: 10 * SIZE });
    applied.calls = 0;
    await expect(store.read(ids[0]!.at(-1)!)).rejects.toMatchObject({ code: 'PACK_LIMIT_INFLATED' });
    expect(applied.calls).toBeLessThanOrEqual(10);
    expect((await store.read(ids[0]![5]!))?.data.length).toBe(SIZE);
    await store.close();
  });
});

describe('ChainTips', () => {
  it('keeps the latest tips within its count and bytes, the latest always', () => {
    const tips = new ChainTips<number, Uint8Array>(10, (v) => v.length, 3);
    tips.set(1, new Uint8Array(4));
    tips.set(2, new Uint8Array(4));
    expect(tips.size).toBe(2);
    tips.set(3, new Uint8Array(4));
    expect(tips.get(1)).toBeUndefined();
    expect(tips.get(2)?.length).toBe(4);
    tips.set(4, new Uint8Array(40));
    expect(tips.size).toBe(1);
    expect(tips.get(4)?.length).toBe(40);
    tips.set(5, new Uint8Array(1));
    tips.set(6, new Uint8Array(1));
    tips.set(7, new Uint8Array(1));
    expect(tips.get(5)?.length).toBe(1);
    expect(tips.size).toBe(3);
  });

  it('lets a tip a chain went on from go first', () => {
    const tips = new ChainTips<string, Uint8Array>(12, (v) => v.length);
    tips.set('a0', new Uint8Array(4));
    tips.set('b0', new Uint8Array(4));
    // chain a goes on: a0 is spent, and goes before b0 when room is short
    tips.set('a1', new Uint8Array(4), 'a0');
    expect(tips.size).toBe(3);
    tips.set('b1', new Uint8Array(4), 'b0');
    expect(tips.get('a0')).toBeUndefined();
    expect(tips.get('b0')).toBeDefined();
    expect(tips.get('a1')).toBeDefined();
    tips.set('c0', new Uint8Array(4));
    expect(tips.get('b0')).toBeUndefined();
    expect([tips.get('a1'), tips.get('b1'), tips.get('c0')].every(Boolean)).toBe(true);
  });
});
