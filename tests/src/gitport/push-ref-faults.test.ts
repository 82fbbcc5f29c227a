/**
 * Real `git push` against a gitport host whose repository is on disk (git's `ext::` transport
 * and ext-bridge.ts, which serves `<root>/<name>.git` through FsRefStore): pushes that fail for
 * a ref at the file-system level change nothing they must not, and leave nothing that blocks a
 * later push.
 */
import { mkdir, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeCommand } from '@gitport/test-helpers/ts-worker';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

describe('real git pushes that fail for one ref, against a gitport host on disk', () => {
  let sandbox: GitSandbox;
  let url: string;
  let bare: string;
  let work: string;
  let tip: string;
  let next: string;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-push-faults-');
    work = sandbox.path('work');
    await sandbox.git(['init', '-q', work]);
    for (const n of [1, 2]) {
      await writeFile(`${work}/f.txt`, `line ${n}\n`);
      await sandbox.git(['add', '.'], { cwd: work });
      await sandbox.git(['commit', '-qm', `c${n}`], { cwd: work });
    }
    bare = sandbox.path('root', 'demo.git');
    // a bare clone: its refs are in packed-refs, as in most served repositories
    await sandbox.git(['clone', '-q', '--bare', work, bare]);
    tip = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    await writeFile(`${work}/f.txt`, 'line 3\n');
    await sandbox.git(['commit', '-qam', 'c3'], { cwd: work });
    next = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    const command = tsNodeCommand(new URL('./ext-bridge.ts', import.meta.url));
    url = `ext::${command.join(' ')} %S ${sandbox.path('root')} demo`;
  });
  afterEach(() => sandbox.cleanup());

  const refs = () => sandbox.git(['--git-dir', bare, 'for-each-ref', '--format=%(objectname) %(refname)']);
  const push = (...args: string[]) =>
    sandbox.run(['push', '--porcelain', url, ...args], { cwd: work, allowFailure: true });
  const exists = async (path: string) => (await stat(`${bare}/${path}`).catch(() => undefined)) !== undefined;
  const leftovers = async () =>
    (await readdir(bare, { recursive: true })).filter((p) => p.endsWith('.lock') || p.includes('tmp_'));

  it('a push refused for a directory/file clash leaves nothing behind: the clashing ref still takes pushes', async () => {
    const refused = await push('HEAD:refs/heads/main/x');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr + new TextDecoder().decode(refused.stdout)).toMatch(/refs\/heads\/main\/x/);
    expect(await exists('refs/heads/main')).toBe(false);
    const pushed = await push('HEAD:main');
    expect(pushed.stderr).not.toMatch(/error|rejected/);
    expect(pushed.code).toBe(0);
    expect(await refs()).toBe(`${next} refs/heads/main`);

    // a ref pushed, deleted, then its name as a directory's: no empty directory is in the way
    expect((await push('HEAD:refs/heads/nest/x')).code).toBe(0);
    expect((await push(':refs/heads/nest/x')).code).toBe(0);
    expect(await exists('refs/heads/nest')).toBe(false);
    expect((await push('HEAD:refs/heads/nest')).code).toBe(0);
    expect(await refs()).toBe(`${next} refs/heads/main\n${next} refs/heads/nest`);
    expect(await leftovers()).toEqual([]);
    await sandbox.git(['--git-dir', bare, 'fsck', '--strict']);
  });

  it('an atomic push that fails for one ref at the fs level moves no ref, and says why', async () => {
    // a ref git lists (and so updates) before main
    await sandbox.git(['--git-dir', bare, 'update-ref', 'refs/heads/early', tip]);
    const before = await refs();
    // a directory that holds a file where the (packed) main's loose file would go
    await mkdir(`${bare}/refs/heads/main`);
    await writeFile(`${bare}/refs/heads/main/stray.lock`, '');
    const inTheWay = await push(
      '--atomic',
      'HEAD:early',
      'HEAD:refs/heads/a-new',
      'HEAD:main',
      'HEAD:refs/heads/zz-new',
    );
    expect(inTheWay.code).not.toBe(0);
    expect(await refs()).toBe(before);
    const report = new TextDecoder().decode(inTheWay.stdout);
    expect(report).toMatch(/refs\/heads\/main.*directory\/file/);
    expect(report).toMatch(/refs\/heads\/a-new.*atomic/);
    expect(report).toMatch(/refs\/heads\/early.*atomic/);

    // a lock held by another writer: the refusal names it
    await writeFile(`${bare}/refs/heads/zz-new.lock`, '');
    await utimes(`${bare}/refs/heads/main/stray.lock`, new Date(0), new Date(0));
    const locked = await push('--atomic', 'HEAD:early', 'HEAD:refs/heads/a-new', 'HEAD:main', 'HEAD:refs/heads/zz-new');
    expect(locked.code).not.toBe(0);
    expect(new TextDecoder().decode(locked.stdout)).toMatch(
      /refs\/heads\/zz-new.*refs\/heads\/zz-new\.lock exists.*stale/,
    );
    expect(await refs()).toBe(before);
  });

  it('locks and temporary packs a crash left behind are cleared once old, and the push goes through', async () => {
    const old = new Date(Date.now() - 11 * 60 * 1000);
    for (const path of ['refs/heads/main.lock', 'objects/pack/tmp_pack_crashed', 'objects/pack/tmp_idx_crashed']) {
      await writeFile(`${bare}/${path}`, '');
      await utimes(`${bare}/${path}`, old, old);
    }
    const pushed = await push('HEAD:main');
    expect(pushed.code).toBe(0);
    expect(await refs()).toBe(`${next} refs/heads/main`);
    expect(await leftovers()).toEqual([]);
    expect(tip).not.toBe(next);
    await sandbox.git(['--git-dir', bare, 'fsck', '--strict']);
  });
});
