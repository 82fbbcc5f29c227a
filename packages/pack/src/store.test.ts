/**
 * The ObjectStore conformance suite, run against every store: the memory store, the .git/objects
 * store over Node's fs (positional reads), and over a minimal in-memory fs without `open`
 * (whole-file reads, the path browser filesystems take).
 */
import * as nodeFs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDelta } from './delta.js';
import { EntryType, encodeEntryHeader, encodeOfsOffset } from './entry-header.js';
import type { ObjectStoreFs } from './fs-like.js';
import { FsObjectStore } from './fs-store.js';
import { writeIdx } from './idx.js';
import { readPackIndexFile } from './idx-read.js';
import { bytesToHex, hashObject, TYPE_CODES } from './object.js';
import { beginPack, importPack } from './pack-import.js';
import { type PackEntry, PackReader } from './pack-reader.js';
import { openPackSpool } from './pack-spool.js';
import { createPack, packObjects } from './pack-writer.js';
import { sha1 } from './sha1.js';
import { MemoryObjectStore, type ObjectStore } from './store.js';
import { findPackOf, readHeaderOf, readHeaderSyncOf, readRawOf } from './stored-reads.js';
import { concat } from './test-bytes.js';
import { serializeTree } from './tree.js';
import { deflate } from './zlib.js';

const enc = new TextEncoder();

/** A tiny promise fs in memory, without `open` (whole-file reads). */
function memoryFs(): ObjectStoreFs {
  const files = new Map<string, Uint8Array>();
  const dirs = new Set<string>(['/']);
  const err = (code: string, path: string) => Object.assign(new Error(`${code}: ${path}`), { code });
  const parent = (p: string) => p.slice(0, p.lastIndexOf('/')) || '/';
  return {
    async readFile(path) {
      const f = files.get(path);
      if (!f) throw err('ENOENT', path);
      return f.slice();
    },
    async writeFile(path: string, data: Uint8Array) {
      if (!dirs.has(parent(path))) throw err('ENOENT', path);
      files.set(path, data.slice());
    },
    async mkdir(path) {
      const parts = path.split('/').filter(Boolean);
      let cur = '';
      for (const p of parts) {
        cur += `/${p}`;
        dirs.add(cur);
      }
    },
    async readdir(path) {
      if (!dirs.has(path)) throw err('ENOENT', path);
      const out = new Set<string>();
      for (const k of [...files.keys(), ...dirs])
        if (parent(k) === path && k !== path) out.add(k.slice(path.length + 1));
      return [...out];
    },
    async stat(path) {
      const f = files.get(path);
      if (f) return { size: f.length };
      if (dirs.has(path)) return { size: 0 };
      throw err('ENOENT', path);
    },
    async rename(from, to) {
      const f = files.get(from);
      if (!f) throw err('ENOENT', from);
      files.delete(from);
      files.set(to, f);
    },
    async unlink(path) {
      if (!files.delete(path)) throw err('ENOENT', path);
    },
  };
}

const temps: string[] = [];
afterAll(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

/**
 * An FsObjectStore over node:fs in a fresh temporary directory (removed after the file's tests),
 * reading pack indexes piece by piece as gitport/node's stores do.
 */
async function diskStore(): Promise<FsObjectStore> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
  temps.push(dir);
  return new FsObjectStore(nodeFs, dir, { indexReader: readPackIndexFile, packSpool: openPackSpool });
}

/** Appends `bytes` to `spool` in pieces of `step` bytes. */
function appendInPieces(spool: { append(bytes: Uint8Array): unknown }, bytes: Uint8Array, step: number): void {
  for (let at = 0; at < bytes.length; at += step) spool.append(bytes.subarray(at, Math.min(bytes.length, at + step)));
}

const stores: [string, () => Promise<ObjectStore & { close?: () => Promise<void> }>][] = [
  ['MemoryObjectStore', async () => new MemoryObjectStore()],
  ['FsObjectStore (node:fs, positional reads)', diskStore],
  ['FsObjectStore (whole-file fs)', async () => new FsObjectStore(memoryFs(), '/repo.git')],
];

