import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createGitSandbox } from './git.js';
import { ensureHistory } from './history.js';

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
});
