/**
 * `remote(url)` and `httpRemote(url)`: gitport over smart HTTP against the gitport gateway (`gitport serve` in a
 * child process) and against git's own `git http-backend`, checked with the git CLI.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { closedPort } from '@gitport/test-helpers/ports';
import { type HttpRemoteOptions, httpRemote, isGitportError, push as pushTo, remote } from 'gitport';
import { nodeFs, openNodeRepository } from 'gitport/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpBackend } from '../gateway/http-backend.js';
import { type ServeProcess, startServe } from '../gateway/serve-process.js';
import { type FrontProxy, startFrontProxy } from './front-proxy.js';

const TOKEN = 's3cret';

async function rejection(
  work: Promise<unknown>,
): Promise<{ code: string; data: { status?: number; message?: string } }> {
  try {
    await work;
  } catch (error) {
    if (!isGitportError(error)) throw error;
    return { code: error.code, data: (error.data ?? {}) as { status?: number; message?: string } };
  }
  throw new Error('expected a rejection');
}

let sandbox: GitSandbox;
let root: string;
let serve: ServeProcess;
let backend: Awaited<ReturnType<typeof startHttpBackend>>;
const proxies: FrontProxy[] = [];

/** A commit on `main` of the work tree, pushed to the bare repository on disk (as another user would). */
async function commitAndPublish(work: string, file: string, text: string): Promise<string> {
  await sandbox.exec('sh', ['-c', `printf '%s' "$2" > "$1"`, 'sh', `${work}/${file}`, text]);
  await sandbox.git(['-C', work, 'add', file]);
  await sandbox.git(['-C', work, 'commit', '-q', '-m', `edit ${file}`]);
  await sandbox.git(['-C', work, 'push', '-q', '--force', `${root}/project.git`, 'HEAD:refs/heads/main']);
  return sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
}

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-http-remote-');
  root = sandbox.path('repos');
  const work = sandbox.path('work');
  await sandbox.git(['init', '-q', work]);
  await sandbox.git(['init', '-q', '--bare', `${root}/project.git`]);
  for (let i = 1; i <= 5; i++) await commitAndPublish(work, 'notes.txt', `version ${i}\n`);
  // many branches at distinct commits: the clone's request (one want each) passes the gzip threshold
  for (let i = 0; i < 40; i++) await sandbox.git(['-C', work, 'commit', '-q', '--allow-empty', '-m', `empty ${i}`]);
  await sandbox.git(['-C', work, 'push', '-q', `${root}/project.git`, 'HEAD:refs/heads/main']);
  const topics = Array.from({ length: 40 }, (_, i) => `HEAD~${i}:refs/heads/topic-${i}`);
  await sandbox.git(['-C', work, 'push', '-q', `${root}/project.git`, ...topics]);
  serve = await startServe(['--root', root, '--port', '0', '--workers', '1', '--token', TOKEN]);
  backend = await startHttpBackend(root);
});

afterAll(async () => {
  serve?.child.kill('SIGTERM');
  await serve?.exit;
  await backend?.close();
  for (const proxy of proxies) await proxy.close();
  await sandbox?.cleanup();
});

async function proxy(target: string, options: Parameters<typeof startFrontProxy>[1]): Promise<FrontProxy> {
  const started = await startFrontProxy(target, options);
  proxies.push(started);
  return started;
}

const servers: { name: string; base: () => string; push: HttpRemoteOptions }[] = [
  { name: 'gitport serve', base: () => serve.url, push: { auth: { username: 'me', password: TOKEN } } },
  { name: 'git http-backend', base: () => backend.url, push: {} },
];

