/**
 * The lighter entry points: `hostGit` (no control API), `hostReadOnly` (no push), `busRemote`
 * (lsRefs, fetch and clone only) and `push(remote, ...)`, which together do what `host` and `remote(...)` do for an app
 * that needs no more, and refuse with a typed error what they leave out.
 */
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { open } from '@gitport/transport';
import { afterEach, describe, expect, it } from 'vitest';
import { commit, readFile } from './commit-files.js';
import { GIT_STREAM, type HostOptions, host, hostGit, hostReadOnly } from './host.js';
import { MemoryFs } from './memory-fs.js';
import { staticRepositories } from './registry.js';
import { busRemote, type FetchRemote, push, remote } from './remote.js';
import { type GitRepository, initRepository } from './repository.js';
import type { RefUpdateEvent } from './wire.js';
import { HTTP_STREAM } from './wire.js';

const author = { name: 'A', email: 'a@example.com', timestamp: 1_700_000_000 };

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

/** A repository with one commit, hosted by `hostGit` (or `host`) on one bus; a client bus linked to it. */
async function hosted(serve: typeof hostGit = hostGit, options: HostOptions = {}) {
  const channel = new MessageChannel();
  const server = createBus({ id: 'server' });
  const client = createBus({ id: 'client' });
  await Promise.all([server.connect(nodeEndpoint(channel.port1)), client.connect(nodeEndpoint(channel.port2))]);
  const served = await initRepository(new MemoryFs(), '/served');
  const first = await commit(served, { message: 'first', author, files: { 'README.md': '# notes\n' } });
  const hosting = serve(server, staticRepositories({ notes: served }), options);
  const updates: RefUpdateEvent[] = [];
  hosting.onRefUpdate((event) => updates.push(event));
  cleanup = () => {
    hosting.close();
    server.close();
    client.close();
    channel.port1.close();
    channel.port2.close();
  };
  return { client, served, first: first.oid, updates };
}

const text = async (repo: GitRepository, path: string) => {
  const bytes = await readFile(repo, 'HEAD', path);
  return bytes === undefined ? undefined : new TextDecoder().decode(bytes);
};

