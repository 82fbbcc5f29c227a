/**
 * `gitport serve` over a repository whose pack and `.bitmap` git wrote, with a loose commit
 * pushed since: real git clones (protocol v0 and v2) and fetches through it, and the result is
 * `git fsck --strict` clean with the objects of a clone from git itself; a corrupt bitmap is
 * ignored and the same clone still comes out.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServe } from './serve-process.js';

describe('gitport serve with a bitmapped pack', () => {
  let sandbox: GitSandbox;
  let server: ServeProcess;
  let root: string;
  let bare: string;
  const objectsOf = async (gitDir: string) =>
    new Set(
      (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', '--all']))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(0, 40)),
    );

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    for (let i = 0; i < 40; i++) {
      for (let f = 0; f < 3; f++) {
        const path = join(work, `d${(i + f) % 6}`);
        await sandbox.exec('mkdir', ['-p', path]);
        await writeFile(join(path, `f${(i * 3 + f) % 11}.txt`), `${i} ${f}\n${'content line\n'.repeat(30 + i)}`);
      }
      await sandbox.git(['-C', work, 'add', '.']);
      await sandbox.git(['-C', work, 'commit', '--quiet', '-m', `commit ${i}`]);
      if (i % 10 === 9) await sandbox.git(['-C', work, 'tag', '-a', '-m', `v${i}`, `v${i}`]);
      if (i === 25) await sandbox.git(['-C', work, 'branch', 'old']);
    }
    root = sandbox.path('root');
    bare = join(root, 'repo.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--no-local', work, bare]);
    await sandbox.git(['--git-dir', bare, 'repack', '-adbq']);
    // one commit pushed since the repack: loose objects
    await writeFile(join(work, 'new.txt'), 'pushed since\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'since']);
    await sandbox.git(['-C', work, 'push', '--quiet', bare, 'main']);
    server = await startServe(['--root', root, '--port', '0']);
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exit;
    await sandbox?.cleanup();
  });

  it('serves clones in v0 and v2 that fsck clean with the objects of a clone from git', async () => {
    const fromGit = sandbox.path('from-git.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--no-local', bare, fromGit]);
    const expected = await objectsOf(fromGit);
    for (const version of ['0', '2']) {
      const clone = sandbox.path(`clone-v${version}.git`);
      await sandbox.git([
        '-c',
        `protocol.version=${version}`,
        'clone',
        '--quiet',
        '--bare',
        `${server.url}/repo.git`,
        clone,
      ]);
      await sandbox.git(['--git-dir', clone, 'fsck', '--strict']);
      expect(await objectsOf(clone)).toEqual(expected);
    }
  });

  it('serves incremental fetches (thin packs) that fsck clean', async () => {
    for (const version of ['0', '2']) {
      const clone = sandbox.path(`fetch-v${version}.git`);
      await sandbox.git([
        'clone',
        '--quiet',
        '--bare',
        '--no-local',
        '--single-branch',
        '--branch',
        'old',
        bare,
        clone,
      ]);
      await sandbox.git([
        '--git-dir',
        clone,
        '-c',
        `protocol.version=${version}`,
        'fetch',
        '--quiet',
        `${server.url}/repo.git`,
        '+refs/heads/*:refs/heads/*',
        '+refs/tags/*:refs/tags/*',
      ]);
      await sandbox.git(['--git-dir', clone, 'fsck', '--strict']);
      expect(await sandbox.git(['--git-dir', clone, 'rev-parse', 'main'])).toBe(
        await sandbox.git(['--git-dir', bare, 'rev-parse', 'main']),
      );
    }
  });

  it('serves partial (blob:none) and shallow clones, which the bitmaps answer or leave to the walk', async () => {
    const partial = sandbox.path('partial.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--filter=blob:none', `${server.url}/repo.git`, partial]);
    await sandbox.git(['--git-dir', partial, 'fsck', '--strict']);
    const types = (
      await sandbox.git(['--git-dir', partial, 'cat-file', '--batch-all-objects', '--batch-check=%(objecttype)'])
    ).split('\n');
    expect(types.filter((t) => t === 'blob')).toEqual([]);
    expect(types.filter((t) => t === 'commit').length).toBe(
      Number(await sandbox.git(['--git-dir', bare, 'rev-list', '--all', '--count'])),
    );
    const shallow = sandbox.path('shallow.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--depth', '3', `${server.url}/repo.git`, shallow]);
    await sandbox.git(['--git-dir', shallow, 'fsck', '--strict']);
    expect(await sandbox.git(['--git-dir', shallow, 'rev-list', '--count', 'main'])).toBe('3');
  });

  it('ignores a corrupt bitmap and still serves the same clone', async () => {
    const dir = join(bare, 'objects', 'pack');
    const bitmap = (await readdir(dir)).find((f) => f.endsWith('.bitmap'))!;
    await writeFile(join(dir, bitmap), 'BITM not really a bitmap, just bytes that claim to be one');
    const copy = sandbox.path('root2');
    await sandbox.exec('cp', ['-r', root, copy]);
    const other = await startServe(['--root', copy, '--port', '0']);
    try {
      const clone = sandbox.path('clone-corrupt.git');
      await sandbox.git(['clone', '--quiet', '--bare', `${other.url}/repo.git`, clone]);
      await sandbox.git(['--git-dir', clone, 'fsck', '--strict']);
      expect(await objectsOf(clone)).toEqual(await objectsOf(bare));
    } finally {
      other.child.kill('SIGTERM');
      await other.exit;
    }
  });
});
