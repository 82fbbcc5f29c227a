import * as nodeFsModule from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { importPack, MemoryObjectStore, packObjects, readHeaderOf, serializeTree } from '@gitport/pack';
import { connectionPair, fetch, serveUploadPack } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import git from 'isomorphic-git';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeFs } from './fs.node.js';
import { MemoryFs } from './memory-fs.js';
import { FsRepositoryRegistry, isValidRepositoryName } from './registry.js';
import { initRepository, initRepositoryEarly, openRepository } from './repository.js';

const encoder = new TextEncoder();
const person = 'gitport <gitport@gitport.invalid> 1700000000 +0000';

describe.each([
  ['asynchronous', false],
  ['synchronous', true],
])('repositories in git layout (Node fs, %s calls)', (_mode, sync) => {
  let sandbox: GitSandbox;
  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-repo-');
  });
  afterEach(() => sandbox.cleanup());

  it('init writes a bare repository real git accepts; objects and refs written through it pass git fsck and git log', async () => {
    const dir = sandbox.path('made.git');
    const repo = await initRepository(nodeFs({ sync }), dir, { defaultBranch: 'trunk' });
    expect(repo.bare).toBe(true);
    expect(await sandbox.git(['rev-parse', '--is-bare-repository'], { cwd: dir })).toBe('true');
    expect(await sandbox.git(['symbolic-ref', 'HEAD'], { cwd: dir })).toBe('refs/heads/trunk');

    const blob = await repo.objects.write('blob', encoder.encode('hello\n'));
    const mode = encoder.encode('100644 hello.txt\0');
    const raw = Uint8Array.from(blob.match(/../g)!.map((h) => Number.parseInt(h, 16)));
    const treeBytes = new Uint8Array(mode.length + 20);
    treeBytes.set(mode);
    treeBytes.set(raw, mode.length);
    const tree = await repo.objects.write('tree', treeBytes);
    const commit = await repo.objects.write(
      'commit',
      encoder.encode(`tree ${tree}\nauthor ${person}\ncommitter ${person}\n\nfirst\n`),
    );
    const [result] = await repo.refs.update([{ name: 'refs/heads/trunk', old: null, new: commit }]);
    expect(result?.status).toBe('ok');

    await sandbox.git(['fsck', '--full', '--strict'], { cwd: dir });
    expect(await sandbox.git(['log', '--format=%H %s'], { cwd: dir })).toBe(`${commit} first`);
    expect(await sandbox.git(['show', 'trunk:hello.txt'], { cwd: dir })).toBe('hello');
    // isomorphic-git reads it too.
    expect((await git.log({ fs: nodeFsModule, gitdir: dir })).map((e) => e.oid)).toEqual([commit]);
  });

  it('init of a working tree keeps the repository in .git; opening finds it from either path', async () => {
    const dir = sandbox.path('work');
    const repo = await initRepository(nodeFs({ sync }), dir, { bare: false });
    expect(repo.gitDir).toBe(`${dir}/.git`);
    expect(await sandbox.git(['rev-parse', '--is-bare-repository'], { cwd: dir })).toBe('false');
    await writeFile(`${dir}/a.txt`, 'a\n');
    await sandbox.git(['add', 'a.txt'], { cwd: dir });
    await sandbox.git(['commit', '-qm', 'by git'], { cwd: dir });
    const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: dir });
    for (const path of [dir, `${dir}/.git`]) {
      const opened = await openRepository(nodeFs({ sync }), path);
      expect(opened.bare).toBe(false);
      expect(await opened.refs.resolve('HEAD')).toBe(head);
      expect((await opened.objects.read(head))?.type).toBe('commit');
    }
    await expect(initRepository(nodeFs({ sync }), dir, { bare: false })).rejects.toMatchObject({ code: 'REPO_EXISTS' });
    await expect(openRepository(nodeFs({ sync }), sandbox.path('nothing'))).rejects.toMatchObject({
      code: 'REPO_NOT_FOUND',
    });
  });

  it('sees objects and packs that real git adds after the repository was opened', async () => {
    const dir = sandbox.path('shared.git');
    await sandbox.git(['init', '-q', '--bare', dir]);
    const repo = await openRepository(nodeFs({ sync }), dir);
    const work = sandbox.path('w');
    await sandbox.git(['clone', '-q', dir, work]);
    await writeFile(`${work}/f.txt`, 'x\n');
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'one'], { cwd: work });
    await sandbox.git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
    const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    expect(await repo.refs.resolve('HEAD')).toBe(head);
    expect(await repo.objects.has(head)).toBe(true);
    await sandbox.git(['repack', '-adq'], { cwd: dir });
    await sandbox.git(['pack-refs', '--all'], { cwd: dir });
    expect(await repo.refs.resolve('HEAD')).toBe(head);
    expect((await repo.objects.read(head))?.type).toBe('commit');
  });

  it('a fetch refused once negotiation is over leaves no temporary pack behind; one served stores its pack', async () => {
    // the temporary pack file is opened while the final request goes out: a refusal then
    // (a want the server does not have) must remove it
    const served = sandbox.path('served.git');
    await sandbox.git(['init', '-q', '--bare', served]);
    const server = await openRepository(nodeFs({ sync }), served);
    const missing = 'e'.repeat(40);
    await writeFile(`${served}/refs/heads/main`, `${missing}\n`);
    const local = await initRepository(nodeFs({ sync }), sandbox.path('local.git'));
    const packDir = `${local.gitDir}/objects/pack`;
    for (const protocol of [0, 2] as const) {
      const [a, b] = connectionPair();
      const serving = serveUploadPack(server, b, { protocol }).catch((e: unknown) => e);
      await expect(fetch(local, { connection: a }, { protocol })).rejects.toMatchObject({
        code: 'PROTOCOL_REMOTE_ERROR',
      });
      expect(await serving).toMatchObject({ code: 'PROTOCOL_NOT_OUR_REF' });
      expect(await readdir(packDir)).toEqual([]);
    }
    // the same repository with an object behind the ref: the pack arrives and is kept
    const blob = await server.objects.write('blob', encoder.encode('x\n'));
    const tree = await server.objects.write(
      'tree',
      serializeTree([{ mode: '100644', name: 'x.txt', oid: blob, type: 'blob' }]),
    );
    const commit = await server.objects.write(
      'commit',
      encoder.encode(`tree ${tree}\nauthor ${person}\ncommitter ${person}\n\nx\n`),
    );
    await writeFile(`${served}/refs/heads/main`, `${commit}\n`);
    const [a, b] = connectionPair();
    const serving = serveUploadPack(server, b, { protocol: 2 });
    const result = await fetch(local, { connection: a }, { protocol: 2 });
    await serving;
    expect(result.pack?.objects).toBe(3);
    expect((await readdir(packDir)).filter((n) => n.startsWith('tmp_'))).toEqual([]);
    expect(await sandbox.git(['--git-dir', local.gitDir, 'cat-file', '-t', commit])).toBe('commit');
  });
});

