import { mkdir, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FsPromisesLike } from './fs.js';
import { nodeFs } from './fs.node.js';
import { FsRefStore } from './fs-ref-store.js';
import { MemoryFs } from './memory-fs.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

/**
 * A work repository of three commits, written by real git: `light` (and, when asked, the annotated
 * `v1`), `main` and `feature/x` packed, `loose` left a loose file.
 */
async function workRepository(
  sandbox: GitSandbox,
  options: { annotatedTag: boolean },
): Promise<{ gitDir: string; commits: string[] }> {
  await sandbox.git(['init', '-q', 'work']);
  const cwd = sandbox.path('work');
  const commits: string[] = [];
  for (const n of [1, 2, 3]) {
    await writeFile(sandbox.path('work', 'f.txt'), `line ${n}\n`);
    await sandbox.git(['add', '.'], { cwd });
    await sandbox.git(['commit', '-qm', `c${n}`], { cwd });
    commits.push(await sandbox.git(['rev-parse', 'HEAD'], { cwd }));
  }
  if (options.annotatedTag) await sandbox.git(['tag', '-a', '-m', 'annotated', 'v1', commits[0]!], { cwd });
  await sandbox.git(['tag', 'light', commits[1]!], { cwd });
  await sandbox.git(['branch', 'feature/x', commits[1]!], { cwd });
  await sandbox.git(['pack-refs', '--all'], { cwd });
  await sandbox.git(['branch', 'loose', commits[2]!], { cwd });
  return { gitDir: sandbox.path('work', '.git'), commits };
}

