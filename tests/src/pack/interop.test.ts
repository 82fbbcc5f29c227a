/**
 * @gitport/pack against real git: packs written by git (OFS and REF deltas, thin, a 5 MB random
 * blob) imported over random chunking and checked object by object against `git cat-file`;
 * packs and indexes written by gitport checked by `git index-pack --strict`, `git verify-pack -v`
 * and `git fsck`; enumeration compared with `git rev-list --objects`.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createPack,
  enumerateObjects,
  FsObjectStore,
  importPack,
  isAncestor,
  MemoryObjectStore,
  mergeBase,
  type ObjectStore,
  openPackSpool,
  PackReader,
} from '@gitport/pack';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { allObjects, chunked, collect, type GitObjectRecord, verifyPackStats } from './helpers.js';

let sandbox: GitSandbox;
let gitDir: string;
let objects: Map<string, GitObjectRecord>;
let refs: Map<string, string>;
const decoder = new TextDecoder();

async function gitPack(dir: string, revs: string, flags: string[]): Promise<Uint8Array> {
  const { stdout } = await sandbox.run(['--git-dir', dir, 'pack-objects', '--revs', '--stdout', '-q', ...flags], {
    input: revs,
  });
  return stdout;
}

async function expectSameObjects(store: ObjectStore, expected: Map<string, GitObjectRecord>, oids: Iterable<string>) {
  let n = 0;
  for (const oid of oids) {
    const want = expected.get(oid);
    expect(want, `git knows ${oid}`).toBeDefined();
    const got = await store.read(oid);
    expect(got?.type).toBe(want!.type);
    expect(Buffer.from(got!.data).equals(Buffer.from(want!.data)), `content of ${oid}`).toBe(true);
    n++;
  }
  return n;
}

async function countKinds(pack: Uint8Array) {
  const counts = { whole: 0, 'ofs-delta': 0, 'ref-delta': 0 };
  const bases: string[] = [];
  const oids = new Set<string>();
  for await (const e of new PackReader([pack]).entries()) {
    counts[e.kind]++;
    if (e.kind === 'ref-delta') bases.push(e.baseOid);
    if (e.kind === 'whole') oids.add(e.oid);
  }
  return { counts, bases, oids };
}

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-pack-');
  const history = await ensureHistory({ commits: 160, seed: 11, largeEvery: 60, largeSize: 300_000 });
  gitDir = history.gitDir;
  objects = await allObjects(sandbox, gitDir);
  refs = new Map();
  const text = await sandbox.git(['--git-dir', gitDir, 'show-ref']);
  for (const line of text.split('\n')) {
    const [oid, name] = line.split(' ');
    refs.set(name!, oid!);
  }
});

afterAll(async () => {
  await sandbox?.cleanup();
});

describe('importing packs written by git', () => {
  it('OFS_DELTA pack over random chunking: every object equals git cat-file', async () => {
    const pack = await gitPack(gitDir, '', ['--all', '--delta-base-offset']);
    const { counts } = await countKinds(pack);
    expect(counts['ofs-delta']).toBeGreaterThan(100);
    for (const seed of [1, 2]) {
      const store = new MemoryObjectStore();
      const result = await importPack(store, chunked(pack, seed));
      expect(new Set(result.objects)).toEqual(new Set(objects.keys()));
      expect(await expectSameObjects(store, objects, result.objects)).toBe(objects.size);
    }
  });

  it('REF_DELTA pack (no --delta-base-offset), including bases after their deltas', async () => {
    const pack = await gitPack(gitDir, '', ['--all', '--no-reuse-delta']);
    const { counts } = await countKinds(pack);
    expect(counts['ref-delta']).toBeGreaterThan(100);
    expect(counts['ofs-delta']).toBe(0);
    const store = new MemoryObjectStore();
    const result = await importPack(store, chunked(pack, 3, 1000));
    expect(await expectSameObjects(store, objects, result.objects)).toBe(objects.size);
  });

  it('stores .pack and an .idx byte-identical to git index-pack; git fsck --strict accepts the repository', async () => {
    const pack = await gitPack(gitDir, '', ['--all', '--delta-base-offset']);
    const repo = sandbox.path('stored.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const store = new FsObjectStore(fs, repo, { packSpool: openPackSpool });
    const { hash } = await importPack(store, chunked(pack, 4));
    await store.close();
    const file = join(repo, 'objects', 'pack', `pack-${hash}`);
    await writeFile(sandbox.path('copy.pack'), await readFile(`${file}.pack`));
    await sandbox.git(['index-pack', '--strict', '-o', sandbox.path('copy.idx'), sandbox.path('copy.pack')]);
    expect(Buffer.compare(await readFile(`${file}.idx`), await readFile(sandbox.path('copy.idx')))).toBe(0);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', refs.get('refs/heads/main')!]);
    await sandbox.git(['--git-dir', repo, 'fsck', '--strict', '--no-dangling']);
    // the store reads what it stored, through the index
    const again = new FsObjectStore(fs, repo);
    expect(await expectSameObjects(again, objects, objects.keys())).toBe(objects.size);
    await again.close();
  });

  it('thin packs: completed from the store (fixThin) into a self-contained pack git accepts', async () => {
    const repo = sandbox.path('thin.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const old = await gitPack(gitDir, 'HEAD~30\n', ['--delta-base-offset']);
    await sandbox.run(['--git-dir', repo, 'index-pack', '--stdin'], { input: old });
    const oldHead = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'HEAD~30']);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', oldHead]);

    const thin = await gitPack(gitDir, 'HEAD\n^HEAD~30\n', ['--thin', '--delta-base-offset']);
    const { bases, oids } = await countKinds(thin);
    const external = bases.filter((b) => !oids.has(b));
    expect(external.length).toBeGreaterThan(0);

    await expect(importPack(new MemoryObjectStore(), chunked(thin, 5))).rejects.toMatchObject({
      code: 'PACK_MISSING_BASE',
    });
    const store = new FsObjectStore(fs, repo, { packSpool: openPackSpool });
    await expect(importPack(store, chunked(thin, 6))).rejects.toMatchObject({ code: 'PACK_MISSING_BASE' });
    const { hash, objects: imported } = await importPack(store, chunked(thin, 6), { fixThin: true });
    await store.close();
    const stored = join(repo, 'objects', 'pack', `pack-${hash}`);
    const verify = await sandbox.git(['verify-pack', '-v', `${stored}.idx`]);
    expect(verify).toContain(': ok');
    // self-contained: git indexes it without --fix-thin (strict checks need the repository's
    // objects for links outside the pack), to the same .idx
    await writeFile(sandbox.path('thin-copy.pack'), await readFile(`${stored}.pack`));
    await sandbox.git([
      '--git-dir',
      repo,
      'index-pack',
      '--strict',
      '-o',
      sandbox.path('thin-copy.idx'),
      sandbox.path('thin-copy.pack'),
    ]);
    expect(Buffer.compare(await readFile(`${stored}.idx`), await readFile(sandbox.path('thin-copy.idx')))).toBe(0);
    expect(verifyPackStats(verify).objects).toBe(imported.length);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', refs.get('refs/heads/main')!]);
    await sandbox.git(['--git-dir', repo, 'fsck', '--strict', '--no-dangling']);
  });

  it('a 5 MB random blob and an edited copy, inflated whole and in pieces', async () => {
    const work = sandbox.path('big');
    await sandbox.git(['init', '-q', work]);
    const blob = randomBytes(5 * 1024 * 1024);
    await writeFile(join(work, 'big.bin'), blob);
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'big'], { cwd: work });
    blob.write('an edit in the middle', 2_500_000);
    await writeFile(join(work, 'big.bin'), blob);
    await sandbox.git(['commit', '-qam', 'edit'], { cwd: work });
    const bigDir = join(work, '.git');
    const pack = await gitPack(bigDir, 'HEAD\n', ['--delta-base-offset', '--window-memory=0']);
    const { counts } = await countKinds(pack);
    expect(counts['ofs-delta']).toBeGreaterThan(0);
    const expected = await allObjects(sandbox, bigDir);
    for (const streamThreshold of [undefined, 256 * 1024]) {
      const store = new MemoryObjectStore();
      const result = await importPack(store, chunked(pack, 7), streamThreshold ? { streamThreshold } : {});
      expect(await expectSameObjects(store, expected, result.objects)).toBe(expected.size);
      // and back out: git accepts our pack, with the edit as a small delta
      const ours = await collect(createPack(store, { wants: [await sandbox.git(['-C', work, 'rev-parse', 'HEAD'])] }));
      expect(ours.length).toBeLessThan(blob.length + 64 * 1024);
      await writeFile(sandbox.path('big-ours.pack'), ours);
      await sandbox.git(['index-pack', '--strict', '-o', sandbox.path('big-ours.idx'), sandbox.path('big-ours.pack')]);
    }
  });
});

describe('packs written by gitport, checked by git', () => {
  const variants: [string, { ofsDelta?: boolean; fromDisk?: boolean; deltas?: boolean }][] = [
    ['computed deltas, OFS_DELTA', {}],
    ['computed deltas, REF_DELTA', { ofsDelta: false }],
    ['no deltas', { deltas: false }],
    ['read from the repository on disk', { fromDisk: true }],
  ];
  it.each(variants)('%s: index-pack --strict, verify-pack -v, fsck', async (name, variant) => {
    let store: ObjectStore;
    let close = async () => {};
    if (variant.fromDisk) {
      const s = new FsObjectStore(fs, gitDir);
      store = s;
      close = () => s.close();
    } else {
      store = new MemoryObjectStore();
      await importPack(store, [await gitPack(gitDir, '', ['--all', '--delta-base-offset'])]);
    }
    const pack = await collect(
      createPack(
        store,
        { wants: [...new Set(refs.values())] },
        {
          ...(variant.ofsDelta === false ? { ofsDelta: false } : {}),
          ...(variant.deltas === false ? { deltas: false } : {}),
        },
      ),
    );
    await close();
    const file = sandbox.path(`ours-${name.replace(/\W+/g, '-')}.pack`);
    await writeFile(file, pack);
    await sandbox.git(['index-pack', '--strict', '-o', file.replace(/\.pack$/, '.idx'), file]);
    const verify = await sandbox.git(['verify-pack', '-v', file.replace(/\.pack$/, '.idx')]);
    const stats = verifyPackStats(verify);
    expect(stats.objects).toBe(objects.size);
    if (variant.deltas === false) expect(stats.deltas).toBe(0);
    else expect(stats.deltas).toBeGreaterThan(objects.size / 4);
    const { counts } = await countKinds(pack);
    if (variant.ofsDelta === false) expect(counts['ofs-delta']).toBe(0);
    // a fresh repository built from our pack alone passes fsck with every ref
    const repo = sandbox.path(`fsck-${name.replace(/\W+/g, '-')}.git`);
    await sandbox.git(['init', '-q', '--bare', repo]);
    await sandbox.run(['--git-dir', repo, 'index-pack', '--stdin', '--strict'], { input: pack });
    for (const [ref, oid] of refs) await sandbox.git(['--git-dir', repo, 'update-ref', ref, oid]);
    await sandbox.git(['--git-dir', repo, 'fsck', '--strict', '--full', '--no-dangling']);
  });
});

describe('reuse from a repository on disk', () => {
  it('all of a stored pack goes out verbatim (git pack reuse)', async () => {
    const store = new FsObjectStore(fs, gitDir);
    const reported: (readonly string[])[] = [];
    const wants = [...new Set(refs.values())];
    const pack = await collect(createPack(store, { wants }, { onStoredPack: (oids) => reported.push(oids) }));
    const dir = join(gitDir, 'objects', 'pack');
    const [name] = (await fs.promises.readdir(dir)).filter((n) => n.endsWith('.pack'));
    expect(Buffer.compare(Buffer.from(pack), await readFile(join(dir, name!)))).toBe(0);
    // the objects of the pack sent as it is are reported, once; a pack written anew reports nothing
    const listed = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', '--all'])).split('\n');
    expect(reported).toHaveLength(1);
    expect(new Set(reported[0])).toEqual(new Set(listed.map((line) => line.slice(0, 40))));
    await collect(createPack(store, { wants }, { reuse: false, onStoredPack: (oids) => reported.push(oids) }));
    expect(reported).toHaveLength(1);
    await store.close();
  });

  it('part of a stored pack: deltas and compressed data reused entry by entry; git fsck accepts', async () => {
    const tip = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'HEAD~20']);
    const store = new FsObjectStore(fs, gitDir);
    const pack = await collect(createPack(store, { wants: [tip] }));
    await store.close();
    const repo = sandbox.path('subset.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const hash = (await sandbox.git(['--git-dir', repo, 'index-pack', '--stdin', '--strict'], { input: pack })).replace(
      /^pack\t/,
      '',
    );
    const verify = await sandbox.git(['verify-pack', '-v', join(repo, 'objects', 'pack', `pack-${hash}.idx`)]);
    const expected = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', tip])).split('\n').length;
    expect(verifyPackStats(verify).objects).toBe(expected);
    expect(verifyPackStats(verify).deltas).toBeGreaterThan(expected / 4);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', tip]);
    await sandbox.git(['--git-dir', repo, 'fsck', '--strict', '--full', '--no-dangling']);
  });
});

describe('thin packs written by gitport', () => {
  it('REF_DELTA against objects the receiver has: git completes them (--fix-thin), and so do we', async () => {
    const work = sandbox.path('thin-src');
    await sandbox.git(['init', '-q', work]);
    const big = randomBytes(300_000);
    await writeFile(join(work, 'big.bin'), big);
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'one'], { cwd: work });
    big.write('small edit', 150_000);
    await writeFile(join(work, 'big.bin'), big);
    await sandbox.git(['commit', '-qam', 'two'], { cwd: work });
    const src = join(work, '.git');
    const head = await sandbox.git(['--git-dir', src, 'rev-parse', 'HEAD']);
    const base = await sandbox.git(['--git-dir', src, 'rev-parse', 'HEAD~1']);
    const store = new FsObjectStore(fs, src);
    const thin = await collect(createPack(store, { wants: [head], haves: [base] }, { thin: true }));
    const full = await collect(createPack(store, { wants: [head], haves: [base] }));
    await store.close();
    const { counts, bases, oids } = await countKinds(thin);
    expect(counts['ref-delta']).toBeGreaterThan(0);
    expect(bases.some((b) => !oids.has(b))).toBe(true);
    expect(thin.length).toBeLessThan(full.length / 10);

    const repo = sandbox.path('thin-dst.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const seed = await gitPack(src, `${base}\n`, ['--delta-base-offset']);
    await sandbox.run(['--git-dir', repo, 'index-pack', '--stdin'], { input: seed });
    const refused = await sandbox.run(['--git-dir', repo, 'index-pack', '--stdin'], {
      input: thin,
      allowFailure: true,
    });
    expect(refused.code).not.toBe(0);
    await sandbox.run(['--git-dir', repo, 'index-pack', '--stdin', '--fix-thin', '--strict'], { input: thin });
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', head]);
    await sandbox.git(['--git-dir', repo, 'fsck', '--strict', '--no-dangling']);

    const ours = new MemoryObjectStore();
    await importPack(ours, [seed]);
    const r = await importPack(ours, [thin], { fixThin: true });
    expect(r.objects).toContain(head);
    expect(decoder.decode((await ours.read(head))!.data)).toContain('two');
  });
});

describe('reachability helpers match git', () => {
  it('mergeBase and isAncestor agree with git merge-base on merges and side branches', async () => {
    const revs = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--all'])).split('\n');
    const store = new FsObjectStore(fs, gitDir);
    const pick = (i: number) => revs[(i * 7919) % revs.length]!;
    const outcomes = new Set<boolean>();
    for (let i = 0; i < 12; i++) {
      const a = pick(i);
      const b = pick(i + 13);
      const git = (await sandbox.run(['--git-dir', gitDir, 'merge-base', '--all', a, b], { allowFailure: true }))
        .stdout;
      const expected = decoder.decode(git).split('\n').filter(Boolean).sort();
      expect((await mergeBase(store, a, b)).sort(), `${a} ${b}`).toEqual(expected);
      const ancestor =
        (await sandbox.run(['--git-dir', gitDir, 'merge-base', '--is-ancestor', a, b], { allowFailure: true })).code ===
        0;
      expect(await isAncestor(store, a, b)).toBe(ancestor);
      outcomes.add(ancestor);
    }
    expect(outcomes.size).toBe(2);
    await store.close();
  });
});

describe('enumeration matches git rev-list --objects', () => {
  const listed = async (args: string[]) =>
    new Set(
      (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', ...args]))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(0, 40)),
    );
  const resolve = (rev: string) => sandbox.git(['--git-dir', gitDir, 'rev-parse', rev]);

  it.each([
    ['HEAD', '^HEAD~7'],
    ['HEAD', '^HEAD~60'],
    ['HEAD~3', '^HEAD~40'],
  ])('%s %s', async (want, have) => {
    const store = new FsObjectStore(fs, gitDir);
    const e = await enumerateObjects(store, { wants: [await resolve(want)], haves: [await resolve(have.slice(1))] });
    await store.close();
    const ours = new Set(e.objects.map((o) => o.oid));
    expect(ours.size).toBe(e.objects.length);
    expect(ours).toEqual(await listed([want, have]));
  });

  it("many haves: only the boundary commits' trees are walked, as git marks its edges", async () => {
    const head = await resolve('HEAD');
    // what a fetching client sends: its tip and many of its ancestors
    const haves = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '-n', '40', 'HEAD~7'])).split('\n');
    const store = new FsObjectStore(fs, gitDir);
    const e = await enumerateObjects(store, { wants: [head], haves, edges: true, edgeCommits: 1 });
    await store.close();
    expect(new Set(e.objects.map((o) => o.oid))).toEqual(await listed([head, ...haves.map((h) => `^${h}`)]));
    const boundary = (
      await sandbox.git(['--git-dir', gitDir, 'rev-list', '--boundary', head, ...haves.map((h) => `^${h}`)])
    )
      .split('\n')
      .filter((l) => l.startsWith('-'))
      .map((l) => l.slice(1));
    expect(new Set(e.boundary)).toEqual(new Set(boundary));
    expect(e.boundary.length).toBeLessThan(haves.length);
    // the receiver has every tree and blob of the boundary commits, and edges come from the first one only
    const treesOf = async (commits: string[]) => {
      const all = await listed(['--no-walk', ...commits]);
      for (const c of commits) all.delete(c);
      return all;
    };
    const uninteresting = await treesOf(boundary);
    expect(e.uninteresting.size).toBe(uninteresting.size);
    for (const oid of uninteresting) expect(e.uninteresting.has(oid)).toBe(true);
    expect(new Set(e.edges.map((o) => o.oid))).toEqual(await treesOf([e.boundary[0]!]));
  });

  it('--all with annotated tags', async () => {
    const store = new FsObjectStore(fs, gitDir);
    const e = await enumerateObjects(store, { wants: [...refs.values()] });
    await store.close();
    const ours = new Set(e.objects.map((o) => o.oid));
    expect(ours).toEqual(await listed(['--all']));
    expect(e.objects.some((o) => o.type === 'tag')).toBe(true);
  });

  it('include-tag adds annotated tags pointing at sent commits only', async () => {
    const tagRefs = [...refs].filter(([name]) => name.startsWith('refs/tags/'));
    const annotated: string[] = [];
    for (const [, oid] of tagRefs) {
      if ((await sandbox.git(['--git-dir', gitDir, 'cat-file', '-t', oid])) === 'tag') annotated.push(oid);
    }
    expect(annotated.length).toBeGreaterThan(0);
    const store = new FsObjectStore(fs, gitDir);
    const head = await resolve('HEAD');
    const withTags = await enumerateObjects(store, { wants: [head], tags: annotated });
    const without = await enumerateObjects(store, { wants: [head] });
    await store.close();
    const added = withTags.objects.filter((o) => o.type === 'tag').map((o) => o.oid);
    expect(without.objects.some((o) => o.type === 'tag')).toBe(false);
    for (const t of annotated) {
      const target = await sandbox.git(['--git-dir', gitDir, 'rev-parse', `${t}^{}`]);
      const reachable =
        (await sandbox.run(['--git-dir', gitDir, 'merge-base', '--is-ancestor', target, head], { allowFailure: true }))
          .code === 0;
      expect(added.includes(t)).toBe(reachable);
    }
  });

  it('shallow commits: their parents are not walked', async () => {
    const store = new FsObjectStore(fs, gitDir);
    const head = await resolve('HEAD');
    const first = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--first-parent', '-n', '3', 'HEAD'])).split(
      '\n',
    );
    const e = await enumerateObjects(store, { wants: [head], shallow: [first[2]!] });
    await store.close();
    const commits = e.objects.filter((o) => o.type === 'commit').map((o) => o.oid);
    expect(commits).toContain(first[2]);
    const expected = new Set(
      (await sandbox.git(['--git-dir', gitDir, 'rev-list', 'HEAD', `^${first[2]}~1`])).split('\n').filter(Boolean),
    );
    // everything reachable without crossing the shallow commit's parents
    expect(new Set(commits)).toEqual(expected);
    void decoder;
  });
});