function seededBlob(seed: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let s = seed >>> 0;
  for (let i = 0; i < size; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = 97 + ((s >>> 24) % 26);
  }
  return out;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const c of it) out.push(c);
  return out;
}

describe.each(stores)('ObjectStore conformance: %s', (_name, make) => {
  it('write, has, read, readHeader; ids match hashObject; missing is undefined', async () => {
    const store = await make();
    const data = enc.encode('hello\n');
    const oid = await store.write('blob', data);
    expect(oid).toBe(await hashObject('blob', data));
    expect(await store.has(oid)).toBe(true);
    expect(await store.read(oid)).toEqual({ type: 'blob', data });
    expect(await readHeaderOf(store, oid)).toEqual({ type: 'blob', size: 6 });
    expect(await store.write('blob', data)).toBe(oid);
    const missing = 'ab'.repeat(20);
    expect(await store.has(missing)).toBe(false);
    expect(await store.read(missing)).toBeUndefined();
    expect(await store.has('not an id')).toBe(false);
    await store.close?.();
  });

  it('imports packs (with deltas) and serves every object back; createPack round-trips', async () => {
    const source = new MemoryObjectStore();
    const blobs: string[] = [];
    let base = seededBlob(1, 20_000);
    for (let i = 0; i < 12; i++) {
      const next = base.slice();
      next.set(enc.encode(`edit ${i}`), (i * 1543) % 19_000);
      base = next;
      blobs.push(await source.write('blob', next));
    }
    const tree = await source.write(
      'tree',
      serializeTree(blobs.map((oid, i) => ({ mode: '100644', name: `f${i}`, oid, type: 'blob' as const }))),
    );
    const commit = await source.write(
      'commit',
      enc.encode(`tree ${tree}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nm\n`),
    );
    const pack = await collect(createPack(source, { wants: [commit] }));
    const store = await make();
    const result = await importPack(store, pack);
    expect(new Set(result.objects)).toEqual(new Set([commit, tree, ...blobs]));
    for (const oid of [commit, tree, ...blobs]) {
      const a = await source.read(oid);
      const b = await store.read(oid);
      expect(b?.type).toBe(a?.type);
      expect(bytesToHex(b!.data)).toBe(bytesToHex(a!.data));
    }
    // the synchronous path, where a store has one, agrees with read (undefined means "ask read")
    for (const oid of [commit, tree, ...blobs]) {
      const sync = store.readSync?.(oid);
      if (sync) expect(bytesToHex(sync.data)).toBe(bytesToHex((await store.read(oid))!.data));
    }
    // headers of whole objects and deltas, newest first and then in order, agree with the data
    const fresh = await make();
    await importPack(fresh, pack);
    for (const oid of [...blobs].reverse().concat(blobs, [tree, commit])) {
      const a = (await source.read(oid))!;
      expect(await readHeaderOf(fresh, oid)).toEqual({ type: a.type, size: a.data.length });
      const sync = readHeaderSyncOf(fresh, oid);
      if (sync) expect(sync).toEqual({ type: a.type, size: a.data.length });
    }
    await fresh.close?.();
    // and out again, reusing whatever the store keeps
    const again = await collect(packObjects(store, [commit, tree, ...blobs]));
    const third = new MemoryObjectStore();
    const r2 = await importPack(third, again);
    expect(new Set(r2.objects)).toEqual(new Set(result.objects));
    await store.close?.();
  });

  it('a pack that fails verification leaves nothing behind', async () => {
    const source = new MemoryObjectStore();
    const oid = await source.write('blob', enc.encode('only in the bad pack'));
    const pack = await collect(packObjects(source, [oid]));
    const bytes = new Uint8Array(pack.reduce((n, c) => n + c.length, 0));
    let o = 0;
    for (const c of pack) {
      bytes.set(c, o);
      o += c.length;
    }
    bytes[bytes.length - 1]! ^= 0xff;
    const store = await make();
    await expect(importPack(store, [bytes])).rejects.toMatchObject({ code: 'PACK_BAD_CHECKSUM' });
    expect(await store.has(oid)).toBe(false);
    await store.close?.();
  });
});

