/**
 * `watch(url)`: ref updates pushed with the git CLI through the gateway reach `onUpdate` and the
 * automatic fetch; a dropped event stream resumes from `Last-Event-ID` without losing an update;
 * past the gateway's replay cap the watcher lists the refs again. And `watch({ bus })` over a
 * bus host's signals.
 */
import type { FetchResult } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import {
  commit,
  type GitRepository,
  host,
  initRepository,
  MemoryFs,
  type RefUpdateEvent,
  type ResetInfo,
  remote,
  watch,
} from 'gitport';
import { nodeFs } from 'gitport/node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type TestServer } from '../gateway/server.js';
import { connectedBuses } from '../gitport/helpers.js';
import { type FrontProxy, startFrontProxy } from './front-proxy.js';

let sandbox: GitSandbox;
let server: TestServer;
let front: FrontProxy;
let work: string;

/** Waits for a condition (a wait, not a timing assertion: the bound only ends a hung test). */
const author = { name: 'gitport test', email: 'test@gitport.invalid' };

const until = (check: () => void) => vi.waitFor(check, { timeout: 30_000, interval: 20 });

async function pushCommit(message: string, ref = 'refs/heads/main'): Promise<string> {
  await sandbox.git(['-C', work, 'commit', '-q', '--allow-empty', '-m', message]);
  await sandbox.git(['-C', work, 'push', '-q', `${server.url}/live.git`, `HEAD:${ref}`]);
  return sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
}

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-watch-');
  server = await startServer({ allowAnonymousPush: true, sse: { replayCap: 2, retryMs: 50 } });
  await sandbox.git(['init', '-q', '--bare', `${server.root}/live.git`]);
  work = sandbox.path('work');
  await sandbox.git(['init', '-q', work]);
  await pushCommit('first');
  front = await startFrontProxy(server.url);
});

afterAll(async () => {
  await front?.close();
  await server?.close();
  await sandbox?.cleanup();
});

