import * as nodeFs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ObjectStoreFs } from './fs-like.js';
import { FsObjectStore } from './fs-store.js';
import { bytesToHex } from './object.js';
import { importPack } from './pack-import.js';
import { PackReader } from './pack-reader.js';
import { packObjects } from './pack-writer.js';
import { MemoryObjectStore, type PackSpool } from './store.js';

describe('importPack into a store over .git', () => {
  // whole objects are inflated into the reader's reused buffer: what the cache keeps of them
  // (here over a quarter of a tiny cache, and with bases revisited) must be a copy
  const withoutOpen = (): ObjectStoreFs => {
    const { open: _open, ...rest } = nodeFs.promises as unknown as ObjectStoreFs;
    return rest;
  };
  for (const [name, fs] of [
    ['spooled', () => nodeFs.promises as unknown as ObjectStoreFs],
    ['from memory', withoutOpen],
  ] as const) {
    it(`resolves deltas on whole bases with a cache smaller than a base (${name})`, async () => {
      const source = new MemoryObjectStore();
      const oids: string[] = [];
      for (let f = 0; f < 6; f++) {
        let text = `file ${f}\n${'base line\n'.repeat(400 + f * 50)}`;
        for (let i = 0; i < 12; i++) {
          text += `edit ${f}.${i} ${'y'.repeat(i * 13)}\n`;
          oids.push(await source.write('blob', new TextEncoder().encode(text)));
        }
      }
      const parts: Uint8Array[] = [];
      for await (const c of packObjects(source, oids)) parts.push(c.slice());
      const dir = await mkdtemp(join(tmpdir(), 'gitport-import-'));
      try {
        const store = new FsObjectStore(fs(), dir);
        const r = await importPack(store, parts, { cacheBytes: 4096 });
        expect([...r.objects].sort()).toEqual([...oids].sort());
        for (const oid of oids) {
          expect(bytesToHex((await store.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
        }
        await store.close();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

describe('importPack into a store that takes objects', () => {
  it('resolves delta chains without a base cache (bases are the objects it holds) and stores them', async () => {
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    let text = '';
    for (let i = 0; i < 40; i++) {
      text += `line ${i} ${'x'.repeat(i * 7)}\n`;
      oids.push(await source.write('blob', new TextEncoder().encode(text)));
    }
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(source, oids)) parts.push(c.slice());
    let deltas = 0;
    for await (const e of new PackReader(parts).entries()) if (e.kind !== 'whole') deltas++;
    expect(deltas).toBeGreaterThan(20);
    const target = new MemoryObjectStore();
    const r = await importPack(target, parts, { cacheBytes: 1 });
    expect([...r.objects].sort()).toEqual([...oids].sort());
    expect(r.count).toBe(oids.length);
    expect(r.types).toEqual(oids.map(() => 'blob'));
    for (const oid of oids) {
      expect(bytesToHex((await target.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
    }
  });

  it('refuses a pack spool given for a store that keeps no packs, and gives the spool up', async () => {
    const source = new MemoryObjectStore();
    const oid = await source.write('blob', new TextEncoder().encode('one\n'));
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(source, [oid])) parts.push(c.slice());
    let aborted = 0;
    const spool = { abort: async () => void aborted++ } as unknown as PackSpool;
    const target = new MemoryObjectStore();
    await expect(importPack(target, parts, { spool: Promise.resolve(spool) })).rejects.toMatchObject({
      code: 'PACK_BAD_INPUT',
    });
    expect(aborted).toBe(1);
    expect(await target.has(oid)).toBe(false);
  });
});
