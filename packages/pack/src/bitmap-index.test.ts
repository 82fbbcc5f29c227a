/**
 * `.bitmap` files written by real git (`git repack -adb`, with the name-hash cache and the lookup
 * table): every commit bitmap read must be what `git rev-list --objects` lists; truncated,
 * corrupt, oversized and random files are refused with a stable code or read safely, never a
 * crash or a hang.
 */
import * as nodeFs from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BitmapIndex, bitmappedPack } from './bitmap-index.js';
import { bitmapServing } from './bitmap-serving.js';
import { tryBitmapWalk } from './bitmap-walk.js';
import { isPackError } from './errors.js';
import { countBits, hasBit } from './ewah.js';
import { FsObjectStore } from './fs-store.js';
import { PackIndex } from './idx.js';
import { bytesToHex, hexToBytes } from './object.js';
import { createPack } from './pack-writer.js';
import { sha1 } from './sha1.js';
import { fuzzParameters } from './test-fuzz.js';
import { commitFiles } from './test-repo-files.js';

interface Fixture {
  bitmap: Uint8Array;
  idx: PackIndex;
  size: number;
}

describe('BitmapIndex on bitmaps git wrote', () => {
  let sandbox: GitSandbox;
  const fixtures = new Map<string, Fixture>();
  let repo: string;
  const CONFIGS: Record<string, string[]> = {
    plain: ['-c', 'pack.writeBitmapHashCache=false', '-c', 'pack.writeBitmapLookupTable=false'],
    'hash cache': ['-c', 'pack.writeBitmapHashCache=true', '-c', 'pack.writeBitmapLookupTable=false'],
    'lookup table': ['-c', 'pack.writeBitmapLookupTable=true', '-c', 'pack.writeBitmapHashCache=false'],
    both: ['-c', 'pack.writeBitmapHashCache=true', '-c', 'pack.writeBitmapLookupTable=true'],
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    repo = sandbox.path('repo');
    await sandbox.git(['init', '--quiet', repo]);
    for (let i = 0; i < 60; i++) {
      await commitFiles(sandbox, repo, { [`d${i % 5}/f${i % 9}`]: `v${i}\n`.repeat(i + 1), top: `${i}\n` }, `c${i}`);
      if (i % 20 === 19) await sandbox.git(['tag', '-a', '-m', `t${i}`, `t${i}`], { cwd: repo });
    }
    for (const [name, config] of Object.entries(CONFIGS)) {
      await sandbox.git([...config, 'repack', '-adbq'], { cwd: repo });
      const dir = `${repo}/.git/objects/pack`;
      const base = (await readdir(dir)).find((f) => f.endsWith('.bitmap'))!.slice(0, -7);
      fixtures.set(name, {
        bitmap: new Uint8Array(await readFile(`${dir}/${base}.bitmap`)),
        idx: new PackIndex(new Uint8Array(await readFile(`${dir}/${base}.idx`))),
        size: nodeFs.statSync(`${dir}/${base}.pack`).size,
      });
    }
  });
  afterAll(async () => {
    await sandbox?.cleanup();
  });

  /** Pack order from the .idx (the reverse index), as the store builds it. */
  const order = (f: Fixture) => {
    const n = f.idx.count;
    const positions = Uint32Array.from({ length: n }, (_, i) => i).sort(
      (a, b) => f.idx.offsetAt(a) - f.idx.offsetAt(b),
    );
    return { index: f.idx, positions, size: f.size, source: { readInto: async () => {} } };
  };

  it('reads every commit bitmap as git rev-list --objects lists it, with every extension', async () => {
    const types = new Map(
      (
        await sandbox.git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)'], {
          cwd: repo,
        })
      )
        .split('\n')
        .map((l) => l.split(' ') as [string, string]),
    );
    for (const [name, f] of fixtures) {
      const index = new BitmapIndex(f.bitmap, { count: f.idx.count, packHash: f.idx.packHash });
      expect(index.hasHashCache, name).toBe(name === 'hash cache' || name === 'both');
      expect(index.hasLookupTable, name).toBe(name === 'lookup table' || name === 'both');
      const pack = bitmappedPack(order(f), index);
      expect(index.size).toBeGreaterThan(0);
      // type bitmaps; binary-id lookups agree with hex ones, at any offset of the buffer
      const raw = new Uint8Array(23);
      for (let p = 0; p < pack.count; p++) {
        const oid = pack.oidAt(p);
        expect(pack.position(oid)).toBe(p);
        raw.set(hexToBytes(oid), 3);
        expect(pack.positionRaw(raw, 3)).toBe(p);
        raw[22] = raw[22]! ^ 1;
        expect(pack.positionRaw(raw, 3)).toBe(pack.position(bytesToHex(raw, 3, 23)));
        const type = types.get(oid);
        const bits = { commit: index.commits, tree: index.trees, blob: index.blobs, tag: index.tags }[type as 'commit'];
        expect(hasBit(bits, p), `${name} ${type}`).toBe(true);
      }
      let checked = 0;
      for (let p = 0; p < pack.count; p++) {
        const bits = pack.reachable(p);
        if (!bits) continue;
        const oid = pack.oidAt(p);
        const listed = (await sandbox.git(['rev-list', '--objects', oid], { cwd: repo }))
          .split('\n')
          .map((l) => l.slice(0, 40));
        expect(countBits(bits), name).toBe(listed.length);
        for (const o of listed) expect(hasBit(bits, pack.position(o))).toBe(true);
        if (++checked >= 6) break;
      }
      expect(checked).toBeGreaterThan(0);
      expect(pack.positionRaw(new Uint8Array(20), 0)).toBe(-1);
      expect(() => pack.positionRaw(new Uint8Array(20), 1)).toThrow(/cut short/);
    }
  });

  it('resolves every bitmap alike in any order when its cache keeps the fewest, decoding into dropped ones', () => {
    const f = fixtures.get('both')!;
    const count = { count: f.idx.count, packHash: f.idx.packHash };
    const reference = new BitmapIndex(f.bitmap, count, { cacheBytes: 2 ** 30 });
    const commits = Array.from({ length: f.idx.count }, (_, i) => i).filter((i) => reference.has(i));
    const expected = new Map(commits.map((i) => [i, reference.reachable(i)!.slice()]));
    // more bitmaps than the smallest cache holds, so that some are dropped and their buffers reused
    expect(commits.length).toBeGreaterThan(20);
    const shuffled = commits
      .map((i, k) => ({ i, key: Math.imul(k + 1, 2654435761) >>> 0 }))
      .sort((a, b) => a.key - b.key);
    const byEntry = [...commits].sort((a, b) => reference.entryOf(a) - reference.entryOf(b));
    expect(byEntry.map((i) => reference.entryOf(i))).toEqual(commits.map((_, k) => k));
    for (const order of [byEntry, [...byEntry].reverse(), shuffled.map((s) => s.i)]) {
      const small = new BitmapIndex(f.bitmap, count, { cacheBytes: 0 });
      for (const i of order) expect(small.reachable(i), `commit at ${i}`).toEqual(expected.get(i));
      for (const i of order.slice(0, 5)) expect(small.reachable(i)).toEqual(expected.get(i));
    }
    expect(reference.entryOf(-1)).toBe(-1);
  });

  it('with reread, keeps neither the name-hash cache nor the extensions, and reads the cache again', async () => {
    for (const [name, f] of fixtures) {
      const count = { count: f.idx.count, packHash: f.idx.packHash };
      const kept = new BitmapIndex(f.bitmap, count);
      let reads = 0;
      // a Buffer (whose slice() is a view), overwritten once read: with extensions, what is kept
      // is a copy of the part before them
      const given = Buffer.from(f.bitmap);
      const index = new BitmapIndex(given, count, {
        reread: async () => {
          reads++;
          return f.bitmap.slice();
        },
      });
      if (index.hasHashCache || index.hasLookupTable) given.fill(0);
      if (index.hasHashCache) expect(() => index.nameHashAt(0), name).toThrow(/loadNameHashes/);
      // the bitmaps decode alike from the part of the file kept
      for (let i = 0; i < f.idx.count; i++) {
        if (kept.has(i)) expect(index.reachable(i), `${name} ${i}`).toEqual(kept.reachable(i)!.slice());
      }
      await index.loadNameHashes();
      await index.loadNameHashes();
      expect(reads, name).toBe(index.hasHashCache ? 1 : 0);
      const hashes = Array.from({ length: f.idx.count }, (_, i) => index.nameHashAt(i));
      expect(hashes, name).toEqual(Array.from({ length: f.idx.count }, (_, i) => kept.nameHashAt(i)));
      expect(
        hashes.some((h) => h !== 0),
        name,
      ).toBe(index.hasHashCache);
    }
    // a file replaced, cut short or gone since it was read: as one without the cache (all 0)
    const f = fixtures.get('both')!;
    const count = { count: f.idx.count, packHash: f.idx.packHash };
    const gone = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    for (const reread of [
      async () => fixtures.get('hash cache')!.bitmap,
      async () => f.bitmap.subarray(0, f.bitmap.length - 1),
      async () => new Uint8Array(0),
      async () => Promise.reject(gone),
    ]) {
      const index = new BitmapIndex(f.bitmap, count, { reread });
      await index.loadNameHashes();
      expect(Array.from({ length: f.idx.count }, (_, i) => index.nameHashAt(i)).every((h) => h === 0)).toBe(true);
    }
  });

  it('a clone by the bitmaps sends the whole pack without listing it; decoded bitmaps go with the walk', async () => {
    // the repository is one pack with its bitmap (the last repack's): a clone is all of it
    const store = new FsObjectStore(nodeFs, `${repo}/.git`, { bitmaps: bitmapServing });
    const wants = (await sandbox.git(['for-each-ref', '--format=%(objectname)'], { cwd: repo }))
      .split('\n')
      .filter(Boolean);
    const reported: (readonly string[])[] = [];
    let bytes = 0;
    let count = -1;
    for await (const chunk of createPack(store, { wants }, { onStoredPack: (oids) => reported.push(oids) })) {
      if (count < 0) count = new DataView(chunk.buffer, chunk.byteOffset).getUint32(8);
      bytes += chunk.length;
    }
    const pack = (await store.bitmappedPack?.())!;
    expect(count).toBe(pack.count);
    expect(bytes).toBe(pack.size);
    expect(reported).toEqual([]);
    // a bitmap decoded is kept until a walk ends, then decoded again
    let p = 0;
    while (!pack.reachable(p)) p++;
    const decoded = pack.reachable(p)!;
    expect(pack.reachable(p)).toBe(decoded);
    expect(await tryBitmapWalk(store, { wants })).toBeDefined();
    const again = pack.reachable(p)!;
    expect(again).not.toBe(decoded);
    expect(again).toEqual(decoded);
    await store.close();
  });

  it('refuses a bitmap of another pack, or whose checksum does not match', () => {
    const f = fixtures.get('both')!;
    expect(() => new BitmapIndex(f.bitmap, { count: f.idx.count, packHash: '0'.repeat(40) })).toThrow(
      expect.objectContaining({ code: 'BITMAP_MISMATCH' }),
    );
    const flipped = f.bitmap.slice();
    flipped[40]! ^= 1;
    expect(() => new BitmapIndex(flipped, { count: f.idx.count, packHash: f.idx.packHash })).toThrow(
      expect.objectContaining({ code: 'BITMAP_CORRUPT' }),
    );
  });

  it('every truncation is refused with BITMAP_CORRUPT', () => {
    for (const f of fixtures.values()) {
      for (let n = 0; n < f.bitmap.length; n += 7) {
        expect(
          () => new BitmapIndex(f.bitmap.subarray(0, n), { count: f.idx.count, packHash: f.idx.packHash }),
        ).toThrow(expect.objectContaining({ code: 'BITMAP_CORRUPT' }));
      }
    }
  });

  /** With its trailer recomputed, so the corruption reaches the parser. */
  const resealed = (bytes: Uint8Array) => {
    const out = bytes.slice();
    out.set(sha1(out.subarray(0, out.length - 20)), out.length - 20);
    return out;
  };
  const parsesOrRefuses = (bytes: Uint8Array, f: Fixture) => {
    let index: BitmapIndex;
    try {
      index = new BitmapIndex(bytes, { count: f.idx.count, packHash: f.idx.packHash });
    } catch (error) {
      expect(isPackError(error) && ['BITMAP_CORRUPT', 'BITMAP_MISMATCH'].includes(error.code)).toBe(true);
      return;
    }
    for (let i = 0; i < f.idx.count; i++) {
      try {
        index.reachable(i);
      } catch (error) {
        expect(isPackError(error) && error.code).toBe('BITMAP_CORRUPT');
      }
    }
  };

  it('corrupt bytes, oversized lengths and counts are refused or read safely', () => {
    const f = fixtures.get('both')!;
    fc.assert(
      fc.property(fc.nat(f.bitmap.length - 21), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const bad = f.bitmap.slice();
        bad[at]! ^= xor;
        parsesOrRefuses(resealed(bad), f);
      }),
      fuzzParameters('bitmap byte corruption', 300),
    );
    fc.assert(
      fc.property(fc.nat(f.bitmap.length - 24), fc.constantFrom(0xffffffff, 0x7fffffff, 0x10000, 1), (at, value) => {
        const bad = f.bitmap.slice();
        new DataView(bad.buffer).setUint32(at, value);
        parsesOrRefuses(resealed(bad), f);
      }),
      fuzzParameters('bitmap oversized lengths', 300),
    );
  });

  it('random bytes behind a valid header are refused or read safely', () => {
    const f = fixtures.get('plain')!;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.constantFrom(1, 5, 17, 21, 0x35), (body, options) => {
        const bytes = new Uint8Array(32 + body.length + 20);
        bytes.set(f.bitmap.subarray(0, 32));
        new DataView(bytes.buffer).setUint16(6, options);
        bytes.set(body, 32);
        parsesOrRefuses(resealed(bytes), f);
      }),
      fuzzParameters('bitmap random bytes', 300),
    );
  });
});
