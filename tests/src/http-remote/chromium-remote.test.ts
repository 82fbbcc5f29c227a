/**
 * `remote(url)` and `watch(url)` in a Web Worker of real Chromium: the page and its worker come
 * from one origin, the git servers listen on others and allow the page with CORS: `gitport
 * serve --cors` and `git http-backend` behind node:http with CORS headers. Clone, incremental
 * fetch, shallow clone, push, a refused push, an auth challenge and a missing repository, into
 * a MemoryFs and into OPFS; and a git CLI push that reaches the worker's `onUpdate` and its
 * automatic fetch.
 */

import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpBackend } from '../gateway/http-backend.js';
import { type ServeProcess, startServe } from '../gateway/serve-process.js';
import { type HttpRemotePage, openHttpRemotePage } from './browser-page.js';

const TOKEN = 'browser-s3cret';

let sandbox: GitSandbox;
let root: string;
let page: HttpRemotePage;
let serve: ServeProcess;
let backend: Awaited<ReturnType<typeof startHttpBackend>>;

const git = (args: string[]) => sandbox.git(args);

/** A new commit on `main` of the bare repository `name`, written with the git CLI. */
async function publish(name: string, file: string, text: string): Promise<string> {
  const work = sandbox.path(`work-${name}`);
  await sandbox.exec('sh', ['-c', `printf '%s' "$2" > "$1"`, 'sh', `${work}/${file}`, text]);
  await git(['-C', work, 'add', file]);
  await git(['-C', work, 'commit', '-q', '-m', `edit ${file}`]);
  await git(['-C', work, 'push', '-q', `${root}/${name}.git`, 'HEAD:refs/heads/main']);
  return git(['-C', work, 'rev-parse', 'HEAD']);
}

async function createRepository(name: string): Promise<void> {
  await git(['init', '-q', '--bare', `${root}/${name}.git`]);
  await git(['init', '-q', '-b', 'main', sandbox.path(`work-${name}`)]);
  for (let i = 1; i <= 3; i++) await publish(name, 'notes.txt', `version ${i}\n`);
}

const servers = [
  { name: 'gitport serve --cors', slug: 'gateway', base: () => serve.url, token: TOKEN as string | undefined },
  { name: 'git http-backend with CORS', slug: 'backend', base: () => backend.url, token: undefined },
];
const storages = ['memory', 'opfs'] as const;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-chromium-remote-');
  root = sandbox.path('repos');
  for (const server of servers) for (const storage of storages) await createRepository(`${server.slug}-${storage}`);
  await createRepository('live');
  page = await openHttpRemotePage();
  serve = await startServe(['--root', root, '--port', '0', '--workers', '1', '--token', TOKEN, '--cors', page.origin]);
  backend = await startHttpBackend(root, { cors: page.origin });
}, 240_000);

afterAll(async () => {
  await page?.close();
  serve?.child.kill('SIGTERM');
  await serve?.exit;
  await backend?.close();
  await sandbox?.cleanup();
});

