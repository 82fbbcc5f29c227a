import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GitFs } from './fs.js';
import { nodeFs } from './fs.node.js';
import { FsRepositoryRegistry } from './registry.js';
import { removeStaleFiles } from './stale-files.js';

describe('removeStaleFiles', () => {
  let sandbox: GitSandbox;
  let gitDir: string;
  let head: string;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-stale-');
    const work = sandbox.path('work');
    await sandbox.git(['init', '-q', work]);
    await writeFile(`${work}/f.txt`, 'x\n');
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'c'], { cwd: work });
    head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    gitDir = sandbox.path('root', 'r.git');
    await sandbox.git(['clone', '-q', '--bare', work, gitDir]);
    await sandbox.git(['--git-dir', gitDir, 'update-ref', 'refs/heads/topic/a', head]);
  });
  afterEach(() => sandbox.cleanup());

  const old = new Date(Date.now() - 11 * 60 * 1000);
  /** Writes a file in the git directory, aged past the default bound unless `fresh`. */
  const leave = async (path: string, fresh = false) => {
    const full = `${gitDir}/${path}`;
    await mkdir(full.slice(0, full.lastIndexOf('/')), { recursive: true });
    await writeFile(full, path.startsWith('refs/') ? `${head}\n` : 'left by a crash');
    if (!fresh) await utimes(full, old, old);
  };
  const files = async () => (await readdir(gitDir, { recursive: true })).sort();

  it('removes old ref locks and temporary packs and objects, keeps young ones and everything else', async () => {
    const stale = [
      'HEAD.lock',
      'packed-refs.lock',
      'refs/heads/main.lock',
      'refs/heads/gone/deep/x.lock',
      'refs/heads/topic/.tmp-a',
      'objects/pack/tmp_pack_Ab12Cd',
      'objects/pack/tmp_idx_Ab12Cd',
      'objects/pack/tmp_obj_mh3k2_0',
      'objects/tmp_obj_XyZ123',
      'objects/ab/tmp_obj_q1w2e3',
    ];
    const young = ['refs/heads/busy.lock', 'objects/pack/tmp_pack_live'];
    // old, but none of these is a crashed writer's file
    const kept = ['refs/heads/old-ref-name-like.lockx', 'objects/pack/pack-keep.keep', 'objects/info/alternates-x'];
    for (const path of [...stale, ...kept]) await leave(path);
    for (const path of young) await leave(path, true);
    const before = await files();

    const report = await removeStaleFiles(new GitFs(nodeFs()), gitDir);
    expect(report.failed).toEqual([]);
    expect([...report.removed].sort()).toEqual([...stale].sort());
    // the directories only the stale files were in are gone (not refs/heads, nor object directories)
    const gone = new Set([...stale, 'refs/heads/gone', 'refs/heads/gone/deep']);
    expect(await files()).toEqual(before.filter((p) => !gone.has(p)));
    expect(await sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(refname)'])).toBe(
      'refs/heads/main\nrefs/heads/old-ref-name-like.lockx\nrefs/heads/topic/a',
    );
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--strict']);

    // the bound is an option; a second run finds nothing more
    expect((await removeStaleFiles(new GitFs(nodeFs()), gitDir, { staleAfterMs: 60 * 60 * 1000 })).removed).toEqual([]);
    const later = await removeStaleFiles(new GitFs(nodeFs()), gitDir, { now: () => Date.now() + 11 * 60 * 1000 });
    expect(later.removed.sort()).toEqual([...young].sort());
  });

  it('removes a quarantine directory once nothing inside it is recent, whole', async () => {
    const abandoned = 'objects/tmp_objdir-incoming-crashed';
    const live = 'objects/tmp_objdir-incoming-live';
    for (const dir of [abandoned, live]) {
      await leave(`${dir}/objects/pack/tmp_pack_x`);
      await leave(`${dir}/objects/pack/pack-1.pack`);
    }
    // a push still writing: one file inside is recent, although the directories are old
    await leave(`${live}/objects/pack/tmp_pack_y`, true);
    for (const dir of [abandoned, live]) {
      for (const sub of ['/objects/pack', '/objects', '']) await utimes(`${gitDir}/${dir}${sub}`, old, old);
    }

    const report = await removeStaleFiles(new GitFs(nodeFs()), gitDir);
    expect(report.failed).toEqual([]);
    expect(report.removed).toEqual([abandoned]);
    const left = await files();
    expect(left.some((p) => p.startsWith(abandoned))).toBe(false);
    expect(left).toContain(`${live}/objects/pack/tmp_pack_y`);
    expect(left).toContain(`${live}/objects/pack/tmp_pack_x`);
  });

  it('runs when a registry first opens a repository, so a crashed push blocks no ref', async () => {
    await leave('refs/heads/main.lock');
    await leave('objects/pack/tmp_pack_crashed');
    const registry = new FsRepositoryRegistry(nodeFs(), sandbox.path('root'));
    const repository = await registry.open('r');
    expect(await files()).not.toContain('refs/heads/main.lock');
    expect(await files()).not.toContain('objects/pack/tmp_pack_crashed');
    const [result] = await repository!.refs.update([{ name: 'refs/heads/main', old: head, new: null }]);
    expect(result?.status).toBe('ok');
  });
});