describe('watch(url)', () => {
  it('a git push reaches onUpdate, and the automatic fetch brings its commit', async () => {
    const dir = sandbox.path('follower');
    const origin = remote(`${server.url}/live.git`);
    const local = await origin.clone(nodeFs(), dir, { bare: false });
    const updates: RefUpdateEvent[] = [];
    const fetched: FetchResult[] = [];
    let opened = 0;
    const watcher = watch(`${server.url}/live.git`, {
      onOpen: () => opened++,
      onUpdate: (event) => {
        updates.push(event);
      },
      fetch: { into: local, onFetched: (result) => fetched.push(result) },
    });
    await until(() => expect(opened).toBe(1));
    const before = await local.refs.resolve('refs/remotes/origin/main');
    const pushed = await pushCommit('live one');
    await until(() => expect(fetched.length).toBeGreaterThan(0));
    expect(updates).toEqual([{ repo: 'live', ref: 'refs/heads/main', old: before, new: pushed }]);
    await until(async () =>
      expect(await sandbox.git(['-C', dir, 'rev-parse', 'refs/remotes/origin/main'])).toBe(pushed),
    );
    expect(await sandbox.git(['-C', dir, 'log', '-1', '--format=%s', 'refs/remotes/origin/main'])).toBe('live one');
    expect(watcher.lastEventId).toMatch(/^\S+-\d+$/);
    watcher.stop();
    await watcher.stopped;
  });

  it('a dropped stream resumes from Last-Event-ID and loses no update', async () => {
    const updates: RefUpdateEvent[] = [];
    let opened = 0;
    const watcher = watch(`${front.url}/live.git`, {
      onOpen: () => opened++,
      onUpdate: (event) => {
        updates.push(event);
      },
    });
    await until(() => expect(opened).toBe(1));
    const a = await pushCommit('before the drop');
    await until(() => expect(updates.map((u) => u.new)).toEqual([a]));
    const seenId = watcher.lastEventId;
    front.refusing = true;
    front.cut();
    const b = await pushCommit('while away 1');
    const c = await pushCommit('while away 2', 'refs/heads/side');
    front.refusing = false;
    await until(() => expect(updates.map((u) => u.new)).toEqual([a, b, c]));
    expect(updates.map((u) => u.ref)).toEqual(['refs/heads/main', 'refs/heads/main', 'refs/heads/side']);
    expect(opened).toBeGreaterThanOrEqual(2);
    const resumed = front.seen.filter((r) => r.path === '/live.git/events' && r.headers['last-event-id'] === seenId);
    expect(resumed.length).toBeGreaterThan(0);
    watcher.stop();
    await watcher.stopped;
  });

  it('past the replay cap the watcher gets a reset, lists the refs again and fetches', async () => {
    const dir = sandbox.path('reset-follower');
    const local = await remote(`${server.url}/live.git`).clone(nodeFs(), dir, { bare: false });
    const resets: ResetInfo[] = [];
    const updates: RefUpdateEvent[] = [];
    let fetches = 0;
    let opened = 0;
    const watcher = watch(`${front.url}/live.git`, {
      onOpen: () => opened++,
      onUpdate: (event) => {
        updates.push(event);
      },
      onReset: (reset) => {
        resets.push(reset);
      },
      fetch: { into: local, onFetched: () => fetches++ },
    });
    await until(() => expect(opened).toBe(1));
    const first = await pushCommit('seen');
    await until(() => expect(updates.map((u) => u.new)).toEqual([first]));
    front.refusing = true;
    front.cut();
    // three events missed, the gateway keeps two
    await pushCommit('missed 1');
    await pushCommit('missed 2');
    const last = await pushCommit('missed 3');
    front.refusing = false;
    await until(() => expect(resets.length).toBe(1));
    expect(resets[0]!.reason).toBe('cap');
    expect(resets[0]!.refs).toContainEqual({ name: 'refs/heads/main', oid: last });
    expect(updates.map((u) => u.new)).toEqual([first]);
    await until(async () => expect(await sandbox.git(['-C', dir, 'rev-parse', 'refs/remotes/origin/main'])).toBe(last));
    expect(fetches).toBeGreaterThan(0);
    watcher.stop();
    await watcher.stopped;
  });

  it('a repository that is not there stops the watcher with REPO_NOT_FOUND', async () => {
    const errors: string[] = [];
    const watcher = watch(`${server.url}/nowhere.git`, { onError: (error) => errors.push(error.code) });
    await watcher.stopped;
    expect(errors).toEqual(['REPO_NOT_FOUND']);
  });

  it('an AbortSignal stops it', async () => {
    const controller = new AbortController();
    let opened = 0;
    const watcher = watch(`${server.url}/live.git`, { signal: controller.signal, onOpen: () => opened++ });
    await until(() => expect(opened).toBe(1));
    controller.abort();
    await watcher.stopped;
    await until(() => expect(server.gateway.hub.size).toBe(0));
  });
});

describe('watch({ bus })', () => {
  it('a push to a bus host reaches onUpdate and the automatic fetch', async () => {
    const { left, right, close } = await connectedBuses('client', 'host');
    try {
      const hosted = await initRepository(new MemoryFs(), '/notes.git');
      const served = host(right, { notes: hosted });
      const origin = remote(left, 'host', 'notes');
      const writer = await initRepository(new MemoryFs(), '/writer.git');
      await commit(writer, { message: 'one', author, files: { 'a.txt': 'a' } });
      await origin.push(writer, { refspecs: ['refs/heads/main:refs/heads/main'] });
      const follower: GitRepository = await origin.clone(new MemoryFs(), '/follower.git');
      const updates: RefUpdateEvent[] = [];
      const fetched: FetchResult[] = [];
      const watcher = watch(
        { bus: left, peer: 'host', repo: 'notes' },
        { onUpdate: (e) => void updates.push(e), fetch: { into: follower, onFetched: (r) => fetched.push(r) } },
      );
      const { oid } = await commit(writer, { message: 'two', author, files: { 'a.txt': 'b' } });
      await origin.push(writer, { refspecs: ['refs/heads/main:refs/heads/main'] });
      await until(() => expect(fetched.length).toBeGreaterThan(0));
      expect(updates.map((u) => [u.repo, u.ref, u.new])).toEqual([['notes', 'refs/heads/main', oid]]);
      await until(async () => expect(await follower.refs.resolve('refs/remotes/origin/main')).toBe(oid));
      watcher.stop();
      await watcher.stopped;
      served.close();
    } finally {
      close();
    }
  });
});
