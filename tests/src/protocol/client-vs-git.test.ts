/**
 * gitport's clients against real git servers: `git upload-pack` / `git receive-pack` over stdio
 * (stateful) and `git http-backend` (stateless), protocol v0 and v2. What gitport received is
 * written into a bare repository and judged by `git fsck`.
 */
import { MemoryObjectStore } from '@gitport/pack';
import { clone, fetch, lsRemote, MemoryRefStore, type Remote } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCommits,
  type MemoryRepository,
  makeSampleRepo,
  nodeHttp,
  saveRepository,
  spawnGitService,
  startHttpBackend,
  type TestServer,
} from './helpers.js';

let sandbox: GitSandbox;
let http: TestServer;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-protocol-client-');
  http = await startHttpBackend(sandbox, sandbox.dir);
});
afterAll(async () => {
  await http?.close();
  await sandbox?.cleanup();
});

function emptyRepo(): MemoryRepository {
  return { objects: new MemoryObjectStore(), refs: new MemoryRefStore() };
}

async function refsOf(gitDir: string): Promise<string> {
  return sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)']);
}

type Mode = { name: string; protocol: 0 | 1 | 2; http: boolean };
const modes: Mode[] = [
  { name: 'stdio v0', protocol: 0, http: false },
  { name: 'stdio v1', protocol: 1, http: false },
  { name: 'stdio v2', protocol: 2, http: false },
  { name: 'http v0', protocol: 0, http: true },
  { name: 'http v2', protocol: 2, http: true },
];

function remoteFor(
  mode: Mode,
  gitDir: string,
  service: 'upload-pack' | 'receive-pack',
): { remote: Remote; done: () => Promise<void> } {
  if (mode.http) {
    const rel = gitDir.slice(sandbox.dir.length);
    return { remote: { url: `${http.url}${rel}`, http: nodeHttp }, done: async () => {} };
  }
  const svc = spawnGitService(sandbox, service, gitDir, { protocol: mode.protocol });
  return {
    remote: { connection: svc.connection },
    done: async () => {
      const { code, stderr } = await svc.exit;
      expect(code, stderr).toBe(0);
    },
  };
}

describe.each(modes)('gitport client against real git ($name)', (mode) => {
  it('ls-remote lists what git lists, with HEAD and peeled tags', async () => {
    const { bare } = await makeSampleRepo(sandbox, `ls-${mode.name.replace(' ', '-')}`);
    const { remote, done } = remoteFor(mode, bare, 'upload-pack');
    const result = await lsRemote(remote, { protocol: mode.protocol });
    await done();
    expect(result.version).toBe(mode.protocol);
    expect(result.head).toBe('refs/heads/main');
    const expected = await sandbox.git(['ls-remote', bare]);
    const ours = result.refs.flatMap((r) => [
      `${r.oid}\t${r.name}`,
      ...(r.peeled ? [`${r.peeled}\t${r.name}^{}`] : []),
    ]);
    expect(ours.join('\n')).toBe(expected);
  });

  it('clones, then fetches incrementally; git fsck accepts the result', async () => {
    const slug = `clone-${mode.name.replace(' ', '-')}`;
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const local = emptyRepo();
    let { remote, done } = remoteFor(mode, bare, 'upload-pack');
    const first = await clone(local, remote, { protocol: mode.protocol });
    await done();
    expect(first.pack?.objects).toBeGreaterThan(0);
    expect(await local.refs.read('HEAD')).toEqual({ kind: 'symbolic', target: 'refs/heads/main' });
    const out = sandbox.path(`${slug}-out.git`);
    await sandbox.git(['init', '-q', '--bare', out]);
    await saveRepository(sandbox, local, out);
    await sandbox.git(['--git-dir', out, 'fsck', '--full', '--strict']);
    expect(await refsOf(out)).toBe(await refsOf(bare));

    await addCommits(sandbox, work, 5);
    await sandbox.git(['push', '-q', bare, 'main'], { cwd: work });
    ({ remote, done } = remoteFor(mode, bare, 'upload-pack'));
    const second = await fetch(local, remote, { protocol: mode.protocol, refspecs: ['+refs/heads/*:refs/heads/*'] });
    await done();
    expect(second.updates.map((u) => u.status)).toEqual(['ok']);
    // a small pack: 5 commits with their trees and blobs, nothing older
    expect(second.pack?.objects).toBeLessThanOrEqual(15);
    expect(second.rounds).toBeLessThanOrEqual(2);
    const out2 = sandbox.path(`${slug}-out2.git`);
    await sandbox.git(['init', '-q', '--bare', out2]);
    await saveRepository(sandbox, local, out2);
    await sandbox.git(['--git-dir', out2, 'fsck', '--full', '--strict']);
    expect(await sandbox.git(['--git-dir', out2, 'rev-parse', 'main'])).toBe(
      await sandbox.git(['--git-dir', bare, 'rev-parse', 'main']),
    );
  });

  it('shallow clone with depth 1, then deepen', async () => {
    const slug = `shallow-${mode.name.replace(' ', '-')}`;
    const { bare } = await makeSampleRepo(sandbox, slug);
    const local = emptyRepo();
    let { remote, done } = remoteFor(mode, bare, 'upload-pack');
    const first = await fetch(local, remote, {
      protocol: mode.protocol,
      refspecs: ['refs/heads/main:refs/heads/main'],
      depth: 1,
      tags: 'none',
    });
    await done();
    const main = await sandbox.git(['--git-dir', bare, 'rev-parse', 'main']);
    expect(first.shallow).toEqual([main]);
    expect(await local.objects.has(main)).toBe(true);
    const parent = await sandbox.git(['--git-dir', bare, 'rev-parse', 'main~1']);
    expect(await local.objects.has(parent)).toBe(false);
    ({ remote, done } = remoteFor(mode, bare, 'upload-pack'));
    const second = await fetch(local, remote, {
      protocol: mode.protocol,
      refspecs: ['refs/heads/main:refs/heads/main'],
      deepen: 1,
      shallow: first.shallow,
      tags: 'none',
    });
    await done();
    expect(second.shallow).toEqual([parent]);
    expect(await local.objects.has(parent)).toBe(true);
    // write it out as a shallow repository and let git check it
    const out = sandbox.path(`${slug}-out.git`);
    await sandbox.git(['init', '-q', '--bare', out]);
    await saveRepository(sandbox, local, out);
    await sandbox.exec('sh', ['-c', `printf '%s\\n' ${second.shallow.join(' ')} > ${out}/shallow`]);
    await sandbox.git(['--git-dir', out, 'fsck', '--full']);
    expect(await sandbox.git(['--git-dir', out, 'rev-list', '--count', 'main'])).toBe('2');
  });
});