describe.each(servers)('remote(url) against $name', ({ name, base, push }) => {
  const slug = name.replace(/\W+/g, '-');
  const git = (args: string[]) => sandbox.git(args);

  it('clones what git has, checked out, fsck-clean, with origin set up', async () => {
    const dir = sandbox.path(`${slug}-clone`);
    const phases = new Set<string>();
    const origin = remote(`${base()}/project.git`);
    const repo = await origin.clone(nodeFs(), dir, { bare: false, onProgress: (e) => phases.add(e.phase) });
    const head = await git(['-C', `${root}/project.git`, 'rev-parse', 'refs/heads/main']);
    expect(await repo.refs.resolve('HEAD')).toBe(head);
    expect(await git(['-C', dir, 'rev-parse', 'HEAD'])).toBe(head);
    await git(['-C', dir, 'fsck', '--full', '--strict']);
    expect(await git(['-C', dir, 'status', '--porcelain'])).toBe('');
    expect(await readFile(`${dir}/notes.txt`, 'utf8')).toBe('version 5\n');
    expect(await git(['-C', dir, 'config', 'remote.origin.url'])).toBe(`${base()}/project.git`);
    expect((await git(['-C', dir, 'branch', '-r'])).split('\n').length).toBeGreaterThan(40);
    expect([...phases]).toEqual(expect.arrayContaining(['connect', 'transfer', 'done']));
  });

  it('sends ls-refs beside the discovery GET (clone, lsRefs): the GET is held until a POST comes', async () => {
    const front = await proxy(base(), { holdDiscovery: true });
    const dir = sandbox.path(`${slug}-beside`);
    const repo = await remote(`${front.url}/project.git`).clone(nodeFs(), dir, { bare: true });
    expect(await repo.refs.resolve('HEAD')).toBe(await git(['-C', `${root}/project.git`, 'rev-parse', 'HEAD']));
    await git(['--git-dir', dir, 'fsck', '--full']);
    const discovery = front.seen.filter((r) => r.method === 'GET');
    expect(discovery.map((r) => r.released)).toEqual(['post']);
    // the ls-refs sent ahead was answered and used: one POST for it, one for the pack
    expect(front.seen.filter((r) => r.method === 'POST')).toHaveLength(2);

    const listing = await proxy(base(), { holdDiscovery: true });
    const listed = await remote(`${listing.url}/project.git`).lsRefs();
    expect(listed.refs.some((r) => r.name === 'refs/heads/topic-39')).toBe(true);
    expect(listing.seen.map((r) => `${r.method} ${r.released ?? ''}`).sort()).toEqual(['GET post', 'POST ']);
  });

  it('fetches a new commit incrementally into an existing clone', async () => {
    const dir = sandbox.path(`${slug}-fetch`);
    const origin = remote(`${base()}/project.git`);
    await origin.clone(nodeFs(), dir, { bare: false });
    const work = sandbox.path(`${slug}-fetch-work`);
    await git(['clone', '-q', `${root}/project.git`, work]);
    const next = await commitAndPublish(work, 'fetched.txt', `from ${name}\n`);
    const repo = await openNodeRepository(dir);
    const result = await origin.fetch(repo);
    expect(result.refs.find((r) => r.name === 'refs/heads/main')?.oid).toBe(next);
    expect(await git(['-C', dir, 'rev-parse', 'refs/remotes/origin/main'])).toBe(next);
    expect(await git(['-C', dir, 'show', `${next}:fetched.txt`])).toBe(`from ${name}`);
    await git(['-C', dir, 'fsck', '--full']);
  });

  it('clones shallow (depth 1), then deepens, as git does', async () => {
    const dir = sandbox.path(`${slug}-shallow`);
    const origin = remote(`${base()}/project.git`);
    const repo = await origin.clone(nodeFs(), dir, { bare: true, depth: 1 });
    expect(await git(['-C', dir, 'rev-list', '--count', 'refs/heads/main'])).toBe('1');
    const shallow = (await readFile(`${dir}/shallow`, 'utf8')).trim().split('\n');
    expect(shallow).toContain(await git(['-C', dir, 'rev-parse', 'refs/heads/main']));
    await git(['-C', dir, 'fsck', '--full']);
    await origin.fetch(repo, { deepen: 2, refspecs: ['+refs/heads/main:refs/heads/main'] });
    // git, asked the same of the same server (every branch, as gitport's clone takes)
    const reference = sandbox.path(`${slug}-shallow-git`);
    await git(['clone', '-q', '--bare', '--depth', '1', '--no-single-branch', `${base()}/project.git`, reference]);
    await git(['-C', reference, 'fetch', '-q', '--deepen', '2', 'origin', '+refs/heads/main:refs/heads/main']);
    const count = await git(['-C', reference, 'rev-list', '--count', 'refs/heads/main']);
    expect(await git(['-C', dir, 'rev-list', '--count', 'refs/heads/main'])).toBe(count);
    expect((await readFile(`${dir}/shallow`, 'utf8')).trim().split('\n').sort()).toEqual(
      (await readFile(`${reference}/shallow`, 'utf8')).trim().split('\n').sort(),
    );
    await git(['-C', dir, 'fsck', '--full']);
  });

  it('pushes a commit that git then sees; a non-fast-forward push is refused', async () => {
    const dir = sandbox.path(`${slug}-push`);
    const origin = remote(`${base()}/project.git`, push);
    await origin.clone(nodeFs(), dir, { bare: false });
    await sandbox.exec('sh', ['-c', `echo pushed > "${dir}/pushed.txt"`], {});
    await git(['-C', dir, 'add', 'pushed.txt']);
    await git(['-C', dir, 'commit', '-q', '-m', 'pushed over http']);
    const pushed = await git(['-C', dir, 'rev-parse', 'HEAD']);
    const repo = await openNodeRepository(dir);
    const branch = `refs/heads/pushed-${slug}`;
    const result = await origin.push(repo, { refspecs: [`HEAD:${branch}`] });
    expect(result.ok).toBe(true);
    expect(await git(['-C', `${root}/project.git`, 'rev-parse', branch])).toBe(pushed);

    await git(['-C', dir, 'commit', '-q', '--amend', '-m', 'rewritten']);
    const refused = await rejection(origin.push(await openNodeRepository(dir), { refspecs: [`HEAD:${branch}`] }));
    expect(refused.code).toBe('PUSH_REJECTED');
    expect(await git(['-C', `${root}/project.git`, 'rev-parse', branch])).toBe(pushed);
  });

  it('httpRemote clones and fetches, push() pushes through it; a filter is FILTER_UNSUPPORTED', async () => {
    const dir = sandbox.path(`${slug}-lean`);
    const origin = httpRemote(`${base()}/project.git`, push);
    expect('push' in origin).toBe(false);
    const repo = await origin.clone(nodeFs(), dir, { bare: false });
    expect(await git(['-C', dir, 'rev-parse', 'HEAD'])).toBe(
      await git(['-C', `${root}/project.git`, 'rev-parse', 'refs/heads/main']),
    );
    expect(await git(['-C', dir, 'config', 'remote.origin.url'])).toBe(`${base()}/project.git`);
    await sandbox.exec('sh', ['-c', `echo lean > "${dir}/lean.txt"`], {});
    await git(['-C', dir, 'add', 'lean.txt']);
    await git(['-C', dir, 'commit', '-q', '-m', 'pushed by push()']);
    const pushed = await git(['-C', dir, 'rev-parse', 'HEAD']);
    const branch = `refs/heads/lean-${slug}`;
    expect((await pushTo(origin, await openNodeRepository(dir), { refspecs: [`HEAD:${branch}`] })).ok).toBe(true);
    expect(await git(['-C', `${root}/project.git`, 'rev-parse', branch])).toBe(pushed);
    const fetched = await origin.fetch(repo, { refspecs: [`+${branch}:refs/remotes/origin/lean`] });
    expect(fetched.refs.find((r) => r.name === branch)?.oid).toBe(pushed);
    expect((await rejection(origin.fetch(repo, { filter: 'blob:none' }))).code).toBe('FILTER_UNSUPPORTED');
  });

  it('says REPO_NOT_FOUND with the status for a repository that is not there', async () => {
    const missing = await rejection(remote(`${base()}/missing.git`).lsRefs());
    expect(missing.code).toBe('REPO_NOT_FOUND');
    expect(missing.data.status).toBe(404);
  });

  it('lists refs over protocol v2, and over v0 when asked', async () => {
    const origin = remote(`${base()}/project.git`);
    const v2 = await origin.lsRefs();
    const v0 = await origin.lsRefs({ protocolV2: false });
    expect(v2.version).toBe(2);
    expect(v0.version).toBe(0);
    expect(v2.refs.map((r) => `${r.name} ${r.oid}`).sort()).toEqual(v0.refs.map((r) => `${r.name} ${r.oid}`).sort());
  });

  it('falls back to v0 when the server does not speak v2, and gzips a large upload-pack request', async () => {
    const front = await proxy(base(), { v0Only: true });
    const dir = sandbox.path(`${slug}-v0`);
    const repo = await remote(`${front.url}/project.git`).clone(nodeFs(), dir);
    expect(await repo.refs.resolve('refs/heads/topic-39')).toBe(
      await git(['-C', `${root}/project.git`, 'rev-parse', 'refs/heads/topic-39']),
    );
    await git(['-C', dir, 'fsck', '--full']);
    const posts = front.seen.filter((r) => r.method === 'POST');
    expect(posts.length).toBeGreaterThan(0);
    expect(posts.some((r) => r.headers['content-encoding'] === 'gzip')).toBe(true);
    // v2 was asked for by the discovery GET and the ls-refs POST sent beside it (dropped once the
    // answer said v0), by no request after them
    expect(
      front.seen
        .slice(0, 2)
        .map((r) => `${r.method} ${r.headers['git-protocol']}`)
        .sort(),
    ).toEqual(['GET version=2', 'POST version=2']);
    expect(front.seen.slice(2).every((r) => r.headers['git-protocol'] === undefined)).toBe(true);
  });

  it('follows the discovery redirect and sends every later request to the new place', async () => {
    const front = await proxy(base(), { movedPrefix: '/old' });
    const dir = sandbox.path(`${slug}-moved`);
    const repo = await remote(`${front.url}/old/project.git`).clone(nodeFs(), dir);
    expect(await repo.refs.resolve('HEAD')).toBe(await git(['-C', `${root}/project.git`, 'rev-parse', 'HEAD']));
    const posts = front.seen.filter((r) => r.method === 'POST');
    // the ls-refs sent beside the discovery GET went to the old place and was refused (a POST is
    // never redirected); it was sent again, and so was every later POST, to the new place
    expect(posts[0]?.path).toBe('/old/project.git/git-upload-pack');
    expect(posts.length).toBeGreaterThan(1);
    expect(posts.slice(1).every((r) => r.path === '/project.git/git-upload-pack')).toBe(true);
  });

  it('answers a 401 with onAuth credentials; without them fails HTTP_UNAUTHORIZED', async () => {
    const front = await proxy(base(), { basicAuth: { user: 'ann', password: 'pw' } });
    const url = `${front.url}/project.git`;
    const refused = await rejection(remote(url).lsRefs());
    expect(refused.code).toBe('HTTP_UNAUTHORIZED');
    expect(refused.data.status).toBe(401);
    expect(refused.data.message).toBe('front proxy: credentials needed');

    const challenges: { attempt: number; challenge?: string }[] = [];
    const origin = remote(url, {
      onAuth: (challenge) => {
        challenges.push({
          attempt: challenge.attempt,
          ...(challenge.challenge ? { challenge: challenge.challenge } : {}),
        });
        return challenge.attempt === 1 ? { username: 'ann', password: 'wrong' } : { username: 'ann', password: 'pw' };
      },
    });
    const listed = await origin.lsRefs();
    expect(listed.refs.some((r) => r.name === 'refs/heads/main')).toBe(true);
    expect(challenges).toEqual([
      { attempt: 1, challenge: 'Basic realm="front"' },
      { attempt: 2, challenge: 'Basic realm="front"' },
    ]);
    // the credentials that worked are kept: a second call is not challenged
    await origin.lsRefs();
    expect(challenges.length).toBe(2);
    // credentials in the URL work too
    const inUrl = await remote(`${front.url.replace('http://', 'http://ann:pw@')}/project.git`).lsRefs();
    expect(inUrl.refs.length).toBe(listed.refs.length);
  });
});