describe('FsRefStore on a repository real git writes and reads', () => {
  let sandbox: GitSandbox;
  let gitDir: string;
  let commits: string[];

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-refs-');
    ({ gitDir, commits } = await workRepository(sandbox, { annotatedTag: true }));
  });
  afterEach(() => sandbox.cleanup());

  /** The lock files under `dir`. */
  const lockFiles = async (dir: string) =>
    (await readdir(dir, { recursive: true })).filter((path) => path.endsWith('.lock'));

  /** A new bare repository that borrows the work repository's objects, and its ref store. */
  const emptyRepository = async (name: string) => {
    const dir = sandbox.path(name);
    await sandbox.git(['init', '-q', '--bare', dir]);
    await writeFile(`${dir}/objects/info/alternates`, `${gitDir}/objects\n`);
    return { dir, refs: new FsRefStore(nodeFs(), dir) };
  };

  const forEachRef = async () => {
    const out = await sandbox.git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: sandbox.path('work') });
    return out.split('\n').map((line) => {
      const [oid, name] = line.split(' ');
      return { name: name!, oid: oid! };
    });
  };

  it('lists loose and packed refs exactly as git for-each-ref does, and reads peeled tags', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    expect(await refs.list()).toEqual(await forEachRef());
    expect(await refs.list('refs/heads/')).toEqual(
      (await forEachRef()).filter((r) => r.name.startsWith('refs/heads/')),
    );
    expect(await refs.read('HEAD')).toEqual({ kind: 'symbolic', target: 'refs/heads/main' });
    expect(await refs.resolve('HEAD')).toBe(commits[2]);
    expect(await refs.peeled('refs/tags/v1')).toBe(commits[0]);
    expect(await refs.read('refs/heads/nope')).toEqual({ kind: 'missing' });
  });

  it('lists the same with and without a typed listing; with one, no directory is read as a file', async () => {
    const plain = nodeFs();
    const { readdirTypes: _, ...untyped } = plain.promises;
    const reads: string[] = [];
    const typed = {
      ...plain.promises,
      readFile: (path: string, options?: unknown) => {
        reads.push(path.slice(gitDir.length + 1));
        return plain.promises.readFile(path, options);
      },
    };
    await writeFile(`${gitDir}/refs/heads/not..valid`, `${commits[0]}\n`);
    const expected = await forEachRef();
    expect(await new FsRefStore(untyped, gitDir).list()).toEqual(expected);
    expect(await new FsRefStore(typed, gitDir).list()).toEqual(expected);
    // the loose refs only: never refs/heads or refs/tags (EISDIR), nor the invalid name
    expect(reads.filter((r) => r !== 'packed-refs')).toEqual(['refs/heads/loose']);
  });

  it('compare-and-swap updates that git agrees with, including deleting a packed ref', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const results = await refs.update([
      { name: 'refs/heads/main', old: commits[2]!, new: commits[1]! },
      { name: 'refs/heads/new', old: null, new: commits[0]! },
      { name: 'refs/heads/feature/x', old: commits[1]!, new: null },
      { name: 'refs/tags/light', old: commits[0]!, new: null },
    ]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'rejected']);
    expect(results[3]).toMatchObject({ reason: 'stale' });
    const cwd = sandbox.path('work');
    expect(await sandbox.git(['rev-parse', 'main'], { cwd })).toBe(commits[1]);
    expect(await sandbox.git(['rev-parse', 'new'], { cwd })).toBe(commits[0]);
    const missing = await sandbox.run(['rev-parse', '--verify', '-q', 'refs/heads/feature/x'], {
      cwd,
      allowFailure: true,
    });
    expect(missing.code).not.toBe(0);
    expect(await refs.list()).toEqual(await forEachRef());
    await sandbox.git(['fsck', '--full', '--strict'], { cwd });
    expect(await lockFiles(gitDir)).toEqual([]);
  });

  it('atomic transactions apply all or nothing', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const results = await refs.update(
      [
        { name: 'refs/heads/main', old: commits[2]!, new: commits[0]! },
        { name: 'refs/heads/loose', old: commits[0]!, new: commits[1]! },
      ],
      { atomic: true },
    );
    expect(results.map((r) => r.status === 'rejected' && r.reason)).toEqual(['atomic', 'stale']);
    expect(await refs.resolve('refs/heads/main')).toBe(commits[2]);
    expect(await refs.list()).toEqual(await forEachRef());
  });

  it('respects a lock file held by another writer (such as git) and leaves it alone', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    await writeFile(`${gitDir}/refs/heads/main.lock`, '');
    const [result] = await refs.update([{ name: 'refs/heads/main', new: commits[0]! }]);
    // refused, and the message names the lock (and says it may be stale)
    expect(result).toMatchObject({ status: 'rejected', reason: 'locked' });
    expect(result?.status === 'rejected' && result.message).toMatch(/refs\/heads\/main\.lock exists.*stale/);
    expect(await lockFiles(gitDir)).toEqual(['refs/heads/main.lock']);
    expect(await refs.resolve('refs/heads/main')).toBe(commits[2]);
    const git = await sandbox.run(['update-ref', 'refs/heads/main', commits[0]!], {
      cwd: sandbox.path('work'),
      allowFailure: true,
    });
    expect(git.code).not.toBe(0);
  });

  it('revalidates its packed-refs cache when git changes the repository', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const cwd = sandbox.path('work');
    expect(await refs.resolve('refs/heads/loose')).toBe(commits[2]);
    await sandbox.git(['pack-refs', '--all'], { cwd });
    await sandbox.git(['update-ref', '-d', 'refs/tags/light'], { cwd });
    await sandbox.git(['update-ref', 'refs/heads/feature/x', commits[2]!], { cwd });
    expect(await refs.list()).toEqual(await forEachRef());
    expect(await refs.resolve('refs/heads/feature/x')).toBe(commits[2]);
  });

  it('initialize writes the refs of a new repository as one packed-refs file that git reads, and only there', async () => {
    const { dir: fresh, refs } = await emptyRepository('fresh.git');
    const wanted = [
      { name: 'refs/tags/v1', oid: await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'refs/tags/v1']) },
      { name: 'refs/heads/main', oid: commits[2]! },
      { name: 'refs/heads/feature/x', oid: commits[1]! },
    ];
    // clashing, repeated or invalid names: nothing written, the caller goes through update()
    expect(await refs.initialize([...wanted, { name: 'refs/heads/main/sub', oid: commits[0]! }])).toBe(false);
    expect(await refs.initialize([wanted[1]!, wanted[1]!])).toBe(false);
    expect(await refs.initialize([{ name: 'HEAD', oid: commits[0]! }])).toBe(false);
    expect(await refs.list()).toEqual([]);
    expect(await refs.initialize(wanted)).toBe(true);
    const listed = await sandbox.git(['--git-dir', fresh, 'for-each-ref', '--format=%(objectname) %(refname)']);
    expect(await refs.list()).toEqual(
      listed.split('\n').map((l) => ({ oid: l.split(' ')[0]!, name: l.split(' ')[1]! })),
    );
    expect(await refs.list()).toEqual([...wanted].sort((a, b) => (a.name < b.name ? -1 : 1)));
    expect(await sandbox.git(['--git-dir', fresh, 'rev-parse', 'v1^{commit}'])).toBe(commits[0]);
    expect((await sandbox.exec('sh', ['-c', `find ${fresh}/refs -type f`])).stdout.byteLength).toBe(0);
    // a store that holds refs is left as it is
    expect(await refs.initialize([{ name: 'refs/heads/other', oid: commits[0]! }])).toBe(false);
    expect(await refs.read('refs/heads/other')).toEqual({ kind: 'missing' });
    expect(await new FsRefStore(nodeFs(), gitDir).initialize([{ name: 'refs/heads/x', oid: commits[0]! }])).toBe(false);
    await sandbox.git(['--git-dir', fresh, 'fsck', '--full', '--strict']);
    expect(await lockFiles(fresh)).toEqual([]);
  });

  it('prepareInitialize holds packed-refs.lock (git waits on it) and shows the refs only at commit; abort leaves nothing', async () => {
    const { dir: fresh, refs } = await emptyRepository('prepared.git');
    const wanted = [
      { name: 'refs/heads/main', oid: commits[2]! },
      { name: 'refs/heads/feature/x', oid: commits[1]! },
    ];
    const forEachRefIn = (dir: string) => sandbox.git(['--git-dir', dir, 'for-each-ref', '--format=%(refname)']);

    // given up: the lock goes, nothing was written, a later prepare can claim it again
    const dropped = await refs.prepareInitialize(wanted);
    expect(dropped).toBeDefined();
    await dropped!.abort();
    await dropped!.abort();
    await expect(dropped!.commit()).rejects.toMatchObject({ code: 'REF_LOCKED' });
    expect(await lockFiles(fresh)).toEqual([]);
    expect(await forEachRefIn(fresh)).toBe('');

    const prepared = await refs.prepareInitialize(wanted);
    expect(prepared).toBeDefined();
    // claimed, not visible: git sees no refs, and its own packed-refs writers wait on the lock
    expect(await lockFiles(fresh)).toEqual(['packed-refs.lock']);
    expect(await refs.list()).toEqual([]);
    expect(await forEachRefIn(fresh)).toBe('');
    await expect(sandbox.git(['--git-dir', fresh, 'pack-refs', '--all'])).rejects.toThrow(/packed-refs\.lock/);
    expect(await refs.prepareInitialize([{ name: 'refs/heads/other', oid: commits[0]! }])).toBeUndefined();
    expect(await prepared!.commit()).toBe(true);
    expect(await prepared!.commit()).toBe(true);
    expect(await forEachRefIn(fresh)).toBe('refs/heads/feature/x\nrefs/heads/main');
    expect(await refs.list()).toEqual([...wanted].sort((a, b) => (a.name < b.name ? -1 : 1)));
    // a store that holds refs is refused, and keeps no lock
    expect(await refs.prepareInitialize([{ name: 'refs/heads/other', oid: commits[0]! }])).toBeUndefined();
    expect(await lockFiles(fresh)).toEqual([]);
    await sandbox.git(['--git-dir', fresh, 'fsck', '--full', '--strict']);

    // a loose ref written while the claim is held (git update-ref takes no packed-refs.lock):
    // the commit writes nothing, says so, and releases the claim
    const { dir: raced, refs: racedRefs } = await emptyRepository('raced.git');
    const claim = await racedRefs.prepareInitialize(wanted);
    await sandbox.git(['--git-dir', raced, 'update-ref', 'refs/heads/main', commits[0]!]);
    expect(await claim!.commit()).toBe(false);
    expect(await forEachRefIn(raced)).toBe('refs/heads/main');
    expect(await racedRefs.resolve('refs/heads/main')).toBe(commits[0]);
    expect(await lockFiles(raced)).toEqual([]);
    await expect(claim!.commit()).rejects.toMatchObject({ code: 'REF_LOCKED' });
  });

  it('refuses invalid names and directory/file conflicts', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const results = await refs.update([
      { name: 'refs/heads/bad..name', new: A },
      { name: 'HEAD', new: A },
      { name: 'refs/heads/feature', old: null, new: commits[0]! },
      { name: 'refs/heads/loose/sub', old: null, new: commits[0]! },
      { name: 'refs/heads/ok', new: 'not-an-oid' },
    ]);
    expect(results.map((r) => r.status === 'rejected' && r.reason)).toEqual([
      'invalid-name',
      'invalid-name',
      'invalid-name',
      'invalid-name',
      'invalid-name',
    ]);
    expect(await refs.list()).toEqual(await forEachRef());
  });
});

