/**
 * The real git CLI against the gateway over HTTP, in protocol v0 and v2: clone (bare, mirror,
 * worktree), shallow, incremental fetch, tags, ls-remote of hundreds of refs, and every kind of
 * push, with `git fsck` on both sides.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { backends, startServer, type TestServer } from './server.js';

const TOKEN = 'push-token-123';

const cases = backends.flatMap((backend) => [0, 2].map((version) => ({ backend, version })));

describe.each(cases)('git over HTTP, $backend backend, protocol.version=$version', ({ backend, version }) => {
  let sandbox: GitSandbox;
  let server: TestServer;
  let pushUrl: (repo: string) => string;
  let readUrl: (repo: string) => string;
  const git = (args: string[], options?: Parameters<GitSandbox['git']>[1]) =>
    sandbox.git(['-c', `protocol.version=${version}`, ...args], options);
  const run = (args: string[], options?: Parameters<GitSandbox['run']>[1]) =>
    sandbox.run(['-c', `protocol.version=${version}`, ...args], { allowFailure: true, ...options });
  const serverGit = (repo: string, args: string[]) =>
    sandbox.git(['--git-dir', join(server.root, `${repo}.git`), ...args]);

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    const history = await ensureHistory({ commits: 80, seed: 8, tagEvery: 20, mergeEvery: 25 });
    server = await startServer({ root: sandbox.path('root'), token: TOKEN, backend });
    await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, join(server.root, 'hist.git')]);
    // hundreds of refs
    const head = await serverGit('hist', ['rev-parse', 'HEAD']);
    const lines = Array.from(
      { length: 300 },
      (_, i) => `create refs/heads/many/b${String(i).padStart(3, '0')} ${head}\n`,
    );
    await sandbox.git(['--git-dir', join(server.root, 'hist.git'), 'update-ref', '--stdin'], { input: lines.join('') });
    readUrl = (repo) => `${server.url}/${repo}.git`;
    pushUrl = (repo) => `http://user:${TOKEN}@${server.host}:${server.port}/${repo}.git`;
  });

  afterAll(async () => {
    await server?.close();
    await sandbox?.cleanup();
  });

  it('ls-remote lists exactly the refs on disk, hundreds of them', async () => {
    const remote = await git(['ls-remote', readUrl('hist')]);
    const local = await serverGit('hist', ['for-each-ref', '--format=%(objectname)\t%(refname)']);
    const refs = (t: string) =>
      t
        .split('\n')
        .filter((l) => !l.endsWith('\tHEAD') && !l.endsWith('^{}'))
        .sort();
    expect(refs(remote).length).toBeGreaterThan(300);
    expect(refs(remote)).toEqual(refs(local));
    const tags = await git(['ls-remote', '--tags', readUrl('hist')]);
    expect(tags).toMatch(/refs\/tags\/.*\^\{\}/);
  });

  it('clones bare, mirror and with a worktree; fsck is clean on both sides', async () => {
    for (const mode of ['--bare', '--mirror', null]) {
      const dest = sandbox.path(`clone-${version}-${mode ?? 'worktree'}`);
      await git(['clone', '--quiet', ...(mode ? [mode] : []), readUrl('hist'), dest]);
      const gitDir = mode ? dest : join(dest, '.git');
      await sandbox.git(['--git-dir', gitDir, 'fsck', '--strict', '--no-dangling']);
      expect(await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'HEAD'])).toBe(
        await serverGit('hist', ['rev-parse', 'HEAD']),
      );
      const tagsThere = await serverGit('hist', ['tag', '--list']);
      expect(await sandbox.git(['--git-dir', gitDir, 'tag', '--list'])).toBe(tagsThere);
      if (mode === '--mirror') {
        const mine = await sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)']);
        expect(mine).toBe(await serverGit('hist', ['for-each-ref', '--format=%(objectname) %(refname)']));
      }
    }
    await serverGit('hist', ['fsck', '--strict', '--no-dangling']);
  });

  it('shallow clone, deepen, then incremental fetch of a new commit', async () => {
    const dest = sandbox.path(`shallow-${version}`);
    await git(['clone', '--quiet', '--depth', '1', '--no-single-branch', readUrl('hist'), dest]);
    expect(await sandbox.git(['-C', dest, 'rev-list', '--count', 'HEAD'])).toBe('1');
    await git(['-C', dest, 'fetch', '--quiet', '--deepen', '3']);
    expect(await sandbox.git(['-C', dest, 'rev-list', '--count', 'HEAD'])).toBe('4');

    // another client pushes; the shallow clone fetches the new commit incrementally
    const writer = sandbox.path(`writer-${version}`);
    await git(['clone', '--quiet', readUrl('hist'), writer]);
    await writeFile(join(writer, `incremental-${version}.txt`), 'new\n');
    await sandbox.git(['-C', writer, 'add', '.']);
    await sandbox.git(['-C', writer, 'commit', '--quiet', '-m', 'incremental']);
    await git(['-C', writer, 'push', '--quiet', pushUrl('hist'), 'HEAD:refs/heads/main']);
    await git(['-C', dest, 'fetch', '--quiet', 'origin']);
    expect(await sandbox.git(['-C', dest, 'rev-parse', 'origin/main'])).toBe(
      await sandbox.git(['-C', writer, 'rev-parse', 'HEAD']),
    );
    await sandbox.git(['-C', dest, 'fsck', '--no-dangling']);
  });

  it('pushes: fast-forward, non-fast-forward refused, force, new branch and tag, delete', async () => {
    const repo = `push${version}`;
    await sandbox.git(['clone', '--bare', '--quiet', join(server.root, 'hist.git'), join(server.root, `${repo}.git`)]);
    const work = sandbox.path(`work-${version}`);
    await git(['clone', '--quiet', readUrl(repo), work]);
    const commit = async (name: string) => {
      await writeFile(join(work, name), `${name}\n`);
      await sandbox.git(['-C', work, 'add', name]);
      await sandbox.git(['-C', work, 'commit', '--quiet', '-m', name]);
      return sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    };
    const base = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    const ff = await commit('ff.txt');
    await git(['-C', work, 'push', '--quiet', pushUrl(repo), 'HEAD:main']);
    expect(await serverGit(repo, ['rev-parse', 'refs/heads/main'])).toBe(ff);

    // non-fast-forward: refused, ref unchanged
    await sandbox.git(['-C', work, 'reset', '--quiet', '--hard', base]);
    const diverged = await commit('diverged.txt');
    const refused = await run(['-C', work, 'push', pushUrl(repo), 'HEAD:main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/rejected|non-fast-forward|fetch first/);
    expect(await serverGit(repo, ['rev-parse', 'refs/heads/main'])).toBe(ff);
    await git(['-C', work, 'push', '--quiet', '--force', pushUrl(repo), 'HEAD:main']);
    expect(await serverGit(repo, ['rev-parse', 'refs/heads/main'])).toBe(diverged);

    // new branch and tag (no new objects), then delete
    await sandbox.git(['-C', work, 'tag', '-a', '-m', 'v', `v-${version}`]);
    await git(['-C', work, 'push', '--quiet', pushUrl(repo), 'HEAD:refs/heads/copy', `v-${version}`]);
    expect(await serverGit(repo, ['rev-parse', 'refs/heads/copy'])).toBe(diverged);
    expect(await serverGit(repo, ['rev-parse', `refs/tags/v-${version}^{commit}`])).toBe(diverged);
    await git(['-C', work, 'push', '--quiet', pushUrl(repo), ':refs/heads/copy']);
    const gone = await sandbox.run(
      ['--git-dir', join(server.root, `${repo}.git`), 'rev-parse', '--verify', '-q', 'refs/heads/copy'],
      {
        allowFailure: true,
      },
    );
    expect(gone.code).not.toBe(0);
    await serverGit(repo, ['fsck', '--strict', '--no-dangling']);
  });

  it('refuses a push without the token and moves nothing', async () => {
    const work = sandbox.path(`anon-${version}`);
    await git(['clone', '--quiet', readUrl('hist'), work]);
    await writeFile(join(work, 'anon.txt'), 'anon\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'anon']);
    const before = await serverGit('hist', ['rev-parse', 'refs/heads/main']);
    const noToken = await run(['-C', work, 'push', readUrl('hist'), 'HEAD:main']);
    expect(noToken.code).not.toBe(0);
    const wrong = await run([
      '-C',
      work,
      'push',
      `http://user:wrong@${server.host}:${server.port}/hist.git`,
      'HEAD:main',
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/Authentication failed|401/);
    expect(await serverGit('hist', ['rev-parse', 'refs/heads/main'])).toBe(before);
  });

  it('pushes into an empty repository, and a push larger than http.postBuffer', async () => {
    const repo = `empty${version}`;
    await sandbox.git(['init', '--quiet', '--bare', join(server.root, `${repo}.git`)]);
    const work = sandbox.path(`big-${version}`);
    await sandbox.git(['init', '--quiet', work]);
    await writeFile(join(work, 'big.bin'), randomBytes(3 * 1024 * 1024));
    await writeFile(join(work, 'small.txt'), 'small\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'big']);
    await git(['-C', work, '-c', 'http.postBuffer=65536', 'push', '--quiet', pushUrl(repo), 'HEAD:refs/heads/main']);
    expect(await serverGit(repo, ['rev-parse', 'refs/heads/main'])).toBe(
      await sandbox.git(['-C', work, 'rev-parse', 'HEAD']),
    );
    await serverGit(repo, ['fsck', '--strict', '--no-dangling']);
    const back = sandbox.path(`big-back-${version}`);
    await git(['clone', '--quiet', readUrl(repo), back]);
    await sandbox.git(['-C', back, 'fsck', '--no-dangling']);
  });
});
