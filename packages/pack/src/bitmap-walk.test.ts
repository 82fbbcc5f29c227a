/**
 * Enumeration by git's reachability bitmaps and pack reuse by ranges, judged by real git: a
 * repository whose pack and `.bitmap` git wrote (`git repack -adb`), then more history in loose
 * objects and a second pack; the objects selected must be those of the commit walk and of
 * `git rev-list --objects --use-bitmap-index`, and the packs written must index and fsck cleanly.
 */
import * as nodeFs from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bitmapServing } from './bitmap-serving.js';
import { bitmapObjects, bitmapWalk, tryBitmapWalk } from './bitmap-walk.js';
import { FsObjectStore } from './fs-store.js';
import { parseObjectFilter } from './object-filter.js';
import { createPack } from './pack-writer.js';
import { commitFiles } from './test-repo-files.js';
import { enumerateObjects } from './walk.js';

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c.slice());
  return Buffer.concat(parts);
}

describe('bitmap walk and range reuse on a repository git packed with a bitmap', () => {
  let sandbox: GitSandbox;
  let repo: string;
  let gitDir: string;
  const rev = async (name: string) => sandbox.git(['rev-parse', name], { cwd: repo });
  const revList = async (args: string[]) =>
    new Set(
      (await sandbox.git(['rev-list', '--objects', ...args], { cwd: repo }))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(0, 40)),
    );
  let packed: string; // tip when the bitmap was written
  let tip: string; // tip now (loose and second-pack commits on top)

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    repo = sandbox.path('repo');
    gitDir = `${repo}/.git`;
    await sandbox.git(['init', '--quiet', repo]);
    for (let i = 0; i < 30; i++) {
      const files: Record<string, string> = {
        [`dir${i % 4}/file${i % 7}.txt`]: `line ${i}\n`.repeat(20 + i),
        'README.md': `readme version ${i}\n${'text '.repeat(200)}`,
      };
      if (i === 10) files['gone/later.txt'] = 'comes back\n';
      await commitFiles(sandbox, repo, files, `commit ${i}`);
      if (i === 12) await sandbox.git(['rm', '-q', '-r', 'gone'], { cwd: repo });
      if (i === 12) await sandbox.git(['commit', '-q', '-m', 'remove gone'], { cwd: repo });
      if (i === 15) {
        await sandbox.git(['checkout', '-q', '-b', 'side', 'HEAD~3'], { cwd: repo });
        await commitFiles(sandbox, repo, { 'side.txt': 'side\n'.repeat(50) }, 'side work');
        await sandbox.git(['checkout', '-q', 'main'], { cwd: repo });
        await sandbox.git(['merge', '-q', '--no-edit', 'side'], { cwd: repo });
      }
      if (i === 20) await sandbox.git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: repo });
    }
    // annotated tags of a tree and of a blob, a tag of a tag
    await sandbox.git(['tag', '-a', '-m', 'a tree', 'tree-tag', 'HEAD^{tree}'], { cwd: repo });
    await sandbox.git(['tag', '-a', '-m', 'a blob', 'blob-tag', 'HEAD:README.md'], { cwd: repo });
    await sandbox.git(['tag', '-a', '-m', 'nested', 'nested-tag', 'v1'], { cwd: repo });
    await sandbox.git(['-c', 'pack.writeBitmapHashCache=true', 'repack', '-adbq'], { cwd: repo });
    packed = await rev('HEAD');
    // a second pack, then loose objects; the file that was removed comes back
    await commitFiles(sandbox, repo, { 'dir1/file1.txt': 'second pack\n' }, 'in the second pack');
    await sandbox.git(['repack', '-dq'], { cwd: repo });
    await commitFiles(sandbox, repo, { 'gone/later.txt': 'comes back\n', 'new/loose.txt': 'loose\n' }, 'loose');
    tip = await rev('HEAD');
  });
  afterAll(async () => {
    await sandbox?.cleanup();
  });

  const refs = async () =>
    (await sandbox.git(['for-each-ref', '--format=%(objectname)'], { cwd: repo })).split('\n').filter(Boolean);

  it('loads the bitmap git wrote', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const pack = await store.bitmappedPack?.();
    expect(pack).toBeDefined();
    expect(pack!.bitmaps.hasHashCache).toBe(true);
    expect(pack!.reachable(pack!.position(packed))).toBeDefined();
    await store.close();
  });

  it('selects what the commit walk does for a clone, and what git rev-list lists', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const wants = await refs();
    const b = await tryBitmapWalk(store, { wants });
    expect(b).toBeDefined();
    const byBitmap = (await bitmapObjects(b!)).map((o) => o.oid);
    expect(new Set(byBitmap).size).toBe(byBitmap.length);
    const walked = (await enumerateObjects(store, { wants })).objects.map((o) => o.oid);
    expect(new Set(byBitmap)).toEqual(new Set(walked));
    expect(new Set(byBitmap)).toEqual(await revList(['--all']));
    expect(b!.count).toBe(byBitmap.length);
    // types as the walk has them
    const types = new Map((await enumerateObjects(store, { wants })).objects.map((o) => [o.oid, o.type]));
    for (const o of await bitmapObjects(b!)) expect(o.type).toBe(types.get(o.oid));
    // name hashes from the bitmap's name-hash cache (idx order), as the walk computes them
    // (an object at several paths may be named by another one of them)
    const hashes = new Map((await enumerateObjects(store, { wants })).objects.map((o) => [o.oid, o.nameHash]));
    const fromCache = (await bitmapObjects(b!)).filter((o) => o.type === 'blob' && b!.pack.position(o.oid) >= 0);
    const same = fromCache.filter((o) => hashes.get(o.oid) === o.nameHash).length;
    expect(same / fromCache.length).toBeGreaterThan(0.9);
    await store.close();
  });

  it('excludes what the haves reach, exactly as git rev-list --use-bitmap-index', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const cases: [string[], string[]][] = [
      [[tip], [packed]],
      [[tip], [await rev('HEAD~5')]],
      [[packed], [await rev('HEAD~20')]],
      [[tip, await rev('v1')], [await rev('side')]],
      [[await rev('tree-tag'), await rev('blob-tag')], [await rev('HEAD~3')]],
      [[tip], [await rev('v1'), 'f'.repeat(40)]],
    ];
    for (const [wants, haves] of cases) {
      const b = await tryBitmapWalk(store, { wants, haves });
      const got = new Set((await bitmapObjects(b!)).map((o) => o.oid));
      const peeledHaves = await Promise.all(haves.filter((h) => h !== 'f'.repeat(40)).map((h) => rev(`${h}^{commit}`)));
      const expected = await revList([...wants, ...peeledHaves.map((h) => `^${h}`)]);
      // rev-list without bitmaps excludes only the boundary's trees: the bitmap excludes at least that
      const viaBitmap = await revList(['--use-bitmap-index', ...wants, ...peeledHaves.map((h) => `^${h}`)]);
      for (const oid of got) expect(expected.has(oid)).toBe(true);
      expect(got).toEqual(viaBitmap);
      // and the commit walk's set less what the haves reach
      const walked = (await enumerateObjects(store, { wants, haves })).objects.map((o) => o.oid);
      const reachable = await revList(peeledHaves);
      expect(got).toEqual(new Set(walked.filter((o) => !reachable.has(o))));
    }
    await store.close();
  });

  it('adds annotated tags with include-tag, and filters by the type bitmaps and blob sizes', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const tags = [await rev('v1'), await rev('nested-tag')];
    const wants = [packed];
    const b = await tryBitmapWalk(store, { wants, haves: [await rev('HEAD~25')], tags });
    const walked = await enumerateObjects(store, { wants, haves: [await rev('HEAD~25')], tags });
    expect(new Set((await bitmapObjects(b!)).map((o) => o.oid))).toEqual(new Set(walked.objects.map((o) => o.oid)));
    // a tag of a tree that is sent goes too, as git's pack-objects adds it (the walk only looks at commits)
    const treeTag = await rev('tree-tag');
    const withTreeTag = await tryBitmapWalk(store, { wants, tags: [treeTag] });
    expect((await bitmapObjects(withTreeTag!)).some((o) => o.oid === treeTag)).toBe(true);
    const specs = [
      'blob:none',
      'object:type=tree',
      'object:type=commit',
      'object:type=blob',
      'tree:0',
      'blob:limit=0',
      'blob:limit=1k',
      'blob:limit=2000',
      'combine:blob:limit=1k+object:type=blob',
      'combine:tree:0+blob:none',
    ];
    const all = await refs();
    const requests: { wants: string[]; haves?: string[] }[] = [
      { wants: all },
      // tags of a tree and of a blob: what they peel to is named by the request, and stays
      { wants: [packed, await rev('tree-tag'), await rev('blob-tag')] },
      { wants: [tip], haves: [await rev('HEAD~6')] },
    ];
    for (const spec of specs) {
      const filter = parseObjectFilter(spec);
      for (const { wants: w, haves = [] } of requests) {
        const fb = await tryBitmapWalk(store, { wants: w, haves, filter });
        expect(fb, spec).toBeDefined();
        const got = new Set((await bitmapObjects(fb!)).map((o) => o.oid));
        expect(fb!.count, spec).toBe(got.size);
        // git answers the same request from its bitmaps
        const viaGit = await revList([`--filter=${spec}`, '--use-bitmap-index', ...w, ...haves.map((h) => `^${h}`)]);
        expect(got, `${spec} ${w.length} wants`).toEqual(viaGit);
        if (haves.length === 0) {
          // and the walk selects the same (with haves it keeps more of what they reach)
          const fw = await enumerateObjects(store, { wants: w, filter });
          expect(got, spec).toEqual(new Set(fw.objects.map((o) => o.oid)));
        }
      }
    }
    // requests the bitmaps do not answer exactly
    expect(await tryBitmapWalk(store, { wants, filter: parseObjectFilter('tree:1') })).toBeUndefined();
    expect(
      await tryBitmapWalk(store, { wants, filter: parseObjectFilter('combine:blob:none+tree:2') }),
    ).toBeUndefined();
    expect(await tryBitmapWalk(store, { wants, filter: parseObjectFilter(`sparse:oid=${packed}`) })).toBeUndefined();
    expect(await tryBitmapWalk(store, { wants, shallow: [packed] })).toBeUndefined();
    await store.close();
  });

  it('writes packs that git indexes and fscks, reusing the pack by ranges', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const cases: { wants: string[]; haves: string[]; thin: boolean; ofsDelta: boolean }[] = [
      { wants: await refs(), haves: [], thin: false, ofsDelta: true },
      { wants: await refs(), haves: [], thin: false, ofsDelta: false },
      { wants: [tip], haves: [await rev('HEAD~6')], thin: true, ofsDelta: true },
      { wants: [tip], haves: [await rev('HEAD~6')], thin: false, ofsDelta: true },
      { wants: [tip, await rev('side')], haves: [await rev('HEAD~12')], thin: true, ofsDelta: false },
    ];
    let n = 0;
    for (const c of cases) {
      const pack = await collect(createPack(store, { wants: c.wants, haves: c.haves }, c));
      const target = sandbox.path(`target-${n++}`);
      await sandbox.git(['init', '--quiet', '--bare', target]);
      if (c.haves.length > 0) {
        // the receiver has the haves: fetch them from the repository first
        await sandbox.git(['fetch', '--quiet', repo, ...c.haves.map((h, i) => `${h}:refs/heads/have${i}`)], {
          cwd: target,
        });
      }
      await sandbox.git(['index-pack', '--strict', '--stdin', ...(c.thin ? ['--fix-thin'] : [])], {
        cwd: target,
        input: pack,
      });
      for (const [i, w] of c.wants.entries()) await sandbox.git(['update-ref', `refs/want/${i}`, w], { cwd: target });
      await sandbox.git(['fsck', '--strict', '--no-dangling'], { cwd: target });
      const expected = await revList([...c.wants, ...c.haves.map((h) => `^${h}`)]);
      const listed = new Set(
        (await sandbox.git(['rev-list', '--objects', ...c.wants], { cwd: target }))
          .split('\n')
          .filter(Boolean)
          .map((l) => l.slice(0, 40)),
      );
      for (const oid of expected) expect(listed.has(oid)).toBe(true);
    }
    await store.close();
  });

  it('streams a clone as the whole bitmapped pack body, then the other objects', async () => {
    const store = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    const bitmapped = await store.bitmappedPack?.();
    const name = (await readdir(`${gitDir}/objects/pack`)).find(
      (f) => f.endsWith('.bitmap') && nodeFs.existsSync(`${gitDir}/objects/pack/${f.replace('.bitmap', '.pack')}`),
    )!;
    const source = await readFile(`${gitDir}/objects/pack/${name.replace('.bitmap', '.pack')}`);
    const pack = await collect(createPack(store, { wants: await refs() }));
    // the source's body (its entries) comes over as it is, right after the header
    expect(Buffer.compare(pack.subarray(12, source.length - 20), source.subarray(12, source.length - 20))).toBe(0);
    expect(new DataView(pack.buffer, pack.byteOffset).getUint32(8)).toBeGreaterThan(bitmapped!.count);
    await store.close();
  });

  it('walks when the store is not given bitmap serving, and packs the same objects', async () => {
    const plain = new FsObjectStore(nodeFs, gitDir);
    expect(plain.bitmappedPack).toBeUndefined();
    expect(plain.bitmaps).toBeUndefined();
    const served = new FsObjectStore(nodeFs, gitDir, { bitmaps: bitmapServing });
    expect(await served.bitmappedPack?.()).toBeDefined();
    const requests = [
      { wants: await refs(), haves: [] },
      { wants: [tip], haves: [await rev('HEAD~6')] },
    ];
    let n = 0;
    for (const request of requests) {
      const objects: Set<string>[] = [];
      for (const store of [plain, served]) {
        const pack = await collect(createPack(store, request));
        const target = sandbox.path(`unplugged-${n++}`);
        await sandbox.git(['init', '--quiet', '--bare', target]);
        if (request.haves.length > 0) {
          // --strict checks links: the receiver has the haves
          await sandbox.git(['fetch', '--quiet', repo, ...request.haves.map((h, i) => `${h}:refs/heads/have${i}`)], {
            cwd: target,
          });
        }
        // the pack's own objects, by its index
        await writeFile(`${target}/sent.pack`, pack);
        await sandbox.git(['index-pack', '--strict', 'sent.pack'], { cwd: target });
        const index = await sandbox.git(['show-index'], { cwd: target, input: await readFile(`${target}/sent.idx`) });
        objects.push(
          new Set(
            index
              .split('\n')
              .filter(Boolean)
              .map((l) => l.split(' ')[1]!),
          ),
        );
      }
      // the walk sends what rev-list lists; the bitmaps may leave out more of what the haves reach
      expect(objects[0]).toEqual(await revList([...request.wants, ...request.haves.map((h) => `^${h}`)]));
      if (request.haves.length === 0) expect(objects[1]).toEqual(objects[0]);
      else for (const oid of objects[1]!) expect(objects[0]!.has(oid)).toBe(true);
    }
    await plain.close();
    await served.close();
  });

  it('ignores a corrupt or mismatched bitmap and walks instead', async () => {
    const copy = sandbox.path('corrupt.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--no-local', repo, copy]);
    await sandbox.git(['-C', copy, 'repack', '-adbq']);
    const dir = `${copy}/objects/pack`;
    const bitmap = (await readdir(dir)).find((f) => f.endsWith('.bitmap'))!;
    const good = await readFile(`${dir}/${bitmap}`);
    const wants = (await sandbox.git(['-C', copy, 'for-each-ref', '--format=%(objectname)'])).split('\n');
    const variants: [string, Uint8Array][] = [
      ['truncated', good.subarray(0, good.length >> 1)],
      ['flipped byte', Uint8Array.from(good, (b, i) => (i === 200 ? b ^ 0xff : b))],
      ['other pack', Uint8Array.from(good, (b, i) => (i === 12 ? b ^ 1 : b))],
      ['empty', new Uint8Array(0)],
    ];
    for (const [what, bytes] of variants) {
      await writeFile(`${dir}/${bitmap}`, bytes);
      const store = new FsObjectStore(nodeFs, copy, { bitmaps: bitmapServing });
      expect(await store.bitmappedPack?.(), what).toBeUndefined();
      const pack = await collect(createPack(store, { wants }));
      const target = sandbox.path(`after-${what.replace(' ', '-')}`);
      await sandbox.git(['init', '--quiet', '--bare', target]);
      await sandbox.git(['index-pack', '--strict', '--stdin'], { cwd: target, input: pack });
      for (const [i, w] of wants.entries()) await sandbox.git(['update-ref', `refs/want/${i}`, w], { cwd: target });
      await sandbox.git(['fsck', '--strict', '--no-dangling'], { cwd: target });
      await store.close();
    }
    // and bitmapWalk on the good bitmap agrees with the walk
    await writeFile(`${dir}/${bitmap}`, good);
    const store = new FsObjectStore(nodeFs, copy, { bitmaps: bitmapServing });
    const pack = await store.bitmappedPack?.();
    const b = await bitmapWalk(store, pack!, { wants });
    const walked = await enumerateObjects(store, { wants });
    expect(new Set((await bitmapObjects(b!)).map((o) => o.oid))).toEqual(new Set(walked.objects.map((o) => o.oid)));
    await store.close();
  });
});