describe('FsRefStore: directory/file clashes, failures, atomic rollback and stale locks', () => {
  let sandbox: GitSandbox;
  let gitDir: string;
  let commits: string[];

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-refs-faults-');
    ({ gitDir, commits } = await workRepository(sandbox, { annotatedTag: false }));
  });
  afterEach(() => sandbox.cleanup());

  const forEachRef = () => sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)']);
  /** Lock and temporary files left anywhere in the git directory. */
  const leftovers = async () =>
    (await readdir(gitDir, { recursive: true })).filter((p) => p.endsWith('.lock') || /(^|\/)\.tmp-/.test(p));
  const exists = async (path: string) => (await stat(`${gitDir}/${path}`).catch(() => undefined)) !== undefined;
  const statuses = (results: Awaited<ReturnType<FsRefStore['update']>>) =>
    results.map((r) => (r.status === 'ok' ? 'ok' : r.reason));
  const messages = (results: Awaited<ReturnType<FsRefStore['update']>>) =>
    results.map((r) => (r.status === 'rejected' ? r.message : ''));

  /** Node's fs with `fail(call, path)` deciding which calls throw an error of a given code. */
  const faultyFs = (fail: (call: 'open' | 'rename', path: string) => string | undefined) => {
    const plain = nodeFs().promises;
    const error = (code: string, path: string) => Object.assign(new Error(`${code}: failed, '${path}'`), { code });
    const faulty: FsPromisesLike = {
      ...plain,
      open: async (path, flags) => {
        const code = fail('open', path);
        if (code) throw error(code, path);
        return plain.open!(path, flags);
      },
      rename: async (from, to) => {
        const code = fail('rename', to);
        if (code) throw error(code, to);
        return plain.rename!(from, to);
      },
    };
    return faulty;
  };

  it('a refused clash with a packed ref leaves no directory behind, and that ref still updates', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const refused = await refs.update([
      { name: 'refs/heads/main/x', old: null, new: commits[0]! },
      { name: 'refs/heads/feature/x/deeper/y', old: null, new: commits[0]! },
    ]);
    expect(statuses(refused)).toEqual(['invalid-name', 'invalid-name']);
    expect(messages(refused)[0]).toMatch(/refs\/heads\/main exists/);
    expect(await exists('refs/heads/main')).toBe(false);
    expect(await exists('refs/heads/feature/x')).toBe(false);
    const [moved] = await refs.update([{ name: 'refs/heads/main', old: commits[2]!, new: commits[0]! }]);
    expect(moved?.status).toBe('ok');
    expect(await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'refs/heads/main'])).toBe(commits[0]);
    expect(await leftovers()).toEqual([]);
  });

  it('an empty directory where a ref belongs is no clash; a deleted ref leaves no empty directory', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    await sandbox.git(['--git-dir', gitDir, 'update-ref', 'refs/heads/nest/x', commits[0]!]);
    expect(statuses(await refs.update([{ name: 'refs/heads/nest/x', old: commits[0]!, new: null }]))).toEqual(['ok']);
    expect(await exists('refs/heads/nest')).toBe(false);
    expect(await exists('refs/heads')).toBe(true);
    expect(statuses(await refs.update([{ name: 'refs/heads/nest', old: null, new: commits[1]! }]))).toEqual(['ok']);
    // empty directories made by anyone else: removed, as git does
    await mkdir(`${gitDir}/refs/heads/hollow/a/b`, { recursive: true });
    await mkdir(`${gitDir}/refs/heads/main/empty`, { recursive: true });
    const results = await refs.update([
      { name: 'refs/heads/hollow', old: null, new: commits[2]! },
      { name: 'refs/heads/main', old: commits[2]!, new: commits[1]! },
    ]);
    expect(statuses(results)).toEqual(['ok', 'ok']);
    // a directory holding a ref is a clash
    await sandbox.git(['--git-dir', gitDir, 'update-ref', 'refs/heads/full/x', commits[0]!]);
    const [full] = await refs.update([{ name: 'refs/heads/full', old: null, new: commits[0]! }]);
    expect(full).toMatchObject({ status: 'rejected', reason: 'invalid-name' });
    expect(await forEachRef()).toBe(
      [
        `${commits[1]} refs/heads/feature/x`,
        `${commits[0]} refs/heads/full/x`,
        `${commits[2]} refs/heads/hollow`,
        `${commits[2]} refs/heads/loose`,
        `${commits[1]} refs/heads/main`,
        `${commits[1]} refs/heads/nest`,
        `${commits[1]} refs/tags/light`,
      ].join('\n'),
    );
    expect(await refs.list()).toHaveLength(7);
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--strict']);
  });

  it('an atomic batch whose fs fails in the middle puts back every ref it moved', async () => {
    const before = await forEachRef();
    const refs = new FsRefStore(
      faultyFs((call, path) => (call === 'rename' && path === `${gitDir}/refs/heads/loose` ? 'EACCES' : undefined)),
      gitDir,
    );
    const results = await refs.update(
      [
        { name: 'refs/heads/main', old: commits[2]!, new: commits[0]! },
        { name: 'refs/heads/created', old: null, new: commits[0]! },
        { name: 'refs/heads/feature/x', old: commits[1]!, new: null },
        { name: 'refs/tags/light', old: commits[1]!, new: null },
        { name: 'refs/heads/loose', old: commits[2]!, new: commits[1]! },
        { name: 'refs/heads/zz', old: null, new: commits[1]! },
      ],
      { atomic: true },
    );
    expect(statuses(results)).toEqual(['atomic', 'atomic', 'atomic', 'atomic', 'failed', 'atomic']);
    expect(messages(results)[4]).toMatch(/^cannot update ref refs\/heads\/loose: EACCES/);
    expect(messages(results)[4]).not.toContain(gitDir);
    expect(await forEachRef()).toBe(before);
    expect(await refs.list()).toEqual(before.split('\n').map((l) => ({ oid: l.slice(0, 40), name: l.slice(41) })));
    expect(await leftovers()).toEqual([]);
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--strict']);
    // without the fault, the same batch applies whole
    const again = await new FsRefStore(nodeFs(), gitDir).update(
      [
        { name: 'refs/heads/main', old: commits[2]!, new: commits[0]! },
        { name: 'refs/heads/feature/x', old: commits[1]!, new: null },
        { name: 'refs/heads/loose', old: commits[2]!, new: commits[1]! },
      ],
      { atomic: true },
    );
    expect(statuses(again)).toEqual(['ok', 'ok', 'ok']);
    expect(await forEachRef()).toBe(
      [`${commits[1]} refs/heads/loose`, `${commits[0]} refs/heads/main`, `${commits[1]} refs/tags/light`].join('\n'),
    );
    expect(await leftovers()).toEqual([]);
  });

  it('an atomic batch with a directory in the way or a lock held moves no ref', async () => {
    const before = await forEachRef();
    const refs = new FsRefStore(nodeFs(), gitDir);
    // a loose ref under a packed one's name (a repository in a state git itself would refuse to make)
    await mkdir(`${gitDir}/refs/heads/main`);
    await writeFile(`${gitDir}/refs/heads/main/stray`, `${commits[0]}\n`);
    const results = await refs.update(
      [
        { name: 'refs/heads/a-new', old: null, new: commits[0]! },
        { name: 'refs/heads/main', old: commits[2]!, new: commits[0]! },
      ],
      { atomic: true },
    );
    expect(statuses(results)).toEqual(['atomic', 'invalid-name']);
    await writeFile(`${gitDir}/refs/heads/zz.lock`, '');
    const locked = await refs.update(
      [
        { name: 'refs/heads/a-new', old: null, new: commits[0]! },
        { name: 'refs/heads/zz', old: null, new: commits[0]! },
      ],
      { atomic: true },
    );
    expect(statuses(locked)).toEqual(['atomic', 'locked']);
    const expected = [...before.split('\n'), `${commits[0]} refs/heads/main/stray`];
    expect((await forEachRef()).split('\n')).toEqual(expected.sort((a, b) => (a.slice(41) < b.slice(41) ? -1 : 1)));
    expect(await leftovers()).toEqual(['refs/heads/zz.lock']);
  });

  it('a failure of one ref is a rejection with a message, not an exception', async () => {
    const refs = new FsRefStore(
      faultyFs((call, path) => {
        if (call === 'open' && path.endsWith('/refs/heads/too-long.lock')) return 'ENAMETOOLONG';
        if (call === 'open' && path.endsWith('/refs/heads/denied.lock')) return 'EACCES';
        if (call === 'rename' && path.endsWith('/refs/heads/broken')) return 'EIO';
        return undefined;
      }),
      gitDir,
    );
    await writeFile(`${gitDir}/refs/heads/corrupt`, 'not an object id\n');
    const results = await refs.update([
      { name: 'refs/heads/too-long', old: null, new: commits[0]! },
      { name: 'refs/heads/denied', old: null, new: commits[0]! },
      { name: 'refs/heads/broken', old: null, new: commits[0]! },
      { name: 'refs/heads/corrupt', new: commits[0]! },
      { name: 'refs/heads/fine', old: null, new: commits[0]! },
    ]);
    expect(statuses(results)).toEqual(['failed', 'failed', 'failed', 'failed', 'ok']);
    const text = messages(results);
    expect(text[0]).toMatch(/cannot lock ref refs\/heads\/too-long: ENAMETOOLONG/);
    expect(text[1]).toMatch(/cannot lock ref refs\/heads\/denied: EACCES/);
    expect(text[2]).toMatch(/cannot update ref refs\/heads\/broken: EIO/);
    expect(text[3]).toMatch(/cannot read ref refs\/heads\/corrupt: .*not an object id/);
    for (const message of text) expect(message).not.toContain(gitDir);
    expect(await refs.resolve('refs/heads/fine')).toBe(commits[0]);
    expect(await exists('refs/heads/broken')).toBe(false);
    expect(await leftovers()).toEqual([]);
  });

  it('a lock left by a crash is broken once older than the bound; a younger one is named in the refusal', async () => {
    const refs = new FsRefStore(nodeFs(), gitDir);
    const old = new Date(Date.now() - 11 * 60 * 1000);
    await writeFile(`${gitDir}/refs/heads/main.lock`, '');
    await utimes(`${gitDir}/refs/heads/main.lock`, old, old);
    await writeFile(`${gitDir}/refs/heads/loose.lock`, '');
    const results = await refs.update([
      { name: 'refs/heads/main', old: commits[2]!, new: commits[0]! },
      { name: 'refs/heads/loose', old: commits[2]!, new: commits[0]! },
    ]);
    expect(statuses(results)).toEqual(['ok', 'locked']);
    expect(messages(results)[1]).toBe(
      'cannot lock ref refs/heads/loose: refs/heads/loose.lock exists; another update holds it, or one that crashed left it (then it is stale, and is removed once older than 10 min)',
    );
    expect(await leftovers()).toEqual(['refs/heads/loose.lock']);
    // the bound is an option
    const recent = new Date(Date.now() - 5 * 60 * 1000);
    await utimes(`${gitDir}/refs/heads/loose.lock`, recent, recent);
    const strict = new FsRefStore(nodeFs(), gitDir, { staleAfterMs: 60 * 1000 });
    expect(statuses(await strict.update([{ name: 'refs/heads/loose', old: commits[2]!, new: commits[1]! }]))).toEqual([
      'ok',
    ]);
    // packed-refs.lock, which a delete of a packed ref needs: the same
    await writeFile(`${gitDir}/packed-refs.lock`, '');
    const [held] = await refs.update([{ name: 'refs/tags/light', old: commits[1]!, new: null }]);
    expect(held).toMatchObject({ status: 'rejected', reason: 'locked' });
    expect(held?.status === 'rejected' && held.message).toMatch(/packed-refs\.lock exists/);
    await utimes(`${gitDir}/packed-refs.lock`, old, old);
    expect(statuses(await refs.update([{ name: 'refs/tags/light', old: commits[1]!, new: null }]))).toEqual(['ok']);
    expect(await forEachRef()).toBe(
      [`${commits[1]} refs/heads/feature/x`, `${commits[1]} refs/heads/loose`, `${commits[0]} refs/heads/main`].join(
        '\n',
      ),
    );
    expect(await leftovers()).toEqual([]);
  });
});