describe('FsObjectStore.writePack', () => {
  it('writes the pack and its index at once; one that fails leaves neither, nor a temporary file', async () => {
    const source = new MemoryObjectStore();
    const oids = [await source.write('blob', enc.encode('a')), await source.write('blob', enc.encode('b'))];
    const pack = await collect(packObjects(source, oids));
    const fs = memoryFs();
    const writeFile = fs.writeFile.bind(fs);
    const started: string[] = [];
    let release!: () => void;
    const bothStarted = new Promise<void>((resolve) => {
      release = resolve;
    });
    let failIdx = true;
    fs.writeFile = async (path, data) => {
      started.push(path);
      if (started.length === 2) release();
      // each write waits for the other to start: they run at once
      await bothStarted;
      const isIdx = (data as Uint8Array)[0] === 0xff && (data as Uint8Array)[1] === 0x74;
      if (isIdx && failIdx) throw Object.assign(new Error('disk full'), { code: 'ENOSPC' });
      return writeFile(path, data);
    };
    const store = new FsObjectStore(fs, '/repo.git');
    // the code and the message checked apart: Bun's toMatchObject takes no pattern for a message
    const failed = await importPack(store, pack).then(
      () => undefined,
      (error: unknown) => error as { code?: string; message: string },
    );
    expect(failed?.code).toBe('STORE_IO');
    expect(failed?.message).toMatch(/\.idx$/);
    expect(started).toHaveLength(2);
    expect(await fs.readdir('/repo.git/objects/pack')).toEqual([]);
    expect(await store.has(oids[0]!)).toBe(false);
    failIdx = false;
    started.length = 0;
    const stored = new FsObjectStore(fs, '/repo.git');
    await importPack(stored, pack);
    expect((await fs.readdir('/repo.git/objects/pack')).sort()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pack-[0-9a-f]{40}\.idx$/), expect.stringMatching(/\.pack$/)]),
    );
    expect(await fs.readdir('/repo.git/objects/pack')).toHaveLength(2);
    expect(await new FsObjectStore(fs, '/repo.git').has(oids[1]!)).toBe(true);
  });
});