describe('busRemote on a hostGit host', () => {
  it('clones with a work tree, fetches, and pushes through push()', async () => {
    const { client, served, first, updates } = await hosted();
    const origin = busRemote(client, 'server', 'notes');
    expect(origin).toMatchObject({ peer: 'server', name: 'notes', url: 'http://server.gitport/notes.git' });
    expect('push' in origin || 'fetchObjects' in origin).toBe(false);

    const fs = new MemoryFs();
    const repo = await origin.clone(fs, '/clone', { bare: false });
    expect(new TextDecoder().decode((await fs.promises.readFile('/clone/README.md')) as Uint8Array)).toBe('# notes\n');
    expect(await repo.refs.resolve('refs/remotes/origin/main')).toBe(first);
    expect((await origin.lsRefs()).refs.map((ref) => [ref.name, ref.oid])).toEqual([
      ['HEAD', first],
      ['refs/heads/main', first],
    ]);

    // a commit on the host, fetched into the clone's remote-tracking branch
    const second = await commit(served, { message: 'second', author, files: { 'b.txt': 'b\n' } });
    await origin.fetch(repo, { refspecs: ['+refs/heads/*:refs/remotes/origin/*'] });
    expect(await repo.refs.resolve('refs/remotes/origin/main')).toBe(second.oid);

    // a commit on top of it, pushed back: the host's branch moves and says so
    await repo.refs.update([{ name: 'refs/heads/main', new: second.oid }]);
    const made = await commit(repo, { message: 'third', author, files: { 'c.txt': 'c\n' } });
    const result = await push(origin, repo, { refspecs: ['main:main'] });
    expect(result.ok).toBe(true);
    expect(await served.refs.resolve('refs/heads/main')).toBe(made.oid);
    expect(await text(served, 'c.txt')).toBe('c\n');
    expect(updates.map((event) => [event.ref, event.new])).toEqual([['refs/heads/main', made.oid]]);
    // as git push does, the remote-tracking branch follows
    expect(await repo.refs.resolve('refs/remotes/origin/main')).toBe(made.oid);
  });

  it('rejects a push that moves no ref with PUSH_REJECTED, and one with nothing to push', async () => {
    const { client, served } = await hosted();
    const origin = busRemote(client, 'server', 'notes');
    const repo = await origin.clone(new MemoryFs(), '/clone.git');
    await commit(served, { message: 'ahead', author, files: { 'x.txt': 'x\n' } });
    await commit(repo, { message: 'diverged', author, files: { 'y.txt': 'y\n' } });
    await expect(push(origin, repo, { refspecs: ['main:main'] })).rejects.toMatchObject({ code: 'PUSH_REJECTED' });
    const report = await push(origin, repo, { refspecs: ['main:main'], report: true });
    expect(report.ok).toBe(false);
    await expect(push(origin, repo, {})).rejects.toMatchObject({ code: 'PUSH_NOTHING' });
  });

  it('refuses partial clone (FILTER_UNSUPPORTED), which remote() does', async () => {
    const { client } = await hosted();
    const origin = busRemote(client, 'server', 'notes');
    const fs = new MemoryFs();
    await expect(origin.clone(fs, '/partial.git', { filter: 'blob:none' })).rejects.toMatchObject({
      code: 'FILTER_UNSUPPORTED',
    });
    // nothing was created
    await expect(fs.promises.readdir('/partial.git')).rejects.toBeDefined();
    const repo = await origin.clone(fs, '/whole.git');
    await expect(origin.fetch(repo, { filter: 'blob:none' })).rejects.toMatchObject({ code: 'FILTER_UNSUPPORTED' });

    const full = remote(client, 'server', 'notes');
    const partial = await full.clone(new MemoryFs(), '/partial.git', { filter: 'blob:none' });
    expect(await text(partial, 'README.md')).toBe('# notes\n');
  });

  it('push() takes the remotes of remote() too, and refuses anything else with REMOTE_INVALID', async () => {
    const { client, served } = await hosted();
    const full = remote(client, 'server', 'notes');
    const repo = await full.clone(new MemoryFs(), '/clone.git');
    const made = await commit(repo, { message: 'more', author, files: { 'm.txt': 'm\n' } });
    expect((await push(full, repo, { refspecs: ['main:main'] })).ok).toBe(true);
    expect(await served.refs.resolve('refs/heads/main')).toBe(made.oid);

    const lookalike = { ...busRemote(client, 'server', 'notes') } satisfies FetchRemote;
    await expect(push(lookalike, repo, { refspecs: ['main:main'] })).rejects.toMatchObject({
      code: 'REMOTE_INVALID',
    });
  });

  it('hostGit serves gitport.git only; host serves the smart-HTTP stream too', async () => {
    const lean = await hosted();
    const git = await open(lean.client, 'server', GIT_STREAM);
    git.abort(new Error('done'));
    await expect(open(lean.client, 'server', HTTP_STREAM)).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    cleanup?.();
    const full = await hosted(host);
    const http = await open(full.client, 'server', HTTP_STREAM);
    http.abort(new Error('done'));
  });
});

describe('hostReadOnly', () => {
  it('serves clones and fetches, and refuses a push with PUSH_NOT_ACCEPTED, the repository untouched', async () => {
    const errors: unknown[] = [];
    const { client, served, first, updates } = await hosted(hostReadOnly, { onError: (error) => errors.push(error) });
    const origin = busRemote(client, 'server', 'notes');
    const fs = new MemoryFs();
    const repo = await origin.clone(fs, '/clone', { bare: false });
    expect(await text(repo, 'README.md')).toBe('# notes\n');
    const second = await commit(served, { message: 'second', author, files: { 'b.txt': 'b\n' } });
    await origin.fetch(repo, { refspecs: ['+refs/heads/*:refs/remotes/origin/*'] });
    expect(await repo.refs.resolve('refs/remotes/origin/main')).toBe(second.oid);

    await repo.refs.update([{ name: 'refs/heads/main', new: second.oid }]);
    await commit(repo, { message: 'third', author, files: { 'c.txt': 'c\n' } });
    for (const pusher of [origin, remote(client, 'server', 'notes')]) {
      await expect(push(pusher, repo, { refspecs: ['main:main'] })).rejects.toMatchObject({
        code: 'PUSH_NOT_ACCEPTED',
        message: 'this host does not accept pushes to notes',
      });
    }
    expect(await served.refs.resolve('refs/heads/main')).toBe(second.oid);
    expect(await served.objects.has(first)).toBe(true);
    expect(updates).toEqual([]);
    // a refusal by design is no failure of the host's
    expect(errors).toEqual([]);
  });
});
