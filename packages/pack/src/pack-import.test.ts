import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDelta } from './delta.js';
import { EntryType, encodeEntryHeader } from './entry-header.js';
import type { ObjectStoreFs } from './fs-like.js';
import { FsObjectStore } from './fs-store.js';
import { bytesToHex, concatBytes, hashObjectSync, hexToBytes } from './object.js';
import { encodeWholeEntry, importPack } from './pack-import.js';
import { PackReader } from './pack-reader.js';
import { openPackSpool } from './pack-spool.js';
import { packObjects } from './pack-writer.js';
import { sha1 } from './sha1.js';
import { MemoryObjectStore, type PackSpool } from './store.js';
import { deflate } from './zlib.js';

const withoutOpen = (): ObjectStoreFs => {
  const { open: _open, ...rest } = nodeFs.promises as unknown as ObjectStoreFs;
  return rest;
};

describe('importPack into a store over .git', () => {
  // whole objects are inflated into the reader's reused buffer: what the cache keeps of them
  // (here over a quarter of a tiny cache, and with bases revisited) must be a copy
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
        const store = new FsObjectStore(fs(), dir, { packSpool: openPackSpool });
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

describe('importPack over reused input chunks', () => {
  /** The pack in chunks of varied sizes (a few bytes to tens of KiB) read into one buffer, scribbled over once read. */
  async function* reused(pack: Uint8Array, seed: number): AsyncGenerator<Uint8Array> {
    const buffer = new Uint8Array(40_000);
    let s = seed;
    for (let at = 0; at < pack.length; ) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      const n = Math.min(pack.length - at, s % 3 === 0 ? 1 + (s % 7) : 1 + (s % buffer.length));
      buffer.set(pack.subarray(at, at + n));
      at += n;
      yield buffer.subarray(0, n);
      buffer.fill(0xa5);
    }
  }

  it('copies what it keeps of each chunk: every store gets the pack and its objects', async () => {
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    let text = 'start\n';
    for (let i = 0; i < 60; i++) {
      text += `line ${i} ${'z'.repeat(i * 37)}\n`;
      oids.push(await source.write('blob', new TextEncoder().encode(text)));
    }
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(source, oids)) parts.push(c.slice());
    const pack = concatBytes(parts);
    const expected = bytesToHex(pack.subarray(pack.length - 20));
    for (let seed = 1; seed <= 3; seed++) {
      const memory = new MemoryObjectStore();
      const r = await importPack(memory, reused(pack, seed), { reusedInput: true });
      expect(r.hash, `seed ${seed}`).toBe(expected);
      for (const oid of oids)
        expect(bytesToHex((await memory.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
      for (const fs of [nodeFs.promises as unknown as ObjectStoreFs, withoutOpen()]) {
        const dir = await mkdtemp(join(tmpdir(), 'gitport-import-'));
        try {
          const store = new FsObjectStore(fs, dir, { packSpool: openPackSpool });
          const r = await importPack(store, reused(pack, seed), { reusedInput: true, cacheBytes: 4096 });
          expect(r.hash, `seed ${seed}`).toBe(expected);
          for (const oid of oids) {
            expect(bytesToHex((await store.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
          }
          await store.close();
          const stored = nodeFs.readFileSync(join(dir, 'objects', 'pack', `pack-${expected}.pack`));
          expect(Buffer.compare(stored, pack), `seed ${seed}`).toBe(0);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }
    }
  });
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

describe('importPack: deltas that arrive before their base', () => {
  // REF deltas ahead of the base they name, a chain of them, and an OFS delta on one of them:
  // all left for the second pass, which walks them from the base once it has come
  const enc = new TextEncoder();
  const texts: string[] = [];
  let text = `base\n${'common line\n'.repeat(200)}`;
  for (let i = 0; i < 5; i++) {
    texts.push(text);
    text += `edit ${i} ${'z'.repeat(i * 11)}\n`;
  }
  const datas = texts.map((t) => enc.encode(t));
  const ids = datas.map((d) => hashObjectSync('blob', d));
  const delta = (from: number, to: number) => createDelta(datas[from]!, datas[to]!)!;
  const entry = (type: number, body: Uint8Array, base?: number | Uint8Array) =>
    concatBytes([encodeEntryHeader(type as EntryType, body.length, base), deflate(body)]);
  // pack order: 3 (REF on 2), 2 (REF on 1), 4 (OFS on 3), 1 (REF on 0), 0 (whole)
  const e3 = entry(EntryType.REF_DELTA, delta(2, 3), hexToBytes(ids[2]!));
  const e2 = entry(EntryType.REF_DELTA, delta(1, 2), hexToBytes(ids[1]!));
  const e4 = entry(EntryType.OFS_DELTA, delta(3, 4), e3.length + e2.length);
  const e1 = entry(EntryType.REF_DELTA, delta(0, 1), hexToBytes(ids[0]!));
  const e0 = encodeWholeEntry('blob', datas[0]!).bytes;
  const header = new Uint8Array([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0, 0, 5]);
  const body = concatBytes([header, e3, e2, e4, e1, e0]);
  const pack = concatBytes([body, sha1(body)]);

  it('resolves them into a store over .git, with the index git writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gitport-import-'));
    try {
      const store = new FsObjectStore(nodeFs.promises as unknown as ObjectStoreFs, dir, { packSpool: openPackSpool });
      // chunks of 7 bytes: every entry crosses chunks
      const chunks: Uint8Array[] = [];
      for (let o = 0; o < pack.length; o += 7) chunks.push(pack.slice(o, o + 7));
      const r = await importPack(store, chunks, { cacheBytes: 1 });
      expect([...r.objects].sort()).toEqual([...ids].sort());
      for (let i = 0; i < 5; i++) expect(bytesToHex((await store.read(ids[i]!))!.data)).toBe(bytesToHex(datas[i]!));
      await store.close();
      const gitDir = join(dir, 'git');
      execFileSync('git', ['init', '-q', '--bare', gitDir]);
      execFileSync('git', ['--git-dir', gitDir, 'index-pack', '--stdin'], { input: pack });
      const name = `pack-${r.hash}.idx`;
      expect(nodeFs.readFileSync(join(dir, 'objects', 'pack', name))).toEqual(
        nodeFs.readFileSync(join(gitDir, 'objects', 'pack', name)),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('tells onObject of each object as it is resolved, in resolution order, before storing', async () => {
    const target = new MemoryObjectStore();
    const told: string[] = [];
    await importPack(target, [pack], {
      onObject: (oid, type, data) => {
        expect(type).toBe('blob');
        expect(hashObjectSync(type, data)).toBe(oid);
        told.push(oid);
        // nothing is stored before the whole pack checked out
        expect(target.size).toBe(0);
      },
    });
    // the whole object first, then its deltas depth first from it
    expect(told).toEqual([ids[0], ids[1], ids[2], ids[3], ids[4]]);
  });

  it('resolves them into a store that takes objects', async () => {
    const target = new MemoryObjectStore();
    const r = await importPack(target, [pack]);
    expect(r.objects).toEqual([ids[3], ids[2], ids[4], ids[1], ids[0]]);
    for (let i = 0; i < 5; i++) expect(bytesToHex((await target.read(ids[i]!))!.data)).toBe(bytesToHex(datas[i]!));
  });

  it('refuses a chain deeper than the limit, coded', async () => {
    const target = new MemoryObjectStore();
    await expect(importPack(target, [pack], { limits: { maxDeltaDepth: 3 } })).rejects.toMatchObject({
      code: 'PACK_LIMIT_DEPTH',
    });
  });
});