describe.each(servers)('a Chromium worker against $name', ({ slug, base, token }) => {
  describe.each(storages)('into %s', (storage) => {
    const name = `${slug}-${storage}`;
    const url = () => `${base()}/${name}.git`;
    const dir = `/chromium-${name}.git`;

    it('clones every branch, then fetches a new commit incrementally', async () => {
      const cloned = await page.call<{ head: string; refs: string[] }>('clone', { url: url(), storage, dir });
      expect(cloned.head).toBe(await git(['-C', `${root}/${name}.git`, 'rev-parse', 'refs/heads/main']));
      const theirs = await git(['-C', `${root}/${name}.git`, 'for-each-ref', '--format=%(refname) %(objectname)']);
      expect(cloned.refs).toEqual(theirs.split('\n'));

      const next = await publish(name, 'fetched.txt', `fetched in ${storage}\n`);
      const fetched = await page.call<{ refs: string[]; main: string; mainType: string }>('fetch', { url: url(), dir });
      expect(fetched.refs).toContain(`refs/heads/main ${next}`);
      expect(fetched.main).toBe(next);
      expect(fetched.mainType).toBe('commit');
    });

    it('clones shallow (depth 1)', async () => {
      const cloned = await page.call<{ head: string; shallow: string[] }>('clone', {
        url: url(),
        storage,
        dir: `${dir}-shallow`,
        depth: 1,
      });
      const head = await git(['-C', `${root}/${name}.git`, 'rev-parse', 'refs/heads/main']);
      expect(cloned.head).toBe(head);
      expect(cloned.shallow).toEqual([head]);
    });

    it('pushes a commit git then sees; a non-fast-forward push is refused with PUSH_REJECTED', async () => {
      await page.call('clone', { url: url(), storage, dir });
      const branch = `refs/heads/from-${storage}`;
      const oid = await page.call<string>('commit', { dir, branch: 'main', file: 'browser.txt', text: storage });
      expect(await page.call('push', { url: url(), token, dir, refspecs: [`main:${branch}`] })).toEqual({ ok: true });
      expect(await git(['-C', `${root}/${name}.git`, 'rev-parse', branch])).toBe(oid);

      // a root commit on another branch does not descend from what the server has
      await page.call('commit', { dir, branch: 'unrelated', file: 'other.txt', text: 'unrelated' });
      const refused = await page.run('push', { url: url(), token, dir, refspecs: [`unrelated:${branch}`] });
      expect(refused).toMatchObject({ ok: false, error: { code: 'PUSH_REJECTED' } });
      expect(await git(['-C', `${root}/${name}.git`, 'rev-parse', branch])).toBe(oid);
    });

    it('says REPO_NOT_FOUND with the status for a repository that is not there', async () => {
      const missing = await page.run('lsRefs', { url: `${base()}/missing.git` });
      expect(missing).toMatchObject({ ok: false, error: { code: 'REPO_NOT_FOUND', data: { status: 404 } } });
    });
  });
});

describe('a Chromium worker against gitport serve --cors', () => {
  it('is challenged (401) for a push without the token, and pushes once onAuth gives it', async () => {
    const url = `${serve.url}/gateway-memory.git`;
    const dir = '/chromium-auth.git';
    await page.call('clone', { url, storage: 'memory', dir });
    const oid = await page.call<string>('commit', { dir, branch: 'main', file: 'auth.txt', text: 'with a token' });
    const anonymous = await page.run('push', { url, dir, refspecs: ['main:refs/heads/auth'] });
    expect(anonymous).toMatchObject({
      ok: false,
      error: { code: 'HTTP_UNAUTHORIZED', data: { status: 401, message: 'authentication required' } },
    });
    expect(await page.call('push', { url, token: TOKEN, dir, refspecs: ['main:refs/heads/auth'] })).toEqual({
      ok: true,
    });
    expect(await git(['-C', `${root}/gateway-memory.git`, 'rev-parse', 'refs/heads/auth'])).toBe(oid);
  });

  it("hears a git CLI push through the gateway in watch()'s onUpdate, and fetches it", async () => {
    const url = `${serve.url}/live.git`;
    const dir = '/chromium-live.git';
    await page.call('clone', { url, storage: 'opfs', dir });
    await page.call('watch', { url, dir });
    const work = sandbox.path('work-live');
    await git(['-C', work, 'commit', '-q', '--allow-empty', '-m', 'pushed while watched']);
    const pushed = await git(['-C', work, 'rev-parse', 'HEAD']);
    const old = await git(['-C', `${root}/live.git`, 'rev-parse', 'refs/heads/main']);
    await git(['-C', work, 'push', '-q', url.replace('http://', `http://u:${TOKEN}@`), 'HEAD:refs/heads/main']);
    // waits, not timing assertions: the test's timeout only ends a hung run
    await page.page.waitForFunction(
      (oid) => (window as unknown as { updates: { new: string }[] }).updates.some((u) => u.new === oid),
      pushed,
      { timeout: 0, polling: 50 },
    );
    expect(await page.updates()).toEqual([{ repo: 'live', ref: 'refs/heads/main', old, new: pushed }]);
    await page.page.waitForFunction(
      (moved) => (window as unknown as { fetched: string[][] }).fetched.some((refs) => refs.includes(moved)),
      `refs/heads/main ${pushed}`,
      { timeout: 0, polling: 50 },
    );
    expect(await page.call('resolve', { dir, ref: 'refs/heads/main' })).toEqual({ oid: pushed, type: 'commit' });
    await page.call('unwatch', {});
  });
});