describe('FsRefStore over the memory fs', () => {
  const setup = async () => {
    const fs = new MemoryFs();
    await fs.promises.mkdir('/r');
    const refs = new FsRefStore(fs, '/r');
    await refs.setSymbolic('HEAD', 'refs/heads/main');
    return { fs, refs };
  };

  it('concurrent compare-and-swap on one ref: exactly one wins', async () => {
    const { refs } = await setup();
    await refs.update([{ name: 'refs/heads/main', old: null, new: A }]);
    for (let round = 0; round < 20; round++) {
      const current = (await refs.resolve('refs/heads/main'))!;
      const next = [B, C, A].filter((x) => x !== current);
      const results = await Promise.all(
        next.map((oid) => refs.update([{ name: 'refs/heads/main', old: current, new: oid }])),
      );
      const winners = results.flat().filter((r) => r.status === 'ok');
      expect(winners).toHaveLength(1);
      expect(await refs.resolve('refs/heads/main')).toBe(winners[0]!.status === 'ok' && winners[0]!.new);
    }
  });

  it('reads what it wrote: symbolic HEAD, create, delete, sorted listing', async () => {
    const { fs, refs } = await setup();
    expect(await refs.resolve('HEAD')).toBeUndefined();
    await refs.update([
      { name: 'refs/heads/b', old: null, new: B },
      { name: 'refs/heads/a', old: null, new: A },
      { name: 'refs/tags/t', old: null, new: C },
    ]);
    expect(await refs.list()).toEqual([
      { name: 'refs/heads/a', oid: A },
      { name: 'refs/heads/b', oid: B },
      { name: 'refs/tags/t', oid: C },
    ]);
    expect(await refs.list('refs/tags/')).toEqual([{ name: 'refs/tags/t', oid: C }]);
    await refs.update([{ name: 'refs/heads/a', old: A, new: null }]);
    expect(await refs.read('refs/heads/a')).toEqual({ kind: 'missing' });
    expect(new TextDecoder().decode((await fs.promises.readFile('/r/HEAD')) as Uint8Array)).toBe(
      'ref: refs/heads/main\n',
    );
  });

  it('reports a corrupt ref with a typed error', async () => {
    const { fs, refs } = await setup();
    await fs.promises.mkdir('/r/refs');
    await fs.promises.mkdir('/r/refs/heads');
    await fs.promises.writeFile('/r/refs/heads/main', 'garbage\n');
    await expect(refs.resolve('HEAD')).rejects.toMatchObject({ code: 'REF_CORRUPT' });
  });
});