describe('FsObjectStore.readSync', () => {
  it('serves packed objects (deltas included) without awaiting once their pack is held whole, equal to read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
    temps.push(dir);
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    let base = seededBlob(7, 30_000);
    for (let i = 0; i < 8; i++) {
      base = base.slice();
      base.set(enc.encode(`change ${i}`), (i * 2011) % 29_000);
      oids.push(await source.write('blob', base));
    }
    const pack = await collect(packObjects(source, oids));
    const writer = new FsObjectStore(nodeFs, dir);
    await importPack(writer, pack);
    await writer.close();
    // a fresh store: nothing cached, the pack not read yet
    const store = new FsObjectStore(nodeFs, dir);
    expect(store.readSync(oids[0]!)).toBeUndefined();
    const first = await store.read(oids[0]!);
    expect(first?.type).toBe('blob');
    const fresh = new FsObjectStore(nodeFs, dir);
    for (const oid of oids) {
      const sync = store.readSync(oid);
      expect(sync).toBeDefined();
      expect(bytesToHex(sync!.data)).toBe(bytesToHex((await fresh.read(oid))!.data));
      expect(await hashObject('blob', sync!.data)).toBe(oid);
    }
    expect(store.readSync('ab'.repeat(20))).toBeUndefined();
    await store.close();
    await fresh.close();
  });

  it('reads pack indexes at positions with an index reader, else whole, with the same objects', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
    temps.push(dir);
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    for (let i = 0; i < 30; i++) oids.push(await source.write('blob', seededBlob(700 + i, 1_500)));
    const writer = new FsObjectStore(nodeFs, dir);
    await importPack(writer, await collect(packObjects(source, oids)));
    await writer.close();
    /** node:fs's promises, noting how each .idx file is read. */
    const watched = () => {
      const idxReads: string[] = [];
      const fs = nodeFs.promises;
      const wrapped: ObjectStoreFs = {
        ...(fs as unknown as ObjectStoreFs),
        readFile: ((path: string, ...rest: unknown[]) => {
          if (path.endsWith('.idx')) idxReads.push('whole');
          return (fs.readFile as (...a: unknown[]) => unknown)(path, ...rest);
        }) as ObjectStoreFs['readFile'],
        open: ((path: string, ...rest: unknown[]) => {
          if (path.endsWith('.idx')) idxReads.push('positional');
          return (fs.open as (...a: unknown[]) => unknown)(path, ...rest);
        }) as ObjectStoreFs['open'],
      };
      return { fs: wrapped, idxReads };
    };
    const piecewise = watched();
    const whole = watched();
    const stores = [
      new FsObjectStore(piecewise.fs, dir, { indexReader: readPackIndexFile }),
      new FsObjectStore(whole.fs, dir),
    ];
    for (const store of stores) {
      for (const oid of oids)
        expect(bytesToHex((await store.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
      await store.close();
    }
    expect(piecewise.idxReads).toEqual(['positional']);
    expect(whole.idxReads).toEqual(['whole']);
  });

  it('keeps small objects it caches in buffers of their own, not views of shared inflate slabs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
    temps.push(dir);
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    for (let i = 0; i < 20; i++) oids.push(await source.write('blob', seededBlob(500 + i, 2_000)));
    const writer = new FsObjectStore(nodeFs, dir);
    await importPack(writer, await collect(packObjects(source, oids)));
    await writer.close();
    const store = new FsObjectStore(nodeFs, dir);
    for (const oid of oids) await store.read(oid);
    for (const oid of oids) {
      const cached = store.readSync(oid)!;
      expect(bytesToHex(cached.data)).toBe(bytesToHex((await source.read(oid))!.data));
      expect(cached.data.buffer.byteLength).toBeLessThan(2 * cached.data.length);
    }
    await store.close();
  });

  it('serves objects of a pack read at positions once their pages are cached', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
    temps.push(dir);
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    // many small unlike blobs: the pack is larger than half the page cache (its least, 2 MiB),
    // so it is read in pages; most entries lie within one page
    for (let i = 0; i < 400; i++) oids.push(await source.write('blob', seededBlob(100 + i, 3_000)));
    const pack = await collect(packObjects(source, oids));
    expect(pack.reduce((n, c) => n + c.length, 0)).toBeGreaterThan(600_000);
    const writer = new FsObjectStore(nodeFs, dir);
    await importPack(writer, pack);
    await writer.close();
    const store = new FsObjectStore(nodeFs, dir, { pageCacheBytes: 0, cacheBytes: 0 });
    const fresh = new FsObjectStore(nodeFs, dir);
    expect(store.readSync(oids[0]!)).toBeUndefined();
    // reading each once brings every page of its chain into the cache (the pack fits in it)
    for (const oid of oids) expect(await store.read(oid)).toBeDefined();
    let served = 0;
    for (const oid of oids) {
      const sync = store.readSync(oid);
      if (!sync) continue;
      served++;
      expect(bytesToHex(sync.data)).toBe(bytesToHex((await fresh.read(oid))!.data));
    }
    // nearly all (entries across two pages too, from both)
    expect(served).toBeGreaterThan(oids.length * 0.9);
    await store.close();
    await fresh.close();
  });
});

describe('FsObjectStore pack spool', () => {
  it('patch changes what read returns, for bytes held in memory and on file alike', async () => {
    const store = await diskStore();
    const spool = (await beginPack(store))!;
    expect(spool).toBeDefined();
    // 3 MiB: the first blocks leave memory (only the last 2 MiB stay), the last ones stay
    const total = 3 * 2 ** 20;
    const bytes = seededBlob(3, total);
    appendInPieces(spool, bytes, 100_000);
    await spool.drain();
    const patches = [
      { at: 8, n: 4 }, // on file only
      { at: total - 300_000, n: 20 }, // in a block held in memory
      { at: total - 2 * 64 * 1024 - 5, n: 10 }, // across two blocks held in memory
      { at: total - 10, n: 10 }, // the end, in the partly filled block
    ];
    const expected = bytes.slice();
    for (const [k, { at, n }] of patches.entries()) {
      const p = new Uint8Array(n).fill(0xf0 + k);
      await spool.patch(at, p);
      expected.set(p, at);
    }
    for (const { at, n } of patches) {
      const end = Math.min(total, at + n + 3);
      expect(bytesToHex(await spool.read(at - 3, end - at + 3))).toBe(bytesToHex(expected.subarray(at - 3, end)));
    }
    const all: Uint8Array[] = [];
    for await (const c of spool.chunks()) all.push(c);
    let o = 0;
    let differing = 0;
    for (const c of all) for (let i = 0; i < c.length; i++, o++) if (c[i] !== expected[o]) differing++;
    expect(o).toBe(total);
    expect(differing).toBe(0);
    await spool.abort();
    await store.close();
  });
});

