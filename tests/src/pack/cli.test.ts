/**
 * `gitport pack-objects` and `gitport index-pack` side by side with git's plumbing of the same
 * names: git accepts what they write, and they pack and store the same objects.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeCommand } from '@gitport/test-helpers/ts-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { verifyPackStats } from './helpers.js';

let sandbox: GitSandbox;
let gitDir: string;
const [node, ...nodeArgs] = tsNodeCommand(new URL('./gitport-cli.ts', import.meta.url));

const gitport = (args: string[], input?: Uint8Array | string) =>
  sandbox.exec(node!, [...nodeArgs, ...args], input === undefined ? {} : { input });

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-cli-');
  gitDir = (await ensureHistory({ commits: 80, seed: 21 })).gitDir;
});

afterAll(async () => {
  await sandbox?.cleanup();
});

const objectsOf = (verify: string) =>
  new Set(
    verify
      .split('\n')
      .filter((l) => /^[0-9a-f]{40} (commit|tree|blob|tag) /.test(l))
      .map((l) => l.slice(0, 40)),
  );

describe('gitport pack-objects', () => {
  it('--all: git index-pack --strict accepts the pack; same objects as git pack-objects --all', async () => {
    const ours = await gitport(['pack-objects', '--git-dir', gitDir, '--all', '--stdout']);
    expect(ours.stderr).toBe('');
    expect(ours.code).toBe(0);
    const theirs = await sandbox.run(['--git-dir', gitDir, 'pack-objects', '--revs', '--all', '--stdout', '-q'], {
      input: '',
    });
    const check = async (name: string, pack: Uint8Array) => {
      const repo = sandbox.path(`${name}.git`);
      await sandbox.git(['init', '-q', '--bare', repo]);
      const out = await sandbox.git(['--git-dir', repo, 'index-pack', '--stdin', '--strict'], { input: pack });
      const hash = out.trim().replace(/^pack\t/, '');
      return sandbox.git(['verify-pack', '-v', join(repo, 'objects', 'pack', `pack-${hash}.idx`)]);
    };
    const a = await check('ours-all', ours.stdout);
    const b = await check('theirs-all', theirs.stdout);
    expect(objectsOf(a)).toEqual(objectsOf(b));
    expect(verifyPackStats(a).deltas).toBeGreaterThan(0);
  });

  it('--revs reads <oid> and ^<oid> lines; --no-delta writes no deltas; --window/--depth accepted', async () => {
    const head = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'HEAD']);
    const old = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'HEAD~10']);
    const input = `${head}\n^${old}\n`;
    const ours = await gitport(
      ['pack-objects', '--git-dir', gitDir, '--revs', '--window', '5', '--depth', '10', '--stdout'],
      input,
    );
    expect(ours.code).toBe(0);
    const theirs = await sandbox.run(['--git-dir', gitDir, 'pack-objects', '--revs', '--stdout', '-q'], { input });
    const file = (n: string) => sandbox.path(`${n}.pack`);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file('revs-ours'), ours.stdout);
    await writeFile(file('revs-theirs'), theirs.stdout);
    // (--strict checks links to objects outside an incremental pack: it needs the repository)
    await sandbox.git(['--git-dir', gitDir, 'index-pack', '--strict', file('revs-ours')]);
    await sandbox.git(['index-pack', file('revs-theirs')]);
    const a = await sandbox.git(['verify-pack', '-v', file('revs-ours').replace('.pack', '.idx')]);
    const b = await sandbox.git(['verify-pack', '-v', file('revs-theirs').replace('.pack', '.idx')]);
    expect(objectsOf(a)).toEqual(objectsOf(b));

    const plain = await gitport(['pack-objects', '--git-dir', gitDir, '--revs', '--no-delta', '--stdout'], input);
    await writeFile(file('revs-plain'), plain.stdout);
    await sandbox.git(['--git-dir', gitDir, 'index-pack', '--strict', file('revs-plain')]);
    const c = await sandbox.git(['verify-pack', '-v', file('revs-plain').replace('.pack', '.idx')]);
    expect(verifyPackStats(c).deltas).toBe(0);
    expect(objectsOf(c)).toEqual(objectsOf(b));
  });

  it('over a pack with a bitmap git wrote: the same objects as git, --all and --revs, and --no-delta', async () => {
    const repo = sandbox.path('bitmapped.git');
    await sandbox.git(['clone', '--quiet', '--bare', '--no-local', gitDir, repo]);
    await sandbox.git(['--git-dir', repo, 'repack', '-adbq']);
    const packs = await readdir(join(repo, 'objects', 'pack'));
    expect(packs.some((f) => f.endsWith('.bitmap'))).toBe(true);
    // a commit pushed since: loose, outside the bitmapped pack
    const tree = await sandbox.git(['--git-dir', repo, 'rev-parse', 'HEAD^{tree}']);
    const pushed = await sandbox.git(['--git-dir', repo, 'commit-tree', tree, '-p', 'HEAD', '-m', 'pushed']);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'HEAD', pushed]);
    const old = await sandbox.git(['--git-dir', repo, 'rev-parse', 'HEAD~30']);
    const runs: [string, string[], string][] = [
      ['all', ['--all'], ''],
      ['revs', ['--revs'], `${pushed}\n^${old}\n`],
      ['no-delta', ['--all', '--no-delta'], ''],
    ];
    for (const [name, args, input] of runs) {
      const ours = await gitport(['pack-objects', '--git-dir', repo, ...args, '--stdout'], input);
      expect(ours.code, ours.stderr).toBe(0);
      const target = sandbox.path(`bitmapped-${name}.git`);
      await sandbox.git(['init', '-q', '--bare', target]);
      // the receiver of a ^old pack has old (--strict checks every link)
      if (name === 'revs') await sandbox.git(['--git-dir', target, 'fetch', '--quiet', repo, `${old}:refs/heads/old`]);
      const out = await sandbox.git(['--git-dir', target, 'index-pack', '--stdin', '--strict'], {
        input: ours.stdout,
      });
      const hash = out.trim().replace(/^pack\t/, '');
      const verify = await sandbox.git(['verify-pack', '-v', join(target, 'objects', 'pack', `pack-${hash}.idx`)]);
      const expected = (
        await sandbox.git([
          '--git-dir',
          repo,
          'rev-list',
          '--objects',
          '--use-bitmap-index',
          ...(name === 'revs' ? [pushed, `^${old}`] : ['--all']),
        ])
      )
        .split('\n')
        .map((l) => l.slice(0, 40));
      expect(objectsOf(verify), name).toEqual(new Set(expected));
      if (name === 'no-delta') expect(verifyPackStats(verify).deltas).toBe(0);
    }
  });

  it('usage errors exit 129; a bad revision exits 128 with a message', async () => {
    expect((await gitport(['pack-objects', '--git-dir', gitDir, '--stdout'])).code).toBe(129);
    expect((await gitport(['pack-objects', '--all', '--stdout'])).code).toBe(129);
    const bad = await gitport(['pack-objects', '--git-dir', gitDir, '--revs', '--stdout'], 'no-such-ref\n');
    expect(bad.code).toBe(128);
    expect(bad.stderr).toContain("bad revision 'no-such-ref'");
  });
});

describe('gitport index-pack', () => {
  it('--stdin stores pack-<hash>.pack and .idx like git and prints pack\\t<hash>; git fsck accepts', async () => {
    const pack = await sandbox.run(
      ['--git-dir', gitDir, 'pack-objects', '--revs', '--all', '--stdout', '-q', '--delta-base-offset'],
      { input: '' },
    );
    const ours = sandbox.path('index-ours.git');
    const theirs = sandbox.path('index-theirs.git');
    await sandbox.git(['init', '-q', '--bare', ours]);
    await sandbox.git(['init', '-q', '--bare', theirs]);
    const r = await gitport(['index-pack', '--git-dir', ours, '--stdin'], pack.stdout);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const g = (await sandbox.git(['--git-dir', theirs, 'index-pack', '--stdin'], { input: pack.stdout })).replace(
      /^pack\t/,
      '',
    );
    expect(new TextDecoder().decode(r.stdout)).toBe(`pack\t${g.trim()}\n`);
    const dir = (repo: string) => join(repo, 'objects', 'pack');
    expect((await readdir(dir(ours))).sort()).toEqual([`pack-${g.trim()}.idx`, `pack-${g.trim()}.pack`]);
    const idx = (repo: string) => readFile(join(dir(repo), `pack-${g.trim()}.idx`));
    expect(Buffer.compare(await idx(ours), await idx(theirs))).toBe(0);
    for (const line of (await sandbox.git(['--git-dir', gitDir, 'show-ref'])).split('\n')) {
      const [oid, ref] = line.split(' ');
      await sandbox.git(['--git-dir', ours, 'update-ref', ref!, oid!]);
    }
    await sandbox.git(['--git-dir', ours, 'fsck', '--strict', '--no-dangling']);
  });

  it('a corrupt pack exits 128 with the error code and stores nothing', async () => {
    const repo = sandbox.path('index-bad.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const pack = await sandbox.run(['--git-dir', gitDir, 'pack-objects', '--revs', '--stdout', '-q'], {
      input: 'HEAD\n',
    });
    const bad = pack.stdout.slice();
    bad[bad.length - 30]! ^= 0x55;
    const r = await gitport(['index-pack', '--git-dir', repo, '--stdin'], bad);
    expect(r.code).toBe(128);
    expect(r.stderr).toMatch(/\[PACK_[A-Z_]+\]/);
    expect(await readdir(join(repo, 'objects', 'pack'))).toEqual([]);
  });
});
