/**
 * gitport's push client against real `git receive-pack`, over stdio (stateful) and
 * `git http-backend` (stateless). The receiving repository is checked with `git fsck`.
 */
import { push, type Remote } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCommits,
  loadRepository,
  makeSampleRepo,
  nodeHttp,
  spawnGitService,
  startHttpBackend,
  type TestServer,
} from './helpers.js';

let sandbox: GitSandbox;
let http: TestServer;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-protocol-push-');
  http = await startHttpBackend(sandbox, sandbox.dir);
});
afterAll(async () => {
  await http?.close();
  await sandbox?.cleanup();
});

type Mode = { name: string; http: boolean };
const modes: Mode[] = [
  { name: 'stdio', http: false },
  { name: 'http', http: true },
];

function remoteFor(mode: Mode, gitDir: string): { remote: Remote; done: () => Promise<void> } {
  if (mode.http)
    return { remote: { url: `${http.url}${gitDir.slice(sandbox.dir.length)}`, http: nodeHttp }, done: async () => {} };
  const svc = spawnGitService(sandbox, 'receive-pack', gitDir);
  return {
    remote: { connection: svc.connection },
    done: async () => {
      const { code, stderr } = await svc.exit;
      expect(code, stderr).toBe(0);
    },
  };
}

const rev = (gitDir: string, name: string) => sandbox.git(['--git-dir', gitDir, 'rev-parse', '--verify', '-q', name]);

describe.each(modes)('gitport push against real git ($name)', (mode) => {
  it('fast-forward, refused non-fast-forward, force, delete', async () => {
    const slug = `ff-${mode.name}`;
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    await addCommits(sandbox, work, 3, 'ahead');
    let local = await loadRepository(sandbox, `${work}/.git`);
    const tip = await sandbox.git(['rev-parse', 'main'], { cwd: work });

    let { remote, done } = remoteFor(mode, bare);
    const ff = await push(local, remote, { refspecs: ['refs/heads/main:refs/heads/main'] });
    await done();
    expect(ff.ok).toBe(true);
    expect(ff.unpack).toBe('ok');
    expect(await rev(bare, 'main')).toBe(tip);
    await sandbox.git(['--git-dir', bare, 'fsck', '--full', '--strict']);

    // rewrite history locally: the remote main is no longer an ancestor
    await sandbox.git(['branch', 'old-main'], { cwd: work }); // keeps the remote's tip known locally
    await sandbox.git(['reset', '-q', '--hard', 'HEAD~2'], { cwd: work });
    await addCommits(sandbox, work, 1, 'rewrite');
    local = await loadRepository(sandbox, `${work}/.git`);
    const rewritten = await sandbox.git(['rev-parse', 'main'], { cwd: work });
    ({ remote, done } = remoteFor(mode, bare));
    const refused = await push(local, remote, { refspecs: ['refs/heads/main:refs/heads/main'] });
    await done();
    expect(refused.ok).toBe(false);
    expect(refused.refs[0]).toMatchObject({ status: 'rejected', reason: 'non-fast-forward', local: true });
    expect(await rev(bare, 'main')).toBe(tip);

    ({ remote, done } = remoteFor(mode, bare));
    const forced = await push(local, remote, { refspecs: ['+refs/heads/main:refs/heads/main'] });
    await done();
    expect(forced.ok).toBe(true);
    expect(await rev(bare, 'main')).toBe(rewritten);

    ({ remote, done } = remoteFor(mode, bare));
    const deleted = await push(local, remote, { refspecs: [':refs/heads/feature'] });
    await done();
    expect(deleted.ok).toBe(true);
    expect(
      await sandbox.run(['--git-dir', bare, 'rev-parse', '--verify', '-q', 'feature'], { allowFailure: true }),
    ).toMatchObject({
      code: 1,
    });
    await sandbox.git(['--git-dir', bare, 'fsck', '--full', '--strict']);
  });

  it('creates refs with an empty pack, and pushes into an empty repository', async () => {
    const slug = `create-${mode.name}`;
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const local = await loadRepository(sandbox, `${work}/.git`);
    let { remote, done } = remoteFor(mode, bare);
    // the objects are all there already: git expects (and gets) an empty pack
    const copy = await push(local, remote, { refspecs: ['refs/heads/main:refs/heads/copy'] });
    await done();
    expect(copy.ok).toBe(true);
    expect(await rev(bare, 'copy')).toBe(await rev(bare, 'main'));

    const empty = sandbox.path(`${slug}-empty.git`);
    await sandbox.git(['init', '-q', '--bare', empty]);
    ({ remote, done } = remoteFor(mode, empty));
    const all = await push(local, remote, {
      refspecs: [
        'refs/heads/main:refs/heads/main',
        'refs/heads/feature:refs/heads/feature',
        'refs/tags/v1:refs/tags/v1',
      ],
    });
    await done();
    expect(all.ok).toBe(true);
    await sandbox.git(['--git-dir', empty, 'fsck', '--full', '--strict']);
    expect(await rev(empty, 'v1')).toBe(await rev(bare, 'v1'));
    expect(await rev(empty, 'main')).toBe(await rev(bare, 'main'));
  });

  it('atomic push with one ref refused by the server moves nothing', async () => {
    const slug = `atomic-${mode.name}`;
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    await sandbox.git(['--git-dir', bare, 'config', 'receive.denyNonFastForwards', 'true']);
    await addCommits(sandbox, work, 1, 'atomic');
    await sandbox.git(['branch', '-f', 'feature', 'HEAD~4'], { cwd: work }); // behind: not a fast-forward
    const local = await loadRepository(sandbox, `${work}/.git`);
    const before = await sandbox.git(['--git-dir', bare, 'for-each-ref']);
    const { remote, done } = remoteFor(mode, bare);
    const result = await push(local, remote, {
      atomic: true,
      refspecs: ['refs/heads/main:refs/heads/main', '+refs/heads/feature:refs/heads/feature'],
    });
    await done();
    expect(result.ok).toBe(false);
    expect(result.refs.every((r) => r.status === 'rejected')).toBe(true);
    expect(await sandbox.git(['--git-dir', bare, 'for-each-ref'])).toBe(before);
  });

  it('pushes 2,000 tags', async () => {
    const slug = `tags-${mode.name}`;
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const lines = Array.from({ length: 2000 }, (_, i) => `create refs/tags/t${String(i).padStart(4, '0')} HEAD`).join(
      '\n',
    );
    await sandbox.git(['update-ref', '--stdin'], { cwd: work, input: `${lines}\n` });
    const local = await loadRepository(sandbox, `${work}/.git`);
    const { remote, done } = remoteFor(mode, bare);
    const nothing = await push(local, remote, {}); // no commands: a flush, nothing moves
    expect(nothing).toEqual({ refs: [], ok: true });
    await done();
    const tags = (await local.refs.list('refs/tags/t')).map((r) => ({ dst: r.name, src: r.oid }));
    const again = remoteFor(mode, bare);
    const pushed = await push(local, again.remote, { updates: tags });
    await again.done();
    expect(pushed.ok).toBe(true);
    expect(pushed.refs).toHaveLength(2000);
    const count = await sandbox.git(['--git-dir', bare, 'for-each-ref', '--count=3000', '--format=x', 'refs/tags/']);
    expect(count.split('\n')).toHaveLength(2002);
  });
});
