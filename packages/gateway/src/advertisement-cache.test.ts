import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
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
afterEach(() => {
  vi.useRealTimers();
});

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

  it('revalidates in the background when a trusted entry is read in the second half of its time', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const cache = new AdvertisementCache(60_000);
    let loads = 0;
    const load = async () => {
      loads++;
      return new TextEncoder().encode(git('for-each-ref'));
    };
    const dir = async () => gitDir;
    const first = await cache.get('demo', 'k', dir, load);
    vi.setSystemTime(Date.now() + 10_000);
    expect(cache.peek('demo', 'k')).toBe(first);
    expect(loads).toBe(1);
    // real git moves a ref; past half the trusted time a read returns what it has and checks the disk
    git('update-ref', 'refs/heads/ahead', git('for-each-ref', '--count=1', '--format=%(objectname)'));
    vi.setSystemTime(Date.now() + 30_000);
    expect(cache.peek('demo', 'k')).toBe(first);
    await vi.waitFor(() => expect(new TextDecoder().decode(cache.peek('demo', 'k'))).toBe(git('for-each-ref')));
    expect(loads).toBe(2);
    // the refreshed entry is trusted from its own check, past the first one's deadline
    vi.setSystemTime(Date.now() + 25_000);
    expect(cache.peek('demo', 'k')).not.toBe(first);
    vi.setSystemTime(Date.now() + 60_000);
    expect(cache.peek('demo', 'k')).toBeUndefined();
    git('update-ref', '-d', 'refs/heads/ahead');
  });

  it('does not keep what a load read before a drop, nor let later requests join it', async () => {
    const cache = new AdvertisementCache(60_000);
    const releases: ((bytes: Uint8Array) => void)[] = [];
    const load = () => new Promise<Uint8Array>((resolve) => releases.push(resolve));
    const dir = async () => gitDir;
    const before = cache.get('demo', 'k', dir, load);
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    cache.drop('demo');
    const after = cache.get('demo', 'k', dir, load);
    await vi.waitFor(() => expect(releases).toHaveLength(2));
    releases[0]!(new Uint8Array([1]));
    expect(await before).toEqual(new Uint8Array([1]));
    expect(cache.peek('demo', 'k')).toBeUndefined();
    releases[1]!(new Uint8Array([2]));
    expect(await after).toEqual(new Uint8Array([2]));
    expect(cache.peek('demo', 'k')).toEqual(new Uint8Array([2]));
  });
});