describe('remote(url) failures', () => {
  it('a push the gateway needs a token for: 401 then success with the token', async () => {
    const dir = sandbox.path('token-push');
    const origin = remote(`${serve.url}/project.git`, {
      onAuth: ({ attempt }) => (attempt === 1 ? { username: 'me', password: TOKEN } : undefined),
    });
    const repo = await origin.clone(nodeFs(), dir, { bare: true });
    const anonymous = await rejection(
      remote(`${serve.url}/project.git`).push(repo, { refspecs: ['main:refs/heads/token-push'] }),
    );
    expect(anonymous.code).toBe('HTTP_UNAUTHORIZED');
    expect(anonymous.data.message).toBe('authentication required');
    const result = await origin.push(repo, { refspecs: ['main:refs/heads/token-push'] });
    expect(result.ok).toBe(true);
    expect(await sandbox.git(['-C', `${root}/project.git`, 'rev-parse', 'refs/heads/token-push'])).toBe(
      await repo.refs.resolve('refs/heads/main'),
    );
  });

  it('HTTP_FORBIDDEN for a 403 with the server message', async () => {
    // the gateway serves only smart HTTP: a dumb info/refs is a 403
    const origin = remote(`${serve.url}/project.git`, {
      fetch: (input, init) => fetch(String(input).replace(/\?service=.*$/, ''), init),
    });
    const forbidden = await rejection(origin.lsRefs());
    expect(forbidden.code).toBe('HTTP_FORBIDDEN');
    expect(forbidden.data.status).toBe(403);
    expect(forbidden.data.message).toMatch(/only the smart HTTP protocol/);
  });

  it('a clone whose pack request fails leaves no repository behind (made while that request was out)', async () => {
    for (const bare of [true, false]) {
      const dir = sandbox.path(`refused-pack-${bare}`);
      let posts = 0;
      let madeMeanwhile = false;
      /** The answer to the request for the pack: once the repository is there (or a while passed). */
      const refuse = async () => {
        for (let i = 0; i < 500 && !existsSync(`${dir}${bare ? '' : '/.git'}/HEAD`); i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        madeMeanwhile = existsSync(dir);
        return new Response('away', { status: 503 });
      };
      const origin = remote(`${serve.url}/project.git`, {
        // the listing of refs is answered, the request for the pack is not
        fetch: (input, init) => (init?.method === 'POST' && ++posts === 2 ? refuse() : fetch(input, init)),
      });
      const refused = await rejection(origin.clone(nodeFs(), dir, { bare }));
      expect(posts).toBe(2);
      expect(madeMeanwhile).toBe(true);
      expect(refused.code).toMatch(/^HTTP_/);
      expect(refused.data.status).toBe(503);
      expect(existsSync(dir)).toBe(false);
    }
  });

  it('HTTP_NETWORK when nothing answers, HTTP_BAD_URL for what is no http URL, ABORTED when aborted', async () => {
    const down = await rejection(remote(`http://127.0.0.1:${await closedPort()}/project.git`).lsRefs());
    expect(down.code).toBe('HTTP_NETWORK');
    expect(() => remote('ftp://example.org/x.git')).toThrow(expect.objectContaining({ code: 'HTTP_BAD_URL' }));
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const aborted = await rejection(remote(`${serve.url}/project.git`).lsRefs({ signal: controller.signal }));
    expect(aborted.code).toBe('ABORTED');
  });
});