describe('FsRepositoryRegistry', () => {
  it('creates, lists, opens and deletes bare repositories by name, refusing bad names', async () => {
    const registry = new FsRepositoryRegistry(new MemoryFs(), '/srv');
    expect(await registry.list()).toEqual([]);
    await registry.create('b');
    await registry.create('a.b_c-d');
    expect(await registry.list()).toEqual(['a.b_c-d', 'b']);
    await expect(registry.create('b')).rejects.toMatchObject({ code: 'REPO_EXISTS' });
    for (const bad of ['', '../x', 'x.git', '.hidden', 'a/b', 'x.lock', 'a..b']) {
      expect(isValidRepositoryName(bad)).toBe(false);
      await expect(registry.create(bad)).rejects.toMatchObject({ code: 'REPO_INVALID_NAME' });
      expect(await registry.open(bad)).toBeUndefined();
    }
    const repo = await registry.open('b');
    expect(await repo?.refs.read('HEAD')).toEqual({ kind: 'symbolic', target: 'refs/heads/main' });
    expect(await registry.open('missing')).toBeUndefined();
    expect(await registry.delete('b')).toBe(true);
    expect(await registry.delete('b')).toBe(false);
    expect(await registry.open('b')).toBeUndefined();
    expect(await registry.list()).toEqual(['a.b_c-d']);
  });

  it('of many concurrent creations of one name exactly one succeeds', async () => {
    const registry = new FsRepositoryRegistry(new MemoryFs(), '/srv');
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => registry.create('race')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(
      outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason.code),
    ).toEqual(Array(4).fill('REPO_EXISTS'));
  });
});

describe('initRepositoryEarly', () => {
  it("gives the repository's own stores at once, their calls waiting for the layout, packs lent", async () => {
    const source = new MemoryObjectStore();
    const blob = await source.write('blob', encoder.encode('early\n'));
    const fs = new MemoryFs();
    const { early, ready } = initRepositoryEarly(fs, '/early.git');
    // before the layout exists: a pack imported, a loose object written, a ref read
    const imported = importPack(early.objects, packObjects(source, [blob]));
    const loose = early.objects.write('blob', encoder.encode('loose\n'));
    const head = early.refs.resolve('HEAD');
    const repository = await ready;
    expect(repository.objects).toBe(early.objects);
    expect(repository.refs).toBe(early.refs);
    expect((await imported).objects).toEqual([blob]);
    expect(await repository.objects.has(await loose)).toBe(true);
    expect(await head).toBeUndefined();
    expect(await fs.promises.readFile('/early.git/HEAD', 'utf8')).toBe('ref: refs/heads/main\n');
    // the packs are lent to the reads only serving needs, as any repository's
    const located = await early.objects.storedPacks?.().locate(blob);
    expect(located?.offset).toBe(12);
    expect(await readHeaderOf(early.objects, blob)).toEqual({ type: 'blob', size: 6 });
  });

  it('over an existing repository fails as initRepository does, its stores writing nothing', async () => {
    const fs = new MemoryFs();
    const existing = await initRepository(fs, '/there.git');
    const { early, ready } = initRepositoryEarly(fs, '/there.git', { defaultBranch: 'other' });
    const bytes = encoder.encode('not here\n');
    const write = early.objects.write('blob', bytes);
    await expect(ready).rejects.toMatchObject({ code: 'REPO_EXISTS' });
    await expect(write).rejects.toMatchObject({ cause: { code: 'REPO_EXISTS' } });
    expect(await fs.promises.readFile('/there.git/HEAD', 'utf8')).toBe('ref: refs/heads/main\n');
    expect(await existing.objects.has(await new MemoryObjectStore().write('blob', bytes))).toBe(false);
  });

  it('touches no file when its object store cannot be made', async () => {
    const memory = new MemoryFs();
    const calls: string[] = [];
    // the file system as given, each call noted as it is made
    const fs = new Proxy(memory.promises, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(key));
          return value.apply(target, args);
        };
      },
    });
    const refused = new Error('no store');
    const objects = () => {
      throw refused;
    };
    expect(() => initRepositoryEarly(fs, '/none.git', { objects })).toThrow(refused);
    await Promise.resolve();
    expect(calls).toEqual([]);
    expect(await memory.promises.readdir('/')).toEqual([]);
  });
});
