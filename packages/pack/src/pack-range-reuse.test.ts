/**
 * Range reuse of a bitmapped pack git wrote: the entries selected are copied in chunks of at
 * most the chunk size (or one entry's header, then its data in such chunks), OFS_DELTA distances
 * shortened by gaps are rewritten, deltas against bases the receiver has become REF_DELTA in a
 * thin pack and are rebuilt whole otherwise; `git index-pack --strict` is the judge.
 */
import * as nodeFs from 'node:fs';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bitmapServing } from './bitmap-serving.js';
import { bitmapWalk } from './bitmap-walk.js';
import { FsObjectStore } from './fs-store.js';
import { rangeReuse } from './pack-range-reuse.js';
import { PackReader } from './pack-reader.js';
import { sha1 } from './sha1.js';
import { commitFiles } from './test-repo-files.js';

describe('rangeReuse', () => {
  let sandbox: GitSandbox;
  let repo: string;
  beforeAll(async () => {
    sandbox = await createGitSandbox();
    repo = sandbox.path('repo');
    await sandbox.git(['init', '--quiet', repo]);
    for (let i = 0; i < 40; i++) {
      await commitFiles(
        sandbox,
        repo,
        { [`f${i % 3}.txt`]: `${'shared text\n'.repeat(200)}edit ${i}\n`, [`d/g${i % 5}`]: `${i}\n`.repeat(300) },
        `c${i}`,
      );
    }
    await sandbox.git(['repack', '-adbq', '--depth=20'], { cwd: repo });
  });
  afterAll(async () => {
    await sandbox?.cleanup();
  });

  /** A pack of the prefix's entries alone (no objects outside the bitmapped pack are wanted). */
  const packOf = async (
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    count: number,
    chunkBytes: number,
  ) => {
    const header = new Uint8Array(12);
    header.set([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2]);
    new DataView(header.buffer).setUint32(8, count);
    const parts: Uint8Array[] = [header];
    let largest = 0;
    for await (const c of chunks) {
      parts.push(c);
      largest = Math.max(largest, c.length);
    }
    const body = Buffer.concat(parts);
    return { pack: Buffer.concat([body, sha1(body)]), largest, chunkBytes };
  };

  const rev = (name: string) => sandbox.git(['rev-parse', name], { cwd: repo });

  it('copies the whole pack body in bounded chunks, at any chunk size', async () => {
    const store = new FsObjectStore(nodeFs, `${repo}/.git`, { bitmaps: bitmapServing });
    const pack = (await store.bitmappedPack?.())!;
    const e = (await bitmapWalk(store, pack, { wants: [await rev('HEAD')] }))!;
    expect(e.count).toBe(pack.count);
    const source = nodeFs.readFileSync(
      `${repo}/.git/objects/pack/${nodeFs.readdirSync(`${repo}/.git/objects/pack`).find((f) => f.endsWith('.pack'))}`,
    );
    for (const chunkBytes of [32, 100, 4096, 1 << 20]) {
      const prefix = rangeReuse(store, e, { chunkBytes });
      const { pack: out, largest } = await packOf(prefix.chunks(12), prefix.count, chunkBytes);
      expect(Buffer.compare(out, source)).toBe(0);
      expect(largest).toBeLessThanOrEqual(chunkBytes);
      // borrowed: chunks are views of two buffers in turn, copied before the next is asked for
      const borrowed = rangeReuse(store, e, { chunkBytes, borrow: true });
      const views = new Set<ArrayBufferLike>();
      const copies: Uint8Array[] = [];
      for await (const c of borrowed.chunks(12)) {
        views.add(c.buffer);
        copies.push(c.slice());
      }
      const again = await packOf(copies, borrowed.count, chunkBytes);
      expect(Buffer.compare(again.pack, source)).toBe(0);
      if (chunkBytes >= 4096) expect(views.size).toBeLessThanOrEqual(2);
    }
    await store.close();
  });

  for (const [label, filter] of [
    ['whole history', undefined],
    ['filter blob:none', { kind: 'blob:none' } as const],
  ] as const) {
    it(`puts a lead commit and its trees first, whole, before the ranges (${label})`, async () => {
      const store = new FsObjectStore(nodeFs, `${repo}/.git`, { bitmaps: bitmapServing });
      const pack = (await store.bitmappedPack?.())!;
      const e = (await bitmapWalk(store, pack, { wants: [await rev('HEAD')], ...(filter ? { filter } : {}) }))!;
      // an older commit: its trees are stored as deltas on newer ones, some are bases of older ones
      for (const lead of ['HEAD', 'HEAD~30']) {
        const commit = await rev(lead);
        const trees = new Set(
          [
            await rev(`${lead}^{tree}`),
            ...(await sandbox.git(['ls-tree', '-r', '-t', '-d', '--format=%(objectname)', lead], { cwd: repo }))
              .split('\n')
              .filter((l) => l !== ''),
          ].sort(),
        );
        const prefix = rangeReuse(store, e, { lead: commit, chunkBytes: 4096 });
        expect(prefix.count).toBe(e.count);
        const { pack: out } = await packOf(prefix.chunks(12), prefix.count, 4096);
        const entries: { kind: string; oid?: string; type?: string }[] = [];
        for await (const entry of new PackReader([out]).entries()) {
          entries.push({ kind: entry.kind, ...(entry.kind === 'whole' ? { oid: entry.oid, type: entry.type } : {}) });
        }
        expect(entries.length).toBe(e.count);
        expect(entries[0]).toEqual({ kind: 'whole', oid: commit, type: 'commit' });
        const first = entries.slice(1, 1 + trees.size);
        expect(first.every((x) => x.kind === 'whole' && x.type === 'tree')).toBe(true);
        expect(new Set(first.map((x) => x.oid).sort())).toEqual(trees);
        // git takes the pack
        const target = sandbox.path(`lead-${label.replace(/\W+/g, '-')}-${lead.replace(/\W+/g, '-')}`);
        await sandbox.git(['init', '--quiet', '--bare', target]);
        await sandbox.git(['index-pack', ...(filter ? [] : ['--strict']), '--stdin'], { cwd: target, input: out });
        if (!filter) {
          await sandbox.git(['update-ref', 'refs/heads/main', await rev('HEAD')], { cwd: target });
          await sandbox.git(['fsck', '--strict', '--no-dangling'], { cwd: target });
        } else {
          const objects = await sandbox.git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], {
            cwd: target,
          });
          expect(objects.split('\n').filter((l) => l !== '').length).toBe(e.count);
        }
      }
      await store.close();
    });
  }

  for (const [label, options] of [
    ['thin, OFS_DELTA', { thin: true, ofsDelta: true }],
    ['thin, REF_DELTA only', { thin: true, ofsDelta: false }],
    ['not thin', { thin: false, ofsDelta: true }],
  ] as const) {
    it(`writes a fetch's entries with gaps that git indexes (${label})`, async () => {
      const store = new FsObjectStore(nodeFs, `${repo}/.git`, { bitmaps: bitmapServing });
      const pack = (await store.bitmappedPack?.())!;
      // an older tip: the newer objects, which git makes the bases, are not sent (gaps, rebuilt deltas)
      for (const [want, have, chunkBytes] of [
        ['HEAD', 'HEAD~15', 64],
        ['HEAD', 'HEAD~15', 1 << 20],
        ['HEAD~10', 'HEAD~25', 1 << 20],
      ] as const) {
        const haves = [await rev(have)];
        const e = (await bitmapWalk(store, pack, { wants: [await rev(want)], haves }))!;
        expect(e.count).toBeLessThan(pack.count);
        const prefix = rangeReuse(store, e, { ...options, chunkBytes });
        const { pack: out } = await packOf(prefix.chunks(12), prefix.count, chunkBytes);
        // borrowed: the same bytes, in views of the buffers read and new headers
        const copies: Uint8Array[] = [];
        for await (const c of rangeReuse(store, e, { ...options, chunkBytes, borrow: true }).chunks(12)) {
          copies.push(c.slice());
        }
        expect(Buffer.compare((await packOf(copies, prefix.count, chunkBytes)).pack, out)).toBe(0);
        // after 4 GiB of other output (offsets past 32 bits): the same entries, distances alike
        const far: Uint8Array[] = [];
        for await (const c of rangeReuse(store, e, { ...options, chunkBytes }).chunks(2 ** 32 + 12)) far.push(c);
        expect(Buffer.compare((await packOf(far, prefix.count, chunkBytes)).pack, out)).toBe(0);
        // what the entries became
        const kinds = new Map<string, number>();
        for await (const entry of new PackReader([out]).entries())
          kinds.set(entry.kind, (kinds.get(entry.kind) ?? 0) + 1);
        if (!options.ofsDelta) expect(kinds.has('ofs-delta')).toBe(false);
        if (!options.thin) expect(kinds.has('ref-delta')).toBe(false);
        const target = sandbox.path(`target-${label.replace(/\W+/g, '-')}-${want}-${chunkBytes}`);
        await sandbox.git(['init', '--quiet', '--bare', target]);
        await sandbox.git(['fetch', '--quiet', repo, `${haves[0]}:refs/heads/have`], { cwd: target });
        await sandbox.git(['index-pack', '--strict', '--stdin', ...(options.thin ? ['--fix-thin'] : [])], {
          cwd: target,
          input: out,
        });
        await sandbox.git(['update-ref', 'refs/heads/main', await rev(want)], { cwd: target });
        await sandbox.git(['fsck', '--strict', '--no-dangling'], { cwd: target });
      }
      await store.close();
    });
  }
});
