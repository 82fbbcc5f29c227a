/**
 * isomorphic-git (the real package) through gitport's `http` plugin: clone, fetch and push
 * against a host over the bus; and the comlink control API.
 */

import * as nodeFsModule from 'node:fs';
import { cp, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import * as Comlink from 'comlink';
import { control, FsRepositoryRegistry, host, httpClient, MemoryFs, type RefUpdateEvent, resolveUrl } from 'gitport';
import { nodeFs } from 'gitport/node';
import git from 'isomorphic-git';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { connectedBuses } from './helpers.js';

const author = { name: 'iso', email: 'iso@gitport.invalid', timestamp: 1_700_000_100, timezoneOffset: 0 };

describe('the isomorphic-git http plugin', () => {
  let sandbox: GitSandbox;
  let buses: Awaited<ReturnType<typeof connectedBuses>>;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-plugin-');
    const history = await ensureHistory({ commits: 40, seed: 11 });
    await cp(history.gitDir, sandbox.path('root', 'demo.git'), { recursive: true });
    buses = await connectedBuses('host', 'client');
  });
  afterEach(async () => {
    buses.close();
    await sandbox.cleanup();
  });

  it('maps URLs to a peer and a repository, and refuses others with a typed error', () => {
    expect(resolveUrl('http://host.gitport/demo.git/info/refs?service=git-upload-pack')).toEqual({
      peer: 'host',
      repository: 'demo',
      path: 'info/refs',
      query: 'service=git-upload-pack',
    });
    expect(resolveUrl('https://editor%2Dworker.gitport/notes/git-receive-pack')).toMatchObject({
      peer: 'editor-worker',
      repository: 'notes',
      path: 'git-receive-pack',
    });
    expect(() => resolveUrl('https://github.com/a/b.git/info/refs')).toThrow(
      expect.objectContaining({ code: 'HTTP_BAD_URL' }),
    );
    const custom = resolveUrl('https://example.com/r/info/refs', () => ({ peer: 'x', repository: 'y' }));
    expect(custom).toMatchObject({ peer: 'x', repository: 'y' });
  });

  it('isomorphic-git clones, fetches and pushes through the plugin; real git agrees', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    const http = httpClient(buses.right);
    const url = 'http://host.gitport/demo.git';
    const dir = sandbox.path('iso');
    try {
      await git.clone({ fs: nodeFsModule, http, dir, url });
      const bare = sandbox.path('root', 'demo.git');
      expect(await git.resolveRef({ fs: nodeFsModule, dir, ref: 'HEAD' })).toBe(
        await sandbox.git(['rev-parse', 'HEAD'], { cwd: bare }),
      );
      await sandbox.git(['fsck', '--full'], { cwd: dir });

      await writeFile(`${dir}/plugin.txt`, 'pushed by isomorphic-git\n');
      await git.add({ fs: nodeFsModule, dir, filepath: 'plugin.txt' });
      const oid = await git.commit({ fs: nodeFsModule, dir, message: 'via the plugin', author });
      const pushed = await git.push({ fs: nodeFsModule, http, dir, remote: 'origin', ref: 'main' });
      expect(pushed.ok).toBe(true);
      expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(oid);
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare });

      // Someone else moves main; isomorphic-git fetches it.
      const other = sandbox.path('other');
      await sandbox.git(['clone', '-q', bare, other]);
      await writeFile(`${other}/second.txt`, 'from real git\n');
      await sandbox.git(['add', '.'], { cwd: other });
      await sandbox.git(['commit', '-qm', 'from real git'], { cwd: other });
      await sandbox.git(['push', '-q', 'origin', 'main'], { cwd: other });
      const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: other });
      const fetched = await git.fetch({ fs: nodeFsModule, http, dir, url, ref: 'main', singleBranch: true });
      expect(fetched.fetchHead).toBe(head);
      expect(await git.resolveRef({ fs: nodeFsModule, dir, ref: 'refs/remotes/origin/main' })).toBe(head);
    } finally {
      served.close();
    }
  });

  it('answers an unknown repository with 404, which isomorphic-git reports as an HTTP error', async () => {
    const served = host(buses.left, new FsRepositoryRegistry(nodeFs(), sandbox.path('root')));
    try {
      await expect(
        git.clone({
          fs: nodeFsModule,
          http: httpClient(buses.right),
          dir: sandbox.path('x'),
          url: 'http://host.gitport/none.git',
        }),
      ).rejects.toMatchObject({ code: 'HttpError', data: { statusCode: 404 } });
    } finally {
      served.close();
    }
  });
});

