/**
 * Partial clone with gitport as the client: `remote(...).clone(..., { filter })` over smart HTTP
 * (against `gitport serve` and `git http-backend`, protocol v2 and v0) and over the bus; the
 * repository it makes is one real git uses as a partial clone (same object set as git's own
 * clone, lazy fetches by git), and gitport uses one real git made. Lazy reads are batched, can be
 * turned off per read, and fail with a typed error when the promisor remote is unreachable.
 */
import { readdir, readFile as readNodeFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import type { GitSandbox } from '@gitport/test-helpers/git';
import { closedPort } from '@gitport/test-helpers/ports';
import {
  type CloneOptions,
  type FetchRemote,
  type HeadView,
  host,
  httpRemote,
  isGitportError,
  isPromisorStore,
  listFiles,
  readFile,
  remote,
} from 'gitport';
import { nodeFs, nodeRepositories, openNodeRepository } from 'gitport/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectSet as objectSetOf, type PartialCloneServers, startPartialCloneServers } from './fixture.js';

let sandbox: GitSandbox;
let serve: PartialCloneServers['serve'];
let backend: PartialCloneServers['backend'];
let servers: PartialCloneServers | undefined;
const text = new TextDecoder();

async function rejection(work: Promise<unknown>): Promise<{ code: string; data?: unknown; cause?: unknown }> {
  try {
    await work;
  } catch (error) {
    if (!isGitportError(error)) throw error;
    return { code: error.code, data: error.data, cause: error.cause };
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  servers = await startPartialCloneServers({
    prefix: 'gitport-partial-client-',
    prepare: async (box, root, work) => {
      await box.git(['--git-dir', join(root, 'repo.git'), 'config', 'uploadpack.allowAnySHA1InWant', 'true']);
      // a repository git's server serves without filtering
      await box.git(['clone', '--quiet', '--bare', work, join(root, 'nofilter.git')]);
    },
  });
  ({ sandbox, serve, backend } = servers);
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

const objectSet = (gitDir: string) => objectSetOf(sandbox, gitDir);

async function promisorFiles(gitDir: string): Promise<string[]> {
  return (await readdir(join(gitDir, 'objects', 'pack'))).filter((f) => f.endsWith('.promisor'));
}

describe('gitport clones with a filter', () => {
  const servers = () => [
    { name: 'gitport serve', url: serve.url },
    { name: 'git http-backend', url: backend.url },
  ];
  for (const version of [2, 0] as const) {
    for (const filter of ['blob:none', 'tree:0']) {
      it(`--filter=${filter}, protocol v${version}: the object set of git's own partial clone`, async () => {
        for (const server of servers()) {
          const tag = `${server.name.replace(/\W/g, '')}-${filter.replace(/\W/g, '')}-v${version}`;
          const ours = sandbox.path(`ours-${tag}.git`);
          const theirs = sandbox.path(`theirs-${tag}.git`);
          const origin = remote(`${server.url}/repo.git`);
          const warnings: string[] = [];
          await origin.clone(nodeFs(), ours, {
            bare: true,
            filter,
            protocolV2: version === 2,
            onWarning: (w) => warnings.push(w),
          });
          expect(warnings).toEqual([]);
          await sandbox.git([
            '-c',
            `protocol.version=${version}`,
            'clone',
            '--quiet',
            '--bare',
            `--filter=${filter}`,
            `${server.url}/repo.git`,
            theirs,
          ]);
          const set = await objectSet(ours);
          expect(set.some((l) => l.startsWith('?'))).toBe(true);
          expect(set).toEqual(await objectSet(theirs));
          // recorded as git records it
          const config = (key: string) => sandbox.git(['--git-dir', ours, 'config', '--get', key]);
          expect(await config('core.repositoryformatversion')).toBe('1');
          expect(await config('extensions.partialclone')).toBe('origin');
          expect(await config('remote.origin.promisor')).toBe('true');
          expect(await config('remote.origin.partialclonefilter')).toBe(filter);
          expect(await promisorFiles(ours)).toHaveLength(1);
          await sandbox.git(['--git-dir', ours, 'fsck', '--connectivity-only']);
        }
      }, 120_000);
    }
  }

  it('a non-bare blob:none clone checks out HEAD with one lazy fetch, and real git works in it', async () => {
    const dir = sandbox.path('work-blobless');
    const repository = await remote(`${serve.url}/repo.git`).clone(nodeFs(), dir, { bare: false, filter: 'blob:none' });
    expect(isPromisorStore(repository.objects)).toBe(true);
    if (!isPromisorStore(repository.objects)) return;
    // the checkout's blobs came in one request
    expect(repository.objects.fetches).toBe(1);
    expect(await promisorFiles(join(dir, '.git'))).toHaveLength(2);
    expect(await readNodeFile(join(dir, 'small.txt'), 'utf8')).toBe('line 5\n'.repeat(6));
    expect(await sandbox.git(['-C', dir, 'status', '--porcelain'])).toBe('');
    // history is not here: git fetches it lazily from the promisor remote
    const missingBefore = (await objectSet(join(dir, '.git'))).filter((l) => l.startsWith('?'));
    expect(missingBefore.length).toBeGreaterThan(0);
    expect(await sandbox.git(['-C', dir, 'log', '-p', '--', 'small.txt'])).toContain('+line 0');
    const blame = await sandbox.git(['-C', dir, 'blame', '--', 'small.txt']);
    expect(blame.split('\n').filter((l) => l !== '')).toHaveLength(6);
    await sandbox.git(['-C', dir, 'checkout', '--quiet', 'HEAD~4']);
    expect(await readNodeFile(join(dir, 'small.txt'), 'utf8')).toBe('line 1\n'.repeat(2));
    // gitport reads what git fetched lazily meanwhile
    const again = await openNodeRepository(dir);
    expect(text.decode(await readFile(again, 'main', 'big-0.txt', { lazy: false }))).toContain('x');
  }, 120_000);

  it('a lazy fetch after a v2 clone over HTTP starts with its fetch: no second discovery GET', async () => {
    const requests: string[] = [];
    const counting: typeof globalThis.fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      requests.push(`${init?.method ?? 'GET'} ${url.slice(url.lastIndexOf('/') + 1)}`);
      return globalThis.fetch(input, init);
    };
    const dir = sandbox.path('work-discovered');
    const repository = await remote(`${serve.url}/repo.git`, { fetch: counting }).clone(nodeFs(), dir, {
      bare: false,
      filter: 'tree:0',
    });
    expect(await readNodeFile(join(dir, 'small.txt'), 'utf8')).toBe('line 5\n'.repeat(6));
    expect(isPromisorStore(repository.objects) && repository.objects.fetches).toBeGreaterThan(0);
    const gets = requests.filter((r) => r.startsWith('GET '));
    expect(gets).toEqual(['GET refs?service=git-upload-pack']);
    expect(requests.filter((r) => r === 'POST git-upload-pack').length).toBeGreaterThan(2);
    await sandbox.git(['-C', dir, 'fsck', '--connectivity-only']);
  }, 120_000);

  it('over git http-backend, a checkout also fetches its blobs in one request', async () => {
    const dir = sandbox.path('work-blobless-backend');
    const repository = await remote(`${backend.url}/repo.git`).clone(nodeFs(), dir, {
      bare: false,
      filter: 'blob:limit=1k',
      protocolV2: false,
    });
    if (!isPromisorStore(repository.objects)) throw new Error('expected a promisor store');
    expect(repository.objects.fetches).toBe(1);
    expect(await sandbox.git(['-C', dir, 'status', '--porcelain'])).toBe('');
  }, 60_000);

  it('refuses a bad filter-spec before connecting, with FILTER_INVALID', async () => {
    const origin = remote(`http://127.0.0.1:${await closedPort()}/repo.git`);
    for (const filter of ['blob:nothing', 'tree:-1', 'blob:limit=', 'object:type=nonsense', 'combine:']) {
      const error = await rejection(origin.clone(nodeFs(), sandbox.path(`bad-${filter.length}`), { filter }));
      expect(error.code).toBe('FILTER_INVALID');
    }
  });

  it('falls back to a full clone with a warning when the server does not filter, as git does', async () => {
    const dir = sandbox.path('nofilter.git');
    const warnings: string[] = [];
    await remote(`${backend.url}/nofilter.git`).clone(nodeFs(), dir, {
      filter: 'blob:none',
      onWarning: (w) => warnings.push(w),
    });
    expect(warnings).toEqual(['filtering not recognized by server, ignoring']);
    expect((await objectSet(dir)).filter((l) => l.startsWith('?'))).toEqual([]);
  });
});

describe("a clone's first view (onHeadView)", () => {
  /** Clones with `onHeadView`; what the view said, and whether it came before the clone resolved. */
  async function cloneWithView(origin: FetchRemote, dir: string, options: CloneOptions) {
    let view: HeadView | undefined;
    let resolved = false;
    let viewBeforeClone: boolean | undefined;
    let listed: Promise<string[]> | undefined;
    const repository = await origin
      .clone(nodeFs(), dir, {
        ...options,
        onHeadView: (given) => {
          view = given;
          viewBeforeClone = !resolved;
          listed = listFiles(given, 'HEAD');
        },
      })
      .then((r) => {
        resolved = true;
        return r;
      });
    if (view === undefined) throw new Error('no view');
    return { repository, view, viewBeforeClone, listed: await listed!, files: await listFiles(repository, 'HEAD') };
  }

  for (const server of ['gitport serve', 'git http-backend'] as const) {
    for (const filter of ['blob:none', undefined]) {
      it(`${server}, ${filter ?? 'full clone'}: HEAD's tree from the pack, before the clone resolves`, async () => {
        const url = `${server === 'gitport serve' ? serve.url : backend.url}/repo.git`;
        const dir = sandbox.path(`view-${server.replace(/\W/g, '')}-${filter ?? 'full'}.git`);
        const { repository, view, viewBeforeClone, listed, files } = await cloneWithView(remote(url), dir, {
          ...(filter ? { filter } : {}),
        });
        expect(view.early).toBe(true);
        expect(viewBeforeClone).toBe(true);
        expect(view.head).toBe(await repository.refs.resolve('HEAD'));
        expect(await view.refs.resolve('HEAD')).toBe(view.head);
        expect(files).toEqual([
          'big-0.txt',
          'big-1.txt',
          'big-2.txt',
          'small.txt',
          'src/deep/d0/code.ts',
          'src/deep/d1/code.ts',
        ]);
        expect(view.paths).toEqual(files);
        expect(listed).toEqual(files);
        // the view holds HEAD's commit and trees, no blob
        expect((await view.objects.read(view.head))?.type).toBe('commit');
        expect(await readFile(view, 'HEAD', 'small.txt').catch((e: { code?: string }) => e.code)).toBe(
          'OBJECT_NOT_FOUND',
        );
        // the clone itself is complete
        await sandbox.git(['--git-dir', dir, 'fsck', '--connectivity-only']);
      }, 60_000);
    }
  }

  it('tree:0, or a remote without the early view: the finished clone is the view', async () => {
    const tree0 = await cloneWithView(remote(`${serve.url}/repo.git`), sandbox.path('view-tree0.git'), {
      filter: 'tree:0',
    });
    expect(tree0.view.early).toBe(false);
    expect(tree0.viewBeforeClone).toBe(true);
    expect(tree0.view.paths).toEqual(tree0.files);
    expect(tree0.view.objects).toBe(tree0.repository.objects);
    const lean = await cloneWithView(httpRemote(`${serve.url}/repo.git`), sandbox.path('view-lean.git'), {});
    expect(lean.view.early).toBe(false);
    expect(lean.view.paths).toEqual(lean.files);
    expect(lean.listed).toEqual(lean.files);
  }, 60_000);
});

describe('gitport reads a partial clone', () => {
  it('made by real git: missing blobs come lazily; { lazy: false } says OBJECT_MISSING', async () => {
    const dir = sandbox.path('git-made');
    await sandbox.git(['clone', '--quiet', '--no-checkout', '--filter=blob:none', `${serve.url}/repo.git`, dir]);
    const plain = await openNodeRepository(dir, { promisor: remote(`${serve.url}/repo.git`) });
    const missing = await rejection(readFile(plain, 'main', 'big-1.txt', { lazy: false }));
    expect(missing.code).toBe('OBJECT_MISSING');
    const content = await readFile(plain, 'main', 'big-1.txt');
    expect(text.decode(content)).toBe(`${'x'.repeat(1500)} 4\n`.repeat(6));
    // now it is here, and marked as git marks lazily fetched packs
    expect(await readFile(plain, 'main', 'big-1.txt', { lazy: false })).toEqual(content);
    expect((await promisorFiles(join(dir, '.git'))).length).toBe(2);
    await sandbox.git(['-C', dir, 'fsck', '--connectivity-only']);
  }, 60_000);

  it('fetchObjects fetches blobs by id in protocol v0 and v2 from both servers', async () => {
    const dir = sandbox.path('by-id.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--filter=blob:none', `${serve.url}/repo.git`, dir]);
    const revs = ['main~1:small.txt', 'main~2:small.txt', 'main~3:small.txt', 'main~4:small.txt'];
    const oids = await Promise.all(revs.map((rev) => sandbox.git(['--git-dir', dir, 'rev-parse', rev])));
    const repository = await openNodeRepository(dir);
    let n = 0;
    for (const url of [serve.url, backend.url]) {
      for (const protocolV2 of [true, false]) {
        const oid = oids[n++]!;
        expect(await repository.objects.has(oid)).toBe(false);
        const result = await remote(`${url}/repo.git`).fetchObjects(repository, [oid], { protocolV2 });
        expect(result.version).toBe(protocolV2 ? 2 : 0);
        expect(result.pack?.objects).toBe(1);
        expect((await repository.objects.read(oid))?.type).toBe('blob');
      }
    }
    expect(await promisorFiles(dir)).toHaveLength(5);
    await sandbox.git(['--git-dir', dir, 'fsck', '--connectivity-only']);
  }, 60_000);

  it('fails a lazy read with PROMISOR_FETCH_FAILED when the promisor remote is unreachable', async () => {
    const dir = sandbox.path('unreachable');
    await sandbox.git(['clone', '--quiet', '--no-checkout', '--filter=blob:none', `${serve.url}/repo.git`, dir]);
    const repo = await openNodeRepository(dir, {
      promisor: remote(`http://127.0.0.1:${await closedPort()}/repo.git`),
    });
    const error = await rejection(readFile(repo, 'main', 'small.txt'));
    expect(error.code).toBe('PROMISOR_FETCH_FAILED');
    expect((error.cause as { code?: string }).code).toBe('HTTP_NETWORK');
    expect((error.data as { oids: string[] }).oids).toHaveLength(1);
  });
});

describe('gitport fetches into a partial clone', () => {
  it("uses the promisor remote's filter, marks the pack, and fetch --filter makes a remote promisor", async () => {
    const work = sandbox.path('work');
    const bare = sandbox.path('root', 'fetched.git');
    await sandbox.git(['clone', '--quiet', '--bare', work, bare]);
    await sandbox.git(['--git-dir', bare, 'config', 'uploadpack.allowFilter', 'true']);
    const url = `${serve.url}/fetched.git`;
    const dir = sandbox.path('fetch-into.git');
    const repository = await remote(url).clone(nodeFs(), dir, { filter: 'blob:none' });
    // a new commit on the server
    const next = sandbox.path('work-next');
    await sandbox.git(['clone', '--quiet', bare, next]);
    await writeFile(join(next, 'new.txt'), 'new content\n');
    await sandbox.git(['-C', next, 'add', '-A']);
    await sandbox.git(['-C', next, 'commit', '--quiet', '-m', 'new']);
    await sandbox.git(['-C', next, 'push', '--quiet', 'origin', 'HEAD:main']);
    const result = await remote(url).fetch(repository, { refspecs: ['+refs/heads/*:refs/heads/*'] });
    expect(result.filter).toBe('blob:none');
    expect(await promisorFiles(dir)).toHaveLength(2);
    const newBlob = await sandbox.git(['-C', next, 'rev-parse', 'HEAD:new.txt']);
    expect(await repository.objects.has(newBlob)).toBe(false);
    expect(text.decode(await readFile(repository, 'main', 'new.txt'))).toBe('new content\n');
    await sandbox.git(['--git-dir', dir, 'fsck', '--connectivity-only']);

    // a full repository fetching with a filter: its remote becomes the promisor remote, as git's fetch --filter
    const full = sandbox.path('full-then-filter.git');
    const plain = await remote(url).clone(nodeFs(), full, { bare: false });
    expect(isPromisorStore(plain.objects)).toBe(false);
    await sandbox.git(['-C', next, 'commit', '--quiet', '--allow-empty', '-m', 'more']);
    await sandbox.git(['-C', next, 'push', '--quiet', 'origin', 'HEAD:main']);
    await remote(url).fetch(plain, { filter: 'blob:limit=1' });
    expect(await sandbox.git(['-C', full, 'config', '--get', 'extensions.partialclone'])).toBe('origin');
    expect(await sandbox.git(['-C', full, 'config', '--get', 'remote.origin.partialclonefilter'])).toBe('blob:limit=1');
    await sandbox.git(['-C', full, 'fsck', '--connectivity-only']);
  }, 60_000);
});

describe('partial clone over the bus', () => {
  it('clones blob:none from a hosted repository and fetches blobs lazily over the bus', async () => {
    const channel = new MessageChannel();
    const server = createBus({ id: 'server' });
    const client = createBus({ id: 'client' });
    await Promise.all([server.connect(nodeEndpoint(channel.port1)), client.connect(nodeEndpoint(channel.port2))]);
    const served = host(server, nodeRepositories(sandbox.path('root')));
    try {
      const origin = remote(client, 'server', 'repo');
      const dir = sandbox.path('bus-blobless');
      for (const protocolV2 of [true, false]) {
        const target = `${dir}-${protocolV2 ? 'v2' : 'v0'}`;
        const repository = await origin.clone(nodeFs(), target, { bare: false, filter: 'blob:none', protocolV2 });
        if (!isPromisorStore(repository.objects)) throw new Error('expected a promisor store');
        expect(repository.objects.fetches).toBe(1);
        expect(await sandbox.git(['-C', target, 'status', '--porcelain'])).toBe('');
        const old = await sandbox.git(['-C', target, 'rev-parse', 'HEAD~3:small.txt']);
        expect(await repository.objects.has(old)).toBe(false);
        const blob = await repository.objects.read(old);
        expect(text.decode(blob?.data)).toBe('line 2\n'.repeat(3));
        // parallel misses share one request
        const olds = await Promise.all(
          ['HEAD~5:big-0.txt', 'HEAD~4:big-1.txt', 'HEAD~5:small.txt'].map((rev) =>
            sandbox.git(['-C', target, 'rev-parse', rev]),
          ),
        );
        const before = repository.objects.fetches;
        const read = await Promise.all(olds.map((oid) => repository.objects.read(oid)));
        expect(read.every((o) => o?.type === 'blob')).toBe(true);
        expect(repository.objects.fetches).toBe(before + 1);
      }
    } finally {
      served.close();
      server.close();
      client.close();
      channel.port1.close();
      channel.port2.close();
    }
  }, 60_000);
});
