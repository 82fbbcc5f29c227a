/**
 * isomorphic-git's Node HTTP client against the gateway: clone, fetch and push (with the token
 * given when the 401 challenge comes at discovery).
 */
import * as fs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { backends, startServer, type TestServer } from './server.js';

const TOKEN = 'iso-token';

describe.each(backends)('isomorphic-git over HTTP, %s backend', (backend) => {
  let sandbox: GitSandbox;
  let server: TestServer;
  let url: string;
  const dir = () => sandbox.path('iso');
  const serverGit = (args: string[]) => sandbox.git(['--git-dir', join(server.root, 'h.git'), ...args]);

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    const history = await ensureHistory({ commits: 40, seed: 3, tagEvery: 10 });
    server = await startServer({ root: sandbox.path('root'), backend, token: TOKEN });
    await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, join(server.root, 'h.git')]);
    url = `${server.url}/h.git`;
  });

  afterAll(async () => {
    await server?.close();
    await sandbox?.cleanup();
  });

  it('clones', async () => {
    await git.clone({ fs, http, dir: dir(), url, singleBranch: false });
    const head = await git.resolveRef({ fs, dir: dir(), ref: 'HEAD' });
    expect(head).toBe(await serverGit(['rev-parse', 'HEAD']));
    const log = await git.log({ fs, dir: dir(), depth: 1000 });
    expect(log.length).toBe(Number(await serverGit(['rev-list', '--count', 'HEAD'])));
    await sandbox.git(['-C', dir(), 'fsck', '--no-dangling']);
  });

  it('fetches a commit pushed by real git', async () => {
    const writer = sandbox.path('writer');
    await sandbox.git(['clone', '--quiet', url, writer]);
    await writeFile(join(writer, 'from-git.txt'), 'hello\n');
    await sandbox.git(['-C', writer, 'add', '.']);
    await sandbox.git(['-C', writer, 'commit', '--quiet', '-m', 'from git']);
    await sandbox.git([
      '-C',
      writer,
      'push',
      '--quiet',
      `http://u:${TOKEN}@${server.host}:${server.port}/h.git`,
      'HEAD:main',
    ]);
    const result = await git.fetch({ fs, http, dir: dir(), url, ref: 'main', singleBranch: true });
    expect(result.fetchHead).toBe(await sandbox.git(['-C', writer, 'rev-parse', 'HEAD']));
  });

  it('pushes with the token, and is refused without it', async () => {
    await git.checkout({ fs, dir: dir(), ref: 'main', force: true });
    await git.merge({
      fs,
      dir: dir(),
      theirs: 'origin/main',
      fastForwardOnly: true,
      author: { name: 'iso', email: 'i@x' },
    });
    await git.checkout({ fs, dir: dir(), ref: 'main', force: true });
    await writeFile(join(dir(), 'from-iso.txt'), 'iso\n');
    await git.add({ fs, dir: dir(), filepath: 'from-iso.txt' });
    const oid = await git.commit({
      fs,
      dir: dir(),
      message: 'from isomorphic-git',
      author: { name: 'iso', email: 'i@x' },
    });
    await expect(git.push({ fs, http, dir: dir(), url, ref: 'main' })).rejects.toThrow(/401|auth/i);
    let asked = 0;
    const result = await git.push({
      fs,
      http,
      dir: dir(),
      url,
      ref: 'main',
      onAuth: () => {
        asked++;
        return { username: 'anyone', password: TOKEN };
      },
    });
    expect(asked).toBeGreaterThan(0);
    expect(result.ok).toBe(true);
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(oid);
    await serverGit(['fsck', '--strict', '--no-dangling']);
  });
});
