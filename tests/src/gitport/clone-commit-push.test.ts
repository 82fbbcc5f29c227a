/**
 * What a new user of gitport does first, checked by real git: a non-bare clone (gitport's own
 * checkout: no Buffer, executable bits, symbolic links, submodule entries, an index git agrees
 * with, `origin` set up as `git clone` does), commits made with `commit`, pushes that fail
 * loudly, and errors of one family with codes that say what went wrong.
 */
import { mkdir, readFile as readDiskFile, readdir, readlink, stat, writeFile } from 'node:fs/promises';
import { serializeCommit, serializeTree } from '@gitport/pack';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import {
  commit,
  FsRepositoryRegistry,
  type GitRepository,
  host,
  httpClient,
  initRepository,
  isGitportError,
  listFiles,
  MemoryFs,
  openRepository,
  readFile,
  remote,
  staticRepositories,
} from 'gitport';
import { nodeFs } from 'gitport/node';
import git from 'isomorphic-git';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { connectedBuses } from './helpers.js';

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));
const ada = { name: 'Ada', email: 'ada@example.com', timestamp: 1_700_000_000, timezoneOffset: 60 };

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string; data?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

describe('clone, commit and push as a new user meets them', () => {
  let sandbox: GitSandbox;
  let buses: Awaited<ReturnType<typeof connectedBuses>>;
  let served: { close(): void };
  let source: string;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-ccp-');
    // a repository with what a checkout must get right: nested files, an executable, a
    // symbolic link, a submodule entry, a second branch and a tag
    const work = sandbox.path('make');
    await mkdir(`${work}/docs/deep`, { recursive: true });
    await sandbox.git(['init', '-q', work]);
    await writeFile(`${work}/README.md`, '# demo\n');
    await writeFile(`${work}/docs/deep/guide.txt`, 'guide\n');
    await writeFile(`${work}/run.sh`, '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git([
      '-C',
      work,
      'update-index',
      '--add',
      '--cacheinfo',
      '120000',
      await blob(work, 'docs/deep/guide.txt'),
      'link',
    ]);
    await sandbox.git(['-C', work, 'update-index', '--add', '--cacheinfo', '160000', '1'.repeat(40), 'vendor/sub']);
    await sandbox.git(['-C', work, 'commit', '-q', '-m', 'first']);
    await sandbox.git(['-C', work, 'branch', 'other']);
    await sandbox.git(['-C', work, 'tag', 'v1']);
    source = sandbox.path('root', 'demo.git');
    await sandbox.git(['clone', '-q', '--bare', work, source]);
    buses = await connectedBuses('host', 'client');
    served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
  });
  afterEach(async () => {
    served.close();
    buses.close();
    await sandbox.cleanup();
  });

  /** A blob holding the symbolic link's target. */
  async function blob(work: string, target: string): Promise<string> {
    return sandbox.git(['-C', work, 'hash-object', '-w', '--stdin'], { input: target });
  }

  it('a non-bare clone checks out like git: git status and diff are clean, modes and links kept', async () => {
    const dir = sandbox.path('work');
    await remote(buses.right, 'host', 'demo').clone(nodeFs(), dir, { bare: false });
    expect(await sandbox.git(['status', '--porcelain'], { cwd: dir })).toBe('');
    expect(await sandbox.git(['diff', '--stat'], { cwd: dir })).toBe('');
    // git diff-files compares the index's stat data without refreshing it: the index is right
    expect(await sandbox.git(['diff-files', '--name-only'], { cwd: dir })).toBe('');
    expect(await sandbox.git(['ls-files', '-s'], { cwd: dir })).toBe(
      await sandbox.git(['ls-tree', '-r', 'HEAD'], { cwd: source }).then(lsTreeAsLsFiles),
    );
    expect((await stat(`${dir}/run.sh`)).mode & 0o111).not.toBe(0);
    expect((await stat(`${dir}/README.md`)).mode & 0o111).toBe(0);
    expect(await readlink(`${dir}/link`)).toBe('docs/deep/guide.txt');
    expect((await stat(`${dir}/vendor/sub`)).isDirectory()).toBe(true);
    expect(await readDiskFile(`${dir}/docs/deep/guide.txt`, 'utf8')).toBe('guide\n');
    await sandbox.git(['fsck', '--strict'], { cwd: dir });
  });

  it('a bare clone records remote.origin.url as git clone --bare does, and real git fetches from it', async () => {
    const dir = sandbox.path('bare.git');
    await remote(buses.right, 'host', 'demo').clone(nodeFs(), dir, { url: source });
    expect(await sandbox.git(['--git-dir', dir, 'config', 'remote.origin.url'])).toBe(source);
    expect(await sandbox.git(['--git-dir', dir, 'config', 'core.bare'])).toBe('true');
    expect(await sandbox.git(['--git-dir', dir, 'config', '--get-regexp', '^remote\\.'])).toBe(
      `remote.origin.url ${source}`,
    );
    await sandbox.git(['--git-dir', dir, 'fetch', '-q', 'origin', '+refs/heads/*:refs/heads/*']);
    await sandbox.git(['--git-dir', dir, 'fsck', '--strict']);
    const defaultUrl = sandbox.path('default.git');
    await remote(buses.right, 'host', 'demo').clone(nodeFs(), defaultUrl);
    expect(await sandbox.git(['--git-dir', defaultUrl, 'config', 'remote.origin.url'])).toBe(
      'http://host.gitport/demo.git',
    );
  });

  it('a non-bare clone sets up origin as git clone does: real git pulls and pushes to it', async () => {
    const dir = sandbox.path('work');
    const repo = await remote(buses.right, 'host', 'demo').clone(nodeFs(), dir, { bare: false, url: source });
    expect(await sandbox.git(['config', 'remote.origin.url'], { cwd: dir })).toBe(source);
    expect(await sandbox.git(['config', 'remote.origin.fetch'], { cwd: dir })).toBe(
      '+refs/heads/*:refs/remotes/origin/*',
    );
    expect(await sandbox.git(['config', 'branch.main.remote'], { cwd: dir })).toBe('origin');
    expect(await sandbox.git(['config', 'branch.main.merge'], { cwd: dir })).toBe('refs/heads/main');
    expect(await sandbox.git(['symbolic-ref', 'refs/remotes/origin/HEAD'], { cwd: dir })).toBe(
      'refs/remotes/origin/main',
    );
    // the refs git clone leaves: HEAD's branch, the remote's branches, the tags
    const refs = (await sandbox.git(['for-each-ref', '--format=%(refname)'], { cwd: dir })).split('\n');
    expect(refs).toEqual([
      'refs/heads/main',
      'refs/remotes/origin/HEAD',
      'refs/remotes/origin/main',
      'refs/remotes/origin/other',
      'refs/tags/v1',
    ]);
    expect(await sandbox.git(['rev-parse', '--abbrev-ref', '@{upstream}'], { cwd: dir })).toBe('origin/main');

    // real git: a commit elsewhere is pulled, a commit here is pushed, both without arguments
    const other = sandbox.path('other');
    await sandbox.git(['clone', '-q', source, other]);
    await writeFile(`${other}/from-git.txt`, 'git\n');
    await sandbox.git(['-C', other, 'add', '.']);
    await sandbox.git(['-C', other, 'commit', '-q', '-m', 'from git']);
    await sandbox.git(['-C', other, 'push', '-q']);
    await sandbox.git(['pull', '-q', '--ff-only'], { cwd: dir });
    expect(await readDiskFile(`${dir}/from-git.txt`, 'utf8')).toBe('git\n');
    await writeFile(`${dir}/from-clone.txt`, 'clone\n');
    await sandbox.git(['add', '.'], { cwd: dir });
    await sandbox.git(['commit', '-q', '-m', 'from the clone'], { cwd: dir });
    await sandbox.git(['push', '-q'], { cwd: dir });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: source })).toBe(await repo.refs.resolve('HEAD'));
  });

  it('isomorphic-git fetches and pulls from the origin a non-bare clone sets up', async () => {
    const dir = sandbox.path('work');
    await remote(buses.right, 'host', 'demo').clone(nodeFs(), dir, { bare: false });
    const hosted = await openRepository(nodeFs(), source);
    const moved = await commit(hosted, { message: 'on the host', author: ada, files: { 'host.txt': 'host\n' } });
    const fs = nodeFs();
    await git.pull({ fs, http: httpClient(buses.right), dir, author: ada, fastForwardOnly: true });
    expect(await git.resolveRef({ fs, dir, ref: 'refs/remotes/origin/main' })).toBe(moved.oid);
    expect(await readDiskFile(`${dir}/host.txt`, 'utf8')).toBe('host\n');
    expect(await sandbox.git(['status', '--porcelain'], { cwd: dir })).toBe('');
  });

  it('commit on the checked-out branch updates the working tree and the index; git sees it clean', async () => {
    const dir = sandbox.path('work');
    const repo = await remote(buses.right, 'host', 'demo').clone(nodeFs(), dir, { bare: false });
    // an edit of the user's own that the commit does not name
    await writeFile(`${dir}/run.sh`, '#!/bin/sh\necho edited\n');
    const made = await commit(repo, {
      message: 'work tree',
      author: ada,
      files: {
        'README.md': '# changed\n',
        'docs/deep/guide.txt': null,
        'link/inside.txt': 'a directory where the link was\n',
        'new/dir/file.txt': 'new\n',
        'tool.sh': '#!/bin/sh\n',
      },
      executable: ['tool.sh'],
    });
    expect(await sandbox.git(['rev-parse', 'HEAD'], { cwd: dir })).toBe(made.oid);
    expect(await sandbox.git(['status', '--porcelain'], { cwd: dir })).toBe(' M run.sh');
    expect(await sandbox.git(['diff-files', '--name-only'], { cwd: dir })).toBe('run.sh');
    expect(await readDiskFile(`${dir}/README.md`, 'utf8')).toBe('# changed\n');
    expect(await readDiskFile(`${dir}/link/inside.txt`, 'utf8')).toBe('a directory where the link was\n');
    expect(await readDiskFile(`${dir}/run.sh`, 'utf8')).toBe('#!/bin/sh\necho edited\n');
    expect((await stat(`${dir}/tool.sh`)).mode & 0o111).not.toBe(0);
    // the removed file's directories went with it
    await expect(stat(`${dir}/docs`)).rejects.toMatchObject({ code: 'ENOENT' });
    await sandbox.git(['fsck', '--strict'], { cwd: dir });

    // a commit on another branch leaves the working tree and the index alone
    const index = await readDiskFile(`${dir}/.git/index`);
    await commit(repo, { message: 'elsewhere', author: ada, branch: 'side', files: { 'side.txt': 's' } });
    expect(await readDiskFile(`${dir}/.git/index`)).toEqual(index);
    await expect(stat(`${dir}/side.txt`)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a push records the new remote values under refs/remotes/origin, as git push does', async () => {
    const dir = sandbox.path('work');
    const origin = remote(buses.right, 'host', 'demo');
    const repo = await origin.clone(nodeFs(), dir, { bare: false });
    const made = await commit(repo, { message: 'pushed', author: ada, files: { 'pushed.txt': 'p\n' } });
    await origin.push(repo, { refspecs: ['main:main', 'main:refs/heads/copy'] });
    expect(await sandbox.git(['rev-parse', 'refs/remotes/origin/main', 'refs/remotes/origin/copy'], { cwd: dir })).toBe(
      `${made.oid}\n${made.oid}`,
    );
    expect((await sandbox.git(['status', '-sb'], { cwd: dir })).split('\n')[0]).toBe('## main...origin/main');
    // a remote object for another repository leaves these refs alone
    const elsewhere = remote(buses.right, 'host', 'demo', { url: 'http://elsewhere.gitport/demo.git' });
    const next = await commit(repo, { message: 'again', author: ada, files: { 'again.txt': 'a\n' } });
    await elsewhere.push(repo, { refspecs: ['main:main'] });
    expect(await sandbox.git(['rev-parse', 'refs/remotes/origin/main'], { cwd: dir })).toBe(made.oid);
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: source })).toBe(next.oid);
  });

  it('clones with a working tree where no Buffer and no crypto.subtle exist (no polyfill, no secure context)', async () => {
    const fs = new MemoryFs();
    const saved = (globalThis as { Buffer?: unknown }).Buffer;
    const { crypto } = globalThis;
    let repo: GitRepository;
    try {
      delete (globalThis as { Buffer?: unknown }).Buffer;
      // what a page served over plain http has: getRandomValues, neither subtle nor randomUUID
      vi.stubGlobal('crypto', { getRandomValues: crypto.getRandomValues.bind(crypto) });
      repo = await remote(buses.right, 'host', 'demo').clone(fs, '/work', { bare: false });
    } finally {
      (globalThis as { Buffer?: unknown }).Buffer = saved;
      vi.unstubAllGlobals();
    }
    expect(globalThis.crypto.subtle).toBeDefined();
    expect(text((await fs.promises.readFile('/work/docs/deep/guide.txt')) as Uint8Array)).toBe('guide\n');
    // isomorphic-git reads the index gitport wrote and finds the tree unchanged
    const matrix = await git.statusMatrix({ fs, dir: '/work' });
    expect(matrix.filter(([, head, work, stage]) => !(head === 1 && work === 1 && stage === 1))).toEqual([]);
    expect(repo.bare).toBe(false);
  });

  it('commit writes files on a branch; real git fscks it; readFile reads it back; push moves the host', async () => {
    const origin = remote(buses.right, 'host', 'demo');
    const repo = await origin.clone(new MemoryFs(), '/notes');
    const first = await commit(repo, {
      message: 'Add notes',
      author: ada,
      files: { 'notes/today.md': '# Today\n', 'notes/bin/tool': '#!/bin/sh\n', 'README.md': null },
      executable: ['notes/bin/tool'],
    });
    expect(first.ref).toBe('refs/heads/main');
    const second = await commit(repo, {
      message: 'More',
      author: ada,
      files: {
        'notes/today.md': '# Today\n\nmore\n',
        'docs/deep/guide.txt': null,
        'data.bin': new Uint8Array([0, 1, 2, 255]),
      },
    });
    expect(second.parent).toBe(first.oid);
    expect(text(await readFile(repo, 'main', 'notes/today.md'))).toBe('# Today\n\nmore\n');
    expect(text(await readFile(repo, first.oid, 'notes/today.md'))).toBe('# Today\n');
    expect(text(await readFile(repo, 'v1', 'README.md'))).toBe('# demo\n');
    expect(await readFile(repo, 'main', 'README.md')).toBeUndefined();
    expect(await listFiles(repo, 'main')).toEqual(['data.bin', 'link', 'notes/bin/tool', 'notes/today.md', 'run.sh']);

    const pushed = await origin.push(repo, { refspecs: ['main:main'] });
    expect(pushed.ok).toBe(true);
    await sandbox.git(['fsck', '--strict', '--full'], { cwd: source });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: source })).toBe(second.oid);
    expect(await sandbox.git(['show', 'main:notes/today.md'], { cwd: source })).toBe('# Today\n\nmore');
    expect(await sandbox.git(['ls-tree', 'main', 'notes/bin/tool'], { cwd: source })).toMatch(/^100755 blob /);
    // the deleted file's directory is gone with it; the submodule entry stays
    expect(await sandbox.git(['ls-tree', '-r', '--name-only', 'main'], { cwd: source })).toBe(
      ['data.bin', 'link', 'notes/bin/tool', 'notes/today.md', 'run.sh', 'vendor/sub'].join('\n'),
    );
    expect(await sandbox.git(['log', '-1', '--format=%an <%ae> %ad', '--date=raw', 'main'], { cwd: source })).toBe(
      'Ada <ada@example.com> 1700000000 +0100',
    );
  });

  it('commit refuses bad paths and a branch that moved, with codes', async () => {
    const repo = await remote(buses.right, 'host', 'demo').clone(new MemoryFs(), '/notes');
    for (const path of ['../x', 'a//b', '.git/config', '/abs', 'a/./b']) {
      const error = await rejection(commit(repo, { message: 'm', author: ada, files: { [path]: 'x' } }));
      expect(error.code).toBe('COMMIT_BAD_PATH');
      expect(isGitportError(error)).toBe(true);
    }
    const clash = await rejection(commit(repo, { message: 'm', author: ada, files: { a: 'x', 'a/b': 'y' } }));
    expect(clash.code).toBe('COMMIT_BAD_PATH');
    expect((await rejection(readFile(repo, 'nope', 'README.md'))).code).toBe('REF_NOT_FOUND');

    // a writer that moves the branch between our read and our update wins; we are told
    const refs = repo.refs;
    let raced = false;
    const racing = {
      objects: repo.objects,
      refs: {
        list: (prefix?: string) => refs.list(prefix),
        read: (name: string) => refs.read(name),
        setSymbolic: (name: string, target: string) => refs.setSymbolic(name, target),
        update: (updates: Parameters<typeof refs.update>[0]) => refs.update(updates),
        resolve: async (name: string) => {
          const oid = await refs.resolve(name);
          if (!raced && name === 'refs/heads/main') {
            raced = true;
            await commit(repo, { message: 'meanwhile', author: ada, files: { 'meanwhile.txt': 'x' } });
          }
          return oid;
        },
      },
    };
    const conflict = await rejection(commit(racing, { message: 'late', author: ada, files: { 'late.txt': 'x' } }));
    expect(conflict.code).toBe('COMMIT_CONFLICT');
    expect(text(await readFile(repo, 'main', 'meanwhile.txt'))).toBe('x');
  });

  it('a rejected push rejects with PUSH_REJECTED and the report; report: true resolves it; nothing to push is refused', async () => {
    const origin = remote(buses.right, 'host', 'demo');
    const ours = await origin.clone(new MemoryFs(), '/ours');
    const theirs = await origin.clone(new MemoryFs(), '/theirs');
    await commit(theirs, { message: 'theirs', author: ada, files: { 'theirs.txt': 't' } });
    await origin.push(theirs, { refspecs: ['main:main'] });
    await commit(ours, { message: 'ours', author: ada, files: { 'ours.txt': 'o' } });

    const error = await rejection(origin.push(ours, { refspecs: ['main:main'] }));
    expect(error.code).toBe('PUSH_REJECTED');
    expect(isGitportError(error)).toBe(true);
    expect(error.message).toContain('refs/heads/main');
    const report = error.data as { ok: boolean; refs: { name: string; status: string }[] };
    expect(report.ok).toBe(false);
    expect(report.refs).toEqual([expect.objectContaining({ name: 'refs/heads/main', status: 'rejected' })]);

    const reported = await origin.push(ours, { refspecs: ['main:main'], report: true });
    expect(reported.ok).toBe(false);
    expect(reported.refs[0]?.status).toBe('rejected');

    for (const options of [{}, { refspecs: [] }, { updates: [] }]) {
      expect((await rejection(origin.push(ours, options))).code).toBe('PUSH_NOTHING');
    }
  });

  it('a checkout refuses a tree that would write outside the working tree, and leaves nothing', async () => {
    const outside = sandbox.path('outside');
    await mkdir(outside);
    const hostile = await initRepository(new MemoryFs(), '/hostile');
    const blob = await hostile.objects.write('blob', new TextEncoder().encode('x\n'));
    const link = await hostile.objects.write('blob', new TextEncoder().encode(outside));
    const inner = await hostile.objects.write(
      'tree',
      serializeTree([{ mode: '100644', name: 'b', oid: blob, type: 'blob' }]),
    );
    const trees = [
      // a name twice: a link, then a directory through it
      [
        { mode: '120000', name: 'a', oid: link, type: 'blob' as const },
        { mode: '40000', name: 'a', oid: inner, type: 'tree' as const },
      ],
      [{ mode: '40000', name: '.git', oid: inner, type: 'tree' as const }],
      [{ mode: '40000', name: '.GIT', oid: inner, type: 'tree' as const }],
    ];
    const pair = await connectedBuses('host2', 'client2');
    const served = host(pair.left, staticRepositories({ hostile }));
    try {
      for (const [i, entries] of trees.entries()) {
        const tree = await hostile.objects.write('tree', serializeTree(entries));
        const person = { name: 'x', email: 'x@x', timestamp: 1, timezone: '+0000' };
        const oid = await hostile.objects.write(
          'commit',
          serializeCommit({ tree, parents: [], author: person, committer: person, extraHeaders: [], message: 'x\n' }),
        );
        const old = await hostile.refs.resolve('refs/heads/main');
        await hostile.refs.update([{ name: 'refs/heads/main', old: old ?? null, new: oid }]);
        const dir = sandbox.path(`hostile-${i}`);
        const error = await rejection(remote(pair.right, 'host2', 'hostile').clone(nodeFs(), dir, { bare: false }));
        expect(isGitportError(error)).toBe(true);
        expect(error.code).toBe('CHECKOUT_BAD_PATH');
        await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
        expect(await readdir(outside)).toEqual([]);
      }
    } finally {
      served.close();
      pair.close();
    }
  });

  it('errors: a missing repository is REPO_NOT_FOUND said once, an unknown peer PEER_NOT_FOUND', async () => {
    const missing = remote(buses.right, 'host', 'nope');
    for (const attempt of [
      () => missing.lsRefs(),
      () => missing.clone(new MemoryFs(), '/x'),
      () => missing.clone(new MemoryFs(), '/y', { bare: false }),
    ]) {
      const error = await rejection(attempt());
      expect(error.code).toBe('REPO_NOT_FOUND');
      expect(isGitportError(error)).toBe(true);
      expect(error.message).toBe('repository nope not found');
    }
    const repo = await remote(buses.right, 'host', 'demo').clone(new MemoryFs(), '/z');
    const pushError = await rejection(missing.push(repo, { refspecs: ['main:main'] }));
    expect(pushError.code).toBe('REPO_NOT_FOUND');

    const nobody = remote(buses.right, 'nobody', 'demo');
    for (const attempt of [() => nobody.lsRefs(), () => nobody.clone(new MemoryFs(), '/w'), () => nobody.fetch(repo)]) {
      const error = await rejection(attempt());
      expect(error.code).toBe('PEER_NOT_FOUND');
      expect(isGitportError(error)).toBe(true);
    }
  });
});

/** `git ls-tree -r` lines as `git ls-files -s` prints them (stage 0). */
function lsTreeAsLsFiles(lsTree: string): string {
  return lsTree
    .split('\n')
    .map((line) => {
      const [meta, path] = line.split('\t');
      const [mode, , oid] = meta!.split(' ');
      return `${mode} ${oid} 0\t${path}`;
    })
    .join('\n');
}