describe('the comlink control API', () => {
  it('lists, creates and deletes repositories, reads refs, and delivers ref updates to subscribers', async () => {
    const buses = await connectedBuses('host', 'client');
    const served = host(buses.left, new FsRepositoryRegistry(new MemoryFs(), '/repos'));
    try {
      const api = control(buses.right, 'host');
      expect(await api.list()).toEqual([]);
      await api.create('notes');
      await api.create('docs', { defaultBranch: 'trunk' });
      expect(await api.list()).toEqual(['docs', 'notes']);
      await expect(api.create('notes')).rejects.toMatchObject({ code: 'REPO_EXISTS' });
      await expect(api.create('../evil')).rejects.toMatchObject({ code: 'REPO_INVALID_NAME' });
      await expect(api.refs('nope')).rejects.toMatchObject({ code: 'REPO_NOT_FOUND' });
      expect(await api.refs('docs')).toEqual({ head: { kind: 'symbolic', target: 'refs/heads/trunk' }, refs: [] });

      const seen: RefUpdateEvent[] = [];
      let notify!: () => void;
      const arrived = new Promise<void>((resolve) => {
        notify = resolve;
      });
      const id = await api.subscribe(
        Comlink.proxy((event: RefUpdateEvent) => {
          seen.push(event);
          notify();
        }),
        'notes',
      );
      // A plain function, and functions marked by comlink's ESM and UMD builds: two copies with
      // markers of their own, so at least one is not the copy gitport imports (as when an app
      // bundles its own comlink). All of them are delivered.
      const plain: RefUpdateEvent[] = [];
      const plainId = await api.subscribe((event) => plain.push(event), 'notes');
      const require = createRequire(import.meta.url);
      const copies = [
        (await import(pathToFileURL(require.resolve('comlink/dist/esm/comlink.mjs')).href)) as typeof Comlink,
        require('comlink/dist/umd/comlink.js') as typeof Comlink,
      ];
      expect(copies[0]!.proxyMarker).not.toBe(copies[1]!.proxyMarker);
      const marked = copies.map(() => [] as RefUpdateEvent[]);
      const markedIds = await Promise.all(
        copies.map((copy, i) =>
          api.subscribe(
            copy.proxy((event: RefUpdateEvent) => marked[i]!.push(event)),
            'notes',
          ),
        ),
      );

      // Push one commit into notes with isomorphic-git through the plugin.
      const fs = new MemoryFs();
      const dir = '/work';
      await git.init({ fs, dir, defaultBranch: 'main' });
      await fs.promises.writeFile(`${dir}/a.txt`, 'a\n');
      await git.add({ fs, dir, filepath: 'a.txt' });
      const oid = await git.commit({ fs, dir, message: 'first', author });
      const result = await git.push({
        fs,
        http: httpClient(buses.right),
        dir,
        url: 'http://host.gitport/notes.git',
        ref: 'main',
      });
      expect(result.ok).toBe(true);
      await arrived;
      expect(seen).toEqual([{ repo: 'notes', ref: 'refs/heads/main', old: '0'.repeat(40), new: oid }]);
      await expect.poll(() => plain.length + marked[0]!.length + marked[1]!.length).toBe(3);
      expect([plain, ...marked]).toEqual([seen, seen, seen]);
      for (const subscription of [plainId, ...markedIds]) expect(await api.unsubscribe(subscription)).toBe(true);
      expect((await api.refs('notes')).refs).toEqual([{ name: 'refs/heads/main', oid }]);
      expect(await api.unsubscribe(id)).toBe(true);
      expect(await api.unsubscribe(id)).toBe(false);

      expect(await api.delete('docs')).toBe(true);
      expect(await api.delete('docs')).toBe(false);
      expect(await api.list()).toEqual(['notes']);
      api.release();
    } finally {
      served.close();
      buses.close();
    }
  });

  it('refuses to create or delete repositories when the host does not manage them', async () => {
    const buses = await connectedBuses('host', 'client');
    const registry = new FsRepositoryRegistry(new MemoryFs(), '/repos');
    await registry.create('kept');
    const served = host(buses.left, registry, { manage: false });
    try {
      const api = control(buses.right, 'host');
      await expect(api.create('new')).rejects.toMatchObject({ code: 'CONTROL_FORBIDDEN' });
      await expect(api.delete('kept')).rejects.toMatchObject({ code: 'CONTROL_FORBIDDEN' });
      expect(await api.list()).toEqual(['kept']);
      api.release();
    } finally {
      served.close();
      buses.close();
    }
  });
});
