import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdvertisementCache } from './advertisement-cache.js';
import { createDemoRepository } from './demo-repository.js';

let root: string;
let gitDir: string;
const git = (...args: string[]) =>
  execFileSync('git', ['--git-dir', gitDir, ...args])
    .toString()
    .trim();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gitport-adcache-'));
  gitDir = await createDemoRepository(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('AdvertisementCache', () => {
  it('reloads only when the refs on disk change, and shares one load between concurrent requests', async () => {
    const cache = new AdvertisementCache(0);
    let loads = 0;
    const load = async () => {
      loads++;
      return new TextEncoder().encode(git('for-each-ref'));
    };
    const dir = async () => gitDir;
    const first = await Promise.all(Array.from({ length: 10 }, () => cache.get('demo', 'k', dir, load)));
    expect(loads).toBe(1);
    expect(new Set(first).size).toBe(1);
    await cache.get('demo', 'k', dir, load);
    expect(loads).toBe(1);

    // real git changes the repository directly: a new loose ref, a moved ref, packed refs
    const head = git('rev-parse', 'HEAD');
    const parent = git('rev-parse', 'HEAD~1');
    for (const change of [
      () => git('update-ref', 'refs/heads/topic', head),
      () => git('update-ref', 'refs/heads/topic', parent),
      () => git('pack-refs', '--all'),
      () => git('update-ref', '-d', 'refs/heads/topic'),
      () => git('symbolic-ref', 'HEAD', 'refs/heads/other'),
    ]) {
      const before = loads;
      change();
      const bytes = await cache.get('demo', 'k', dir, load);
      expect(loads).toBe(before + 1);
      expect(new TextDecoder().decode(bytes)).toBe(git('for-each-ref'));
    }
    cache.drop('demo');
    await cache.get('demo', 'k', dir, load);
    expect(loads).toBe(7);
  });

  it('trusts an entry for revalidateMs without touching the disk', async () => {
    const cache = new AdvertisementCache(60_000);
    let dirs = 0;
    const dir = async () => {
      dirs++;
      return gitDir;
    };
    const load = async () => new Uint8Array([1]);
    await cache.get('demo', 'x', dir, load);
    await cache.get('demo', 'x', dir, load);
    expect(dirs).toBe(1);
  });
});
