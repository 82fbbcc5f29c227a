import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { afterAll, describe, expect, it } from 'vitest';
import { defaults, ensureHistory, fastImportStream, HISTORY_PRESETS, historyKey } from './history.js';

const sha256 = (chunks: Iterable<Uint8Array>) => {
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c);
  return hash.digest('hex');
};

describe('seeded fast-import history', () => {
  const cacheDirs: string[] = [];
  afterAll(async () => {
    for (const dir of cacheDirs) await rm(dir, { recursive: true, force: true });
  });

  it('is reproducible and fsck-clean, with merges, renames, binaries, large blobs and tags', async () => {
    const sandbox = await createGitSandbox();
    try {
      const a = await mkdtemp(join(tmpdir(), 'gitport-history-a-'));
      const b = await mkdtemp(join(tmpdir(), 'gitport-history-b-'));
      cacheDirs.push(a, b);
      const options = { commits: 300, seed: 7, largeEvery: 150, largeSize: 300_000, tagEvery: 50 };
      const [first, second] = await Promise.all([ensureHistory(options, a), ensureHistory(options, b)]);
      const head = (dir: string) => sandbox.git(['--git-dir', dir, 'rev-parse', 'refs/heads/main']);
      expect(await head(first.gitDir)).toBe(await head(second.gitDir));
      await sandbox.git(['--git-dir', first.gitDir, 'fsck', '--full', '--strict']);

      const commits = Number(await sandbox.git(['--git-dir', first.gitDir, 'rev-list', '--count', 'main']));
      expect(commits).toBeGreaterThan(300);
      const merges = Number(await sandbox.git(['--git-dir', first.gitDir, 'rev-list', '--count', '--merges', 'main']));
      expect(merges).toBe(5); // c = 50, 100, …, 250
      const renames = await sandbox.git([
        '--git-dir',
        first.gitDir,
        'log',
        '--diff-filter=R',
        '--name-status',
        '--format=',
        'main',
      ]);
      expect(renames).toMatch(/^R100\t/m);
      const tags = (
        await sandbox.git(['--git-dir', first.gitDir, 'for-each-ref', '--format=%(objecttype) %(refname)', 'refs/tags'])
      ).split('\n');
      expect(tags).toContain('tag refs/tags/v0.1.0');
      expect(tags).toContain('commit refs/tags/light-250');
      expect(tags.length).toBe(6);
      const sizes = await sandbox.git([
        '--git-dir',
        first.gitDir,
        'cat-file',
        '--batch-all-objects',
        '--batch-check=%(objectsize)',
      ]);
      expect(Math.max(...sizes.split('\n').map(Number))).toBe(300_000);

      // a second call reuses the cached repository
      const again = await ensureHistory(options, a);
      expect(again.gitDir).toBe(first.gitDir);
    } finally {
      await sandbox.cleanup();
    }
  });

  it('keeps the flat shape byte-identical (existing fixtures and their cache keys)', () => {
    const options = defaults({ commits: 300, seed: 7, largeEvery: 150, largeSize: 300_000, tagEvery: 50 });
    expect(historyKey(options)).toBe('v1-c300-s7-f60-l150x300000-b40-m50-t50');
    expect(sha256(fastImportStream(options))).toBe('5d0eec5ccb6ee0d67e92e8e96988b458898f2eb9849b63ef537d123b89834c55');
    const bench = defaults({ commits: 1500, seed: 1 });
    expect(historyKey(bench)).toBe('v1-c1500-s1-f60-l0x2097152-b40-m50-t100');
    expect(sha256(fastImportStream(bench))).toBe('30ef3094c504df5ff8366b42593ec37dc481e3932c3aff84d17742a15e2fbc51');
  });

  it('builds a source-repository shape: nested directories, topic merges, renames, many tags', async () => {
    const sandbox = await createGitSandbox();
    try {
      const a = await mkdtemp(join(tmpdir(), 'gitport-history-src-'));
      cacheDirs.push(a);
      const options = { ...HISTORY_PRESETS.small, commits: 800, seed: 3, tagEvery: 40 };
      expect(historyKey(defaults(options))).toBe('src1-c800-s3-f300-d40-m8-t40');
      // the stream is reproducible without building anything
      expect(sha256(fastImportStream(defaults(options)))).toBe(sha256(fastImportStream(defaults(options))));
      const { gitDir } = await ensureHistory(options, a);
      const git = (...args: string[]) => sandbox.git(['--git-dir', gitDir, ...args]);
      await git('fsck', '--full', '--strict');

      // every commit of the stream is reachable from some ref
      expect(Number(await git('rev-list', '--count', '--all'))).toBe(800);
      const merges = (await git('rev-list', '--merges', '--parents', 'main')).split('\n');
      expect(merges.length).toBeGreaterThan(30);
      // topics fork from an older main and main moves on before the merge: both parents carry changes
      const [merge, first, second] = merges[merges.length - 1]!.split(' ') as [string, string, string];
      expect(await git('merge-base', first, second)).not.toBe(first);
      expect(await git('diff', '--name-only', first, merge)).not.toBe('');

      const tags = (await git('for-each-ref', '--format=%(objecttype)', 'refs/tags')).split('\n');
      expect(tags.length).toBe(20);
      expect(tags.filter((t) => t === 'commit').length).toBe(2);
      expect(await git('rev-parse', 'refs/heads/maint')).toMatch(/^[0-9a-f]{40}$/);

      const renames = await git('log', '--diff-filter=R', '--name-status', '--format=', 'main');
      expect(renames).toMatch(/^R100\t/m);
      const trees = (await git('ls-tree', '-r', '-t', '--name-only', 'main')).split('\n');
      const files = (await git('ls-tree', '-r', '--name-only', 'main')).split('\n');
      expect(trees.length - files.length).toBeGreaterThanOrEqual(35);
      expect(Math.max(...files.map((f) => f.split('/').length))).toBeGreaterThanOrEqual(4);
      expect(files.length).toBeGreaterThan(300);
      // small edits: most commits on main change a few files
      const changed = (await git('log', '--no-merges', '--format=', '--shortstat', '-n', '200', 'main'))
        .split('\n')
        .filter(Boolean)
        .map((l) => Number(/(\d+) files? changed/.exec(l)?.[1]));
      expect(median(changed)).toBeLessThanOrEqual(2);
    } finally {
      await sandbox.cleanup();
    }
  });
});

function median(values: number[]): number {
  return [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
}
