import * as nodeFs from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from './fs-store.js';
import { importPack } from './pack-import.js';
import { openPackSpool } from './pack-spool.js';
import { packObjects } from './pack-writer.js';
import { openQuarantine } from './quarantine.js';
import { MemoryObjectStore, type ObjectStore } from './store.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function packOf(n: number, salt: string): Promise<{ parts: Uint8Array[]; oids: string[] }> {
  const source = new MemoryObjectStore();
  const oids: string[] = [];
  for (let i = 0; i < n; i++) oids.push(await source.write('blob', new TextEncoder().encode(`${salt} ${i}\n`)));
  const parts: Uint8Array[] = [];
  for await (const c of packObjects(source, oids)) parts.push(c.slice());
  return { parts, oids };
}

interface Subject {
  store: ObjectStore;
  /** Files under objects/ (fs stores), to see nothing is left behind. */
  files(): Promise<string[]>;
}

async function diskStore(fs: 'positional' | 'whole'): Promise<Subject> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-quarantine-'));
  dirs.push(dir);
  const promises = nodeFs.promises;
  const fsLike = fs === 'positional' ? promises : { ...promises, open: undefined };
  const store = new FsObjectStore(fsLike as typeof promises, dir, { packSpool: openPackSpool });
  return {
    store,
    files: async () => {
      try {
        return (await readdir(join(dir, 'objects'), { recursive: true })).sort();
      } catch {
        return [];
      }
    },
  };
}

const subjects: [string, () => Promise<Subject>][] = [
  ['MemoryObjectStore', async () => ({ store: new MemoryObjectStore(), files: async () => [] })],
  ['FsObjectStore (positional reads)', () => diskStore('positional')],
  ['FsObjectStore (whole files)', () => diskStore('whole')],
];

describe.each(subjects)('quarantine of %s', (_name, make) => {
  it('reads through, keeps the store unchanged until migrate, and discard leaves nothing', async () => {
    const { store, files } = await make();
    const before = await files();
    const kept = await packOf(3, 'kept');
    await importPack(store, kept.parts);
    const q = await openQuarantine(store);
    const pushed = await packOf(4, 'pushed');
    await importPack(q, pushed.parts);
    for (const oid of pushed.oids) {
      expect(await q.has(oid)).toBe(true);
      expect((await q.read(oid))?.type).toBe('blob');
      expect(await store.has(oid)).toBe(false);
    }
    // the store's own objects read through the quarantine
    for (const oid of kept.oids) expect((await q.read(oid))?.type).toBe('blob');
    expect([...q.incoming].sort()).toEqual([...pushed.oids].sort());
    await q.discard();
    for (const oid of pushed.oids) expect(await store.has(oid)).toBe(false);
    const after = await files();
    expect(after.filter((f) => !before.includes(f) && !f.startsWith('pack'))).toEqual([]);
    expect(after.filter((f) => f.includes('incoming'))).toEqual([]);
    await expect(q.write('blob', new Uint8Array(1))).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });

  it('migrate moves the objects in; revert takes them out again', async () => {
    const { store, files } = await make();
    const q = await openQuarantine(store);
    const pushed = await packOf(5, 'migrated');
    await importPack(q, pushed.parts);
    const migration = await q.migrate();
    expect([...migration.added].sort()).toEqual([...pushed.oids].sort());
    for (const oid of pushed.oids) expect((await store.read(oid))?.type).toBe('blob');
    expect((await files()).filter((f) => f.includes('incoming'))).toEqual([]);
    await q.discard(); // nothing once migrated
    for (const oid of pushed.oids) expect(await store.has(oid)).toBe(true);
    await migration.revert();
    for (const oid of pushed.oids) expect(await store.has(oid)).toBe(false);
    expect((await files()).filter((f) => f.endsWith('.pack') || f.endsWith('.idx'))).toEqual([]);
  });

  it('revert keeps the objects while another quarantine of the store is open', async () => {
    const { store } = await make();
    const q = await openQuarantine(store);
    const pushed = await packOf(3, 'leaned on');
    await importPack(q, pushed.parts);
    const migration = await q.migrate();
    const other = await openQuarantine(store);
    expect(await migration.revert()).toBe(false);
    for (const oid of pushed.oids) expect(await store.has(oid)).toBe(true);
    await other.discard();
    expect(await migration.revert()).toBe(true);
    for (const oid of pushed.oids) expect(await store.has(oid)).toBe(false);
  });

  it('a pack the store already has is not moved, nor removed by revert', async () => {
    const { store } = await make();
    const same = await packOf(2, 'same');
    await importPack(store, same.parts);
    const q = await openQuarantine(store);
    await importPack(q, same.parts);
    const migration = await q.migrate();
    expect(migration.added.size).toBe(0);
    await migration.revert();
    for (const oid of same.oids) expect(await store.has(oid)).toBe(true);
  });
});