describe('FsObjectStore pack spool writes', () => {
  /** node:fs whose file handles' vectored writes stop after `most` bytes, as a short write may. */
  const shortWrites = (most: number): ObjectStoreFs => ({
    ...nodeFs.promises,
    async open(path: string, flags: string) {
      const handle = await nodeFs.promises.open(path, flags);
      const whole = handle.writev.bind(handle);
      const writev = async (buffers: Uint8Array[], position?: number) => {
        let left = most;
        const part: Uint8Array[] = [];
        for (const b of buffers) {
          if (left <= 0) break;
          part.push(b.subarray(0, Math.min(left, b.length)));
          left -= b.length;
        }
        return whole(part, position);
      };
      return Object.assign(handle, { writev });
    },
  });

  for (const [name, fs] of [
    ['node:fs', nodeFs.promises],
    ['short vectored writes', shortWrites(100_000)],
  ] as const) {
    it(`puts every byte on file, across a truncate into written blocks (${name})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
      temps.push(dir);
      const store = new FsObjectStore(fs as ObjectStoreFs, dir, { packSpool: openPackSpool });
      const spool = (await beginPack(store))!;
      const bytes = seededBlob(21, 2_000_003);
      appendInPieces(spool, bytes, 30_000);
      await spool.drain();
      // back into blocks already written, then other bytes over them
      const cut = 1_000_001;
      spool.truncate(cut);
      const rest = seededBlob(22, 700_000);
      appendInPieces(spool, rest, 50_000);
      const parts: Uint8Array[] = [];
      for await (const c of spool.chunks()) parts.push(c);
      expect(bytesToHex(concat(parts))).toBe(bytesToHex(concat([bytes.subarray(0, cut), rest])));
      await spool.abort();
      await store.close();
    });
  }
});

describe('FsObjectStore pack spools in a row', () => {
  it('a spool after another (blocks reused) reads and writes its own bytes', async () => {
    const store = await diskStore();
    for (const seed of [11, 12, 13]) {
      const spool = (await beginPack(store))!;
      const total = 1_500_000 + seed;
      const bytes = seededBlob(seed, total);
      appendInPieces(spool, bytes, 70_000);
      for (const at of [0, 300_000, total - 1000]) {
        expect(bytesToHex(await spool.read(at, 1000))).toBe(bytesToHex(bytes.subarray(at, at + 1000)));
      }
      const parts: Uint8Array[] = [];
      for await (const c of spool.chunks()) parts.push(c);
      expect(bytesToHex(concat(parts))).toBe(bytesToHex(bytes));
      await spool.abort();
    }
    await store.close();
  });
});

describe('FsObjectStore pack spool once closed', () => {
  it('append, truncate, read, patch and chunks after abort or commit throw STORE_CLOSED and leave the next spool alone', async () => {
    const store = await diskStore();
    const closedCode = async (f: () => unknown) => {
      try {
        await f();
        return 'no error';
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    const late = (await beginPack(store))!;
    late.append(seededBlob(21, 600_000));
    await late.abort();
    // the next spool takes the blocks the aborted one gave back
    const next = (await beginPack(store))!;
    const bytes = seededBlob(22, 600_000);
    next.append(bytes);
    expect(await closedCode(() => late.append(new Uint8Array(300_000).fill(0xee)))).toBe('STORE_CLOSED');
    expect(await closedCode(() => late.truncate(10))).toBe('STORE_CLOSED');
    expect(await closedCode(() => late.read(0, 10))).toBe('STORE_CLOSED');
    expect(await closedCode(() => late.patch(0, new Uint8Array(4)))).toBe('STORE_CLOSED');
    expect(await closedCode(() => late.chunks()[Symbol.asyncIterator]().next())).toBe('STORE_CLOSED');
    const parts: Uint8Array[] = [];
    for await (const c of next.chunks()) parts.push(c);
    expect(bytesToHex(concat(parts))).toBe(bytesToHex(bytes));
    await next.abort();

    // a committed spool is closed too
    const source = new MemoryObjectStore();
    const oid = await source.write('blob', enc.encode('committed spool'));
    const pack = concat(await collect(packObjects(source, [oid], { deltas: false })));
    const spool = (await beginPack(store))!;
    spool.append(pack);
    const reader = new PackReader([pack]);
    const entries: { oid: string; offset: number; crc32: number }[] = [];
    for await (const e of reader.entries())
      if (e.kind === 'whole') entries.push({ oid: e.oid, offset: e.offset, crc32: e.crc32 });
    await spool.commit(reader.hash!, entries);
    expect(await closedCode(() => spool.append(new Uint8Array(1)))).toBe('STORE_CLOSED');
    expect(await closedCode(() => spool.truncate(0))).toBe('STORE_CLOSED');
    expect(bytesToHex((await store.read(oid))!.data)).toBe(bytesToHex(enc.encode('committed spool')));
    await store.close();
  });
});

/**
 * A pack of two large blobs `a` and `c` (whole), a small blob, then `a2` as an OFS delta on `a`:
 * the delta comes after `c`, whose data takes the place of `a`'s in a reader's lent buffer.
 */
function displacedBasePack() {
  const a = seededBlob(31, 48 * 1024);
  const c = seededBlob(32, 40 * 1024);
  const small = seededBlob(33, 300);
  const a2 = a.slice();
  a2.set(enc.encode('changed in the middle'), 20_000);
  const entry = (type: keyof typeof TYPE_CODES, data: Uint8Array) =>
    concat([encodeEntryHeader(TYPE_CODES[type], data.length), deflate(data)]);
  const entries = [entry('blob', a), entry('blob', c), entry('blob', small)];
  const deltaAt = 12 + entries.reduce((n, e) => n + e.length, 0);
  const delta = createDelta(a, a2)!;
  entries.push(
    concat([encodeEntryHeader(EntryType.OFS_DELTA, delta.length), encodeOfsOffset(deltaAt - 12), deflate(delta)]),
  );
  const header = new Uint8Array(12);
  header.set(enc.encode('PACK'));
  new DataView(header.buffer).setUint32(4, 2);
  new DataView(header.buffer).setUint32(8, entries.length);
  const body = concat([header, ...entries]);
  return { pack: concat([body, sha1(body)]), a, c, small, a2 };
}

/** `bytes` in pieces of `step` bytes. */
function pieces(bytes: Uint8Array, step: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += step) out.push(bytes.slice(at, at + step));
  return out;
}

describe('PackReader lendAbove', () => {
  it.each([
    ['whole', 1 << 20],
    ['in pieces that cut entries', 7000],
  ])(
    'large whole objects (read %s) are inflated into one reused buffer; small ones and deltas are not',
    async (_how, step) => {
      const { pack, a, c, small } = displacedBasePack();
      const entries: { entry: PackEntry; copy: Uint8Array; buffer: ArrayBufferLike }[] = [];
      for await (const e of new PackReader(pieces(pack, step), { lendAbove: 32 * 1024 }).entries()) {
        entries.push({ entry: e, copy: e.data!.slice(), buffer: e.data!.buffer });
      }
      const [ea, ec, es, ed] = entries;
      expect(ea!.entry.kind === 'whole' && ea!.entry.oid).toBe(await hashObject('blob', a));
      expect(bytesToHex(ea!.copy)).toBe(bytesToHex(a));
      expect(bytesToHex(ec!.copy)).toBe(bytesToHex(c));
      expect(bytesToHex(es!.copy)).toBe(bytesToHex(small));
      // the second large object went where the first was
      expect(ec!.buffer).toBe(ea!.buffer);
      expect(bytesToHex(ea!.entry.data!.subarray(0, 64))).toBe(bytesToHex(c.subarray(0, 64)));
      expect(es!.buffer).not.toBe(ea!.buffer);
      expect(ed!.entry.kind).toBe('ofs-delta');
      expect(ed!.buffer).not.toBe(ea!.buffer);
    },
  );
});

describe('importPack with the pack on disk', () => {
  it.each([1 << 20, 7000])(
    'a delta on a large whole object whose data the reader reused since resolves from the pack (pieces of %i bytes)',
    async (step) => {
      const { pack, a, c, small, a2 } = displacedBasePack();
      const store = await diskStore();
      const result = await importPack(store, pieces(pack, step), { spool: beginPack(store) });
      const expected = await Promise.all([a, c, small, a2].map((d) => hashObject('blob', d)));
      expect(result.objects).toEqual(expected);
      const fresh = new FsObjectStore(nodeFs, store.gitDir);
      for (const [i, data] of [a, c, small, a2].entries()) {
        expect(bytesToHex((await fresh.read(expected[i]!))!.data)).toBe(bytesToHex(data));
      }
    },
  );
});

describe('a stored pack of an FsObjectStore (findPackOf), streamed', () => {
  it.each([
    ['node:fs, positional reads', diskStore],
    ['whole-file fs', async () => new FsObjectStore(memoryFs(), '/repo.git')],
  ])('(%s) borrowed pieces are the pack in the store reused buffers; kept pieces are copies', async (_name, make) => {
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    for (let i = 0; i < 12; i++) oids.push(await source.write('blob', seededBlob(40 + i, 500_000)));
    const store = await make();
    await importPack(store, await collect(packObjects(source, oids)));
    const stored = (await findPackOf(store, oids))!;
    const read = async (borrow: boolean) => {
      const copies: Uint8Array[] = [];
      const buffers: ArrayBufferLike[] = [];
      for await (const piece of stored.stream(undefined, { borrow })) {
        copies.push(piece.slice());
        buffers.push(piece.buffer);
      }
      return { bytes: concat(copies), buffers };
    };
    const kept = await read(false);
    expect(kept.buffers.length).toBeGreaterThan(2);
    expect(new Set(kept.buffers).size).toBe(kept.buffers.length);
    const first = await read(true);
    const second = await read(true);
    expect(bytesToHex(first.bytes)).toBe(bytesToHex(kept.bytes));
    expect(bytesToHex(second.bytes)).toBe(bytesToHex(kept.bytes));
    expect(bytesToHex(sha1(kept.bytes.subarray(0, -20)))).toBe(bytesToHex(kept.bytes.subarray(-20)));
    // two buffers in turn, the same again for the next stream
    expect(new Set(first.buffers).size).toBeLessThanOrEqual(2);
    expect(new Set([...first.buffers, ...second.buffers]).size).toBe(new Set(first.buffers).size);
    await store.close();
  });
});

describe('the header reads of an FsObjectStore (readHeaderOf) of deltas', () => {
  it('gives the type at the bottom of each chain and the size the delta makes, without awaiting once pages are cached', async () => {
    const source = new MemoryObjectStore();
    // trees over trees and blobs over blobs: chains of both types in one pack
    const all: string[] = [];
    let body = seededBlob(3, 4_000);
    const entries: { mode: string; name: string; oid: string; type: 'blob' }[] = [];
    for (let i = 0; i < 10; i++) {
      body = body.slice(0, 4_000 + i * 10);
      body.set(enc.encode(`version ${i}`), (i * 331) % 3_900);
      const blob = await source.write('blob', body);
      entries.push({ mode: '100644', name: `file-${i}`, oid: blob, type: 'blob' });
      all.push(blob, await source.write('tree', serializeTree(entries.slice())));
    }
    const pack = await collect(packObjects(source, all));
    const dir = await mkdtemp(join(tmpdir(), 'gitport-store-'));
    temps.push(dir);
    const writer = new FsObjectStore(nodeFs, dir);
    await importPack(writer, pack);
    let deltas = 0;
    for (const oid of all) if ((await readRawOf(writer, oid))?.kind === 'delta') deltas++;
    expect(deltas).toBeGreaterThan(10);
    await writer.close();
    for (const order of [all, [...all].reverse()]) {
      const store = new FsObjectStore(nodeFs, dir);
      for (const oid of order) {
        const a = (await source.read(oid))!;
        expect(await readHeaderOf(store, oid)).toEqual({ type: a.type, size: a.data.length });
        expect(readHeaderSyncOf(store, oid)).toEqual({ type: a.type, size: a.data.length });
      }
      expect(readHeaderSyncOf(store, 'ab'.repeat(20))).toBeUndefined();
      await store.close();
    }
  });
});

describe('FsObjectStore reading a stored pack with bad entry headers', () => {
  /** A pack and its .idx written straight into `objects/pack` (no import checks them), one blob first. */
  async function storeWith(badAt: (offset: number) => Uint8Array) {
    const blob = concat([encodeEntryHeader(EntryType.BLOB, 1), deflate(enc.encode('x'))]);
    const bad = badAt(12 + blob.length);
    const header = new Uint8Array(12);
    header.set(enc.encode('PACK'));
    new DataView(header.buffer).setUint32(4, 2);
    new DataView(header.buffer).setUint32(8, 2);
    const body = concat([header, blob, bad]);
    const pack = concat([body, sha1(body)]);
    const hash = bytesToHex(sha1(body));
    const ids = { blob: await hashObject('blob', enc.encode('x')), bad: 'b'.repeat(40) };
    const idx = writeIdx(
      [
        { oid: ids.blob, offset: 12, crc32: 0 },
        { oid: ids.bad, offset: 12 + blob.length, crc32: 0 },
      ],
      hash,
    );
    const fs = memoryFs();
    await fs.mkdir('/r/objects/pack', { recursive: true });
    await fs.writeFile(`/r/objects/pack/pack-${hash}.pack`, pack);
    await fs.writeFile(`/r/objects/pack/pack-${hash}.idx`, idx);
    return { store: new FsObjectStore(fs, '/r'), ids };
  }

  const codeOf = (promise: Promise<unknown>) =>
    promise.then(
      () => 'no error',
      (error: { code?: string }) => error.code,
    );

  it('a delta base before the first entry: PACK_BAD_BASE_OFFSET, for read, readRaw and readSync', async () => {
    const delta = createDelta(enc.encode('x'), enc.encode('xy'))!;
    const { store, ids } = await storeWith((at) =>
      concat([encodeEntryHeader(EntryType.OFS_DELTA, delta.length), encodeOfsOffset(at - 5), deflate(delta)]),
    );
    expect(await codeOf(store.read(ids.bad))).toBe('PACK_BAD_BASE_OFFSET');
    expect(await codeOf(readRawOf(store, ids.bad))).toBe('PACK_BAD_BASE_OFFSET');
    expect(() => store.readSync(ids.bad)).toThrow(expect.objectContaining({ code: 'PACK_BAD_BASE_OFFSET' }));
    expect(await codeOf(readHeaderOf(store, ids.bad))).toBe('PACK_BAD_BASE_OFFSET');
    // the sound entry beside it still reads
    expect((await store.read(ids.blob))?.data).toEqual(enc.encode('x'));
  });

  it('a size varint past 2^53: PACK_BAD_HEADER; a header cut short by the trailer: OBJECT_CORRUPT', async () => {
    const tooLong = new Uint8Array(12).fill(0xff);
    tooLong[0] = 0xbf;
    const long = await storeWith(() => tooLong);
    expect(await codeOf(long.store.read(long.ids.bad))).toBe('PACK_BAD_HEADER');
    const cut = await storeWith(() => Uint8Array.of(0xbf, 0xff));
    expect(await codeOf(cut.store.read(cut.ids.bad))).toBe('OBJECT_CORRUPT');
  });
});
