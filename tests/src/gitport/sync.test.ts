/**
 * gitport end to end in one thread (two buses over a MessageChannel): a host serving bare
 * repositories that real git made, a remote that clones, pushes and fetches, checked by real git.
 */

import * as nodeFsModule from 'node:fs';
import { cp, readFile, stat, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { FsRepositoryRegistry, host, MemoryFs, openRepository, REF_UPDATE_EVENT, remote } from 'gitport';
import { nodeFs } from 'gitport/node';
import git from 'isomorphic-git';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { connectedBuses } from './helpers.js';

describe('host and remote over a bus', () => {
  let sandbox: GitSandbox;
  let buses: Awaited<ReturnType<typeof connectedBuses>>;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-sync-');
    const history = await ensureHistory({ commits: 60, seed: 7 });
    await cp(history.gitDir, sandbox.path('root', 'demo.git'), { recursive: true });
    buses = await connectedBuses('host', 'client');
  });
  afterEach(async () => {
    buses.close();
    await sandbox.cleanup();
  });

  it('clones (bare and with a working tree) what git clones, byte for byte in refs and objects', async () => {
    const registry = new FsRepositoryRegistry(nodeFs(), sandbox.path('root'));
    const served = host(buses.left, registry);
    try {
      const origin = remote(buses.right, 'host', 'demo');
      const listed = await origin.lsRefs();
      const expected = await sandbox.git(['ls-remote', sandbox.path('root', 'demo.git')]);
      const expectedRefs = expected
        .split('\n')
        .map((l) => l.split('\t'))
        .filter(([, name]) => !name!.endsWith('^{}'))
        .map(([oid, name]) => ({ name, oid }));
      expect(listed.refs.map((r) => ({ name: r.name, oid: r.oid }))).toEqual(expectedRefs);
      expect(listed.head).toBe('refs/heads/main');

      const events: string[] = [];
      const progress = (e: { phase: string }) => events.push(e.phase);
      const bare = await origin.clone(nodeFs(), sandbox.path('bare.git'), { onProgress: progress });
      expect(events).toContain('done');
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare.gitDir });
      const theirs = await sandbox.git(['for-each-ref', '--format=%(objectname) %(refname)'], {
        cwd: sandbox.path('root', 'demo.git'),
      });
      const ours = await sandbox.git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: bare.gitDir });
      expect(ours).toBe(theirs);
      const count = async (cwd: string) =>
        (await sandbox.git(['rev-list', '--all', '--objects'], { cwd })).split('\n').sort().join('\n');
      expect(await count(bare.gitDir)).toBe(await count(sandbox.path('root', 'demo.git')));
      // A fetched pack is stored as a pack with its index, not exploded into loose objects.
      const packs = (await sandbox.git(['count-objects', '-v'], { cwd: bare.gitDir })).split('\n');
      expect(packs).toContain('count: 0');

      const work = await origin.clone(nodeFs(), sandbox.path('work'), { bare: false });
      expect(work.bare).toBe(false);
      expect(await sandbox.git(['status', '--porcelain'], { cwd: sandbox.path('work') })).toBe('');
      expect(await sandbox.git(['rev-parse', 'HEAD'], { cwd: sandbox.path('work') })).toBe(
        await sandbox.git(['rev-parse', 'HEAD'], { cwd: sandbox.path('root', 'demo.git') }),
      );
    } finally {
      served.close();
    }
  });

  it('pushes a commit made with isomorphic-git, signals ref-update, and fetches it back elsewhere', async () => {
    const registry = new FsRepositoryRegistry(nodeFs(), sandbox.path('root'));
    const served = host(buses.left, registry);
    try {
      const origin = remote(buses.right, 'host', 'demo');
      const dir = sandbox.path('work');
      const repo = await origin.clone(nodeFs(), dir, { bare: false });
      await writeFile(`${dir}/pushed.txt`, 'from the client\n');
      await git.add({ fs: nodeFsModule, dir, filepath: 'pushed.txt' });
      const commit = await git.commit({
        fs: nodeFsModule,
        dir,
        message: 'pushed over the bus',
        author: { name: 'client', email: 'client@gitport.invalid', timestamp: 1_700_000_000, timezoneOffset: 0 },
      });
      const before = await sandbox.git(['rev-parse', 'main'], { cwd: sandbox.path('root', 'demo.git') });
      const signalled = new Promise((resolve) => buses.right.on(REF_UPDATE_EVENT, (payload) => resolve(payload)));
      const result = await origin.push(repo, { refspecs: ['refs/heads/main:refs/heads/main'] });
      expect(result.ok).toBe(true);
      expect(await signalled).toEqual({ repo: 'demo', ref: 'refs/heads/main', old: before, new: commit });
      expect(await sandbox.git(['rev-parse', 'main'], { cwd: sandbox.path('root', 'demo.git') })).toBe(commit);
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: sandbox.path('root', 'demo.git') });
      expect(await sandbox.git(['show', 'main:pushed.txt'], { cwd: sandbox.path('root', 'demo.git') })).toBe(
        'from the client',
      );

      // A second clone made before the push fetches the new commit.
      const other = await openRepository(nodeFs(), sandbox.path('root', 'demo.git'));
      expect(await other.refs.resolve('refs/heads/main')).toBe(commit);
      const mirror = await origin.clone(nodeFs(), sandbox.path('mirror.git'));
      const fetched = await origin.fetch(mirror, { refspecs: ['+refs/heads/*:refs/remotes/origin/*'] });
      expect(fetched.updates.every((u) => u.status === 'ok')).toBe(true);
      expect(await mirror.refs.resolve('refs/remotes/origin/main')).toBe(commit);
      expect(await readFile(`${dir}/pushed.txt`, 'utf8')).toBe('from the client\n');
    } finally {
      served.close();
    }
  });

  it('an aborted clone rejects with ABORTED, leaves no directory behind, and the host carries on', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    try {
      const origin = remote(buses.right, 'host', 'demo');
      const controller = new AbortController();
      const dir = sandbox.path('aborted.git');
      const cloning = origin.clone(nodeFs(), dir, {
        signal: controller.signal,
        onProgress: (event) => {
          // Abort once part of the pack has arrived.
          if (event.phase === 'transfer' && (event.loaded ?? 0) > 50_000) controller.abort(new Error('user cancelled'));
        },
      });
      await expect(cloning).rejects.toMatchObject({ code: 'ABORTED' });
      await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
      const again = await origin.clone(nodeFs(), sandbox.path('again.git'));
      expect(await again.refs.resolve('HEAD')).toBe(
        await sandbox.git(['rev-parse', 'HEAD'], { cwd: sandbox.path('root', 'demo.git') }),
      );
      const already = new AbortController();
      already.abort();
      await expect(origin.lsRefs({ signal: already.signal })).rejects.toMatchObject({ code: 'ABORTED' });
    } finally {
      served.close();
    }
  });

  it('clones into an in-memory repository: the pack is stored with its index and every object reads back', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    try {
      const fs = new MemoryFs();
      const repo = await remote(buses.right, 'host', 'demo').clone(fs, '/mem.git');
      const packs = await fs.promises.readdir('/mem.git/objects/pack');
      expect(packs.filter((n) => n.endsWith('.pack'))).toHaveLength(1);
      expect(packs.filter((n) => n.endsWith('.idx'))).toHaveLength(1);
      const source = sandbox.path('root', 'demo.git');
      const all = (await sandbox.git(['rev-list', '--all', '--objects'], { cwd: source })).split('\n');
      for (const line of all) {
        const oid = line.slice(0, 40);
        expect(await repo.objects.has(oid)).toBe(true);
      }
      const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: source });
      expect(await repo.refs.resolve('HEAD')).toBe(head);
    } finally {
      served.close();
    }
  });

  it('a shallow clone keeps its boundary in .git/shallow; git reads it; a later fetch deepens it', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    try {
      const origin = remote(buses.right, 'host', 'demo');
      const dir = sandbox.path('shallow.git');
      const repo = await origin.clone(nodeFs(), dir, { depth: 1 });
      const source = sandbox.path('root', 'demo.git');
      const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: source });
      expect((await readFile(`${dir}/shallow`, 'utf8')).split('\n')).toContain(head);
      expect(await sandbox.git(['rev-parse', '--is-shallow-repository'], { cwd: dir })).toBe('true');
      expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: dir })).toBe('1');
      await sandbox.git(['fsck', '--full'], { cwd: dir });

      await origin.fetch(repo, { refspecs: ['+refs/heads/*:refs/heads/*'], deepen: 2 });
      expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: dir })).toBe('3');
      await sandbox.git(['fsck', '--full'], { cwd: dir });
    } finally {
      served.close();
    }
  });

  it('clones an empty repository, then pushes the first commit into it', async () => {
    const registry = new FsRepositoryRegistry(nodeFs(), sandbox.path('root'));
    await registry.create('empty', { defaultBranch: 'trunk' });
    const served = host(buses.left, registry);
    try {
      const origin = remote(buses.right, 'host', 'empty');
      expect((await origin.lsRefs()).refs.filter((r) => r.name !== 'HEAD')).toEqual([]);
      const dir = sandbox.path('empty-work');
      const repo = await origin.clone(nodeFs(), dir, { bare: false });
      expect(await repo.refs.resolve('HEAD')).toBeUndefined();
      await writeFile(`${dir}/first.txt`, 'first\n');
      await git.add({ fs: nodeFsModule, dir, filepath: 'first.txt' });
      const commit = await git.commit({
        fs: nodeFsModule,
        dir,
        ref: 'refs/heads/trunk',
        message: 'first',
        author: { name: 'client', email: 'client@gitport.invalid', timestamp: 1_700_000_000, timezoneOffset: 0 },
      });
      const result = await origin.push(repo, { refspecs: ['refs/heads/trunk:refs/heads/trunk'] });
      expect(result.ok).toBe(true);
      const bare = sandbox.path('root', 'empty.git');
      expect(await sandbox.git(['rev-parse', 'HEAD'], { cwd: bare })).toBe(commit);
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare });
    } finally {
      served.close();
    }
  });

  it('an aborted push rejects with ABORTED; the host stops, moves no ref and reports no error', async () => {
    const hostErrors: unknown[] = [];
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')), {
      onError: (error) => hostErrors.push(error),
    });
    try {
      const origin = remote(buses.right, 'host', 'demo');
      const dir = sandbox.path('work');
      const repo = await origin.clone(nodeFs(), dir, { bare: false });
      const random = new Uint8Array(1_000_000).map((_, i) => (i * 2654435761) >>> 24);
      await writeFile(`${dir}/big.bin`, random);
      await git.add({ fs: nodeFsModule, dir, filepath: 'big.bin' });
      await git.commit({
        fs: nodeFsModule,
        dir,
        message: 'big',
        author: { name: 'client', email: 'client@gitport.invalid', timestamp: 1_700_000_000, timezoneOffset: 0 },
      });
      const bare = sandbox.path('root', 'demo.git');
      const before = await sandbox.git(['rev-parse', 'main'], { cwd: bare });
      const controller = new AbortController();
      let servingWhenAborted = 0;
      const pushing = origin.push(repo, {
        refspecs: ['refs/heads/main:refs/heads/main'],
        signal: controller.signal,
        // The advertisement has arrived: abort while the commands and the pack are being sent.
        onProgress: (event) => {
          if (event.phase !== 'transfer' || controller.signal.aborted) return;
          servingWhenAborted = served.gitWork;
          controller.abort(new Error('user cancelled'));
        },
      });
      await expect(pushing).rejects.toMatchObject({ code: 'ABORTED' });
      // the client's own abort is no failure of the host's: it stops serving and says nothing
      expect(servingWhenAborted).toBe(1);
      await expect.poll(() => served.gitWork).toBe(0);
      expect(hostErrors).toEqual([]);
      expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(before);
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare });
    } finally {
      served.close();
    }
  });

  it('reports a missing repository as a typed remote error', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    try {
      await expect(remote(buses.right, 'host', 'nope').lsRefs()).rejects.toMatchObject({
        code: 'REPO_NOT_FOUND',
      });
    } finally {
      served.close();
    }
  });
});
