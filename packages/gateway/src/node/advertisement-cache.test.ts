import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AdvertisementCache, readRefsStamp } from './advertisement-cache.js';
import { createDemoRepository } from './demo-repository.js';

let root: string;
let gitDir: string;
const git = (...args: string[]) =>
  execFileSync('git', ['--git-dir', gitDir, ...args])
    .toString()
    .trim();

/** Moves the refs' file times into the past, as if the repository had not changed for a while. */
async function backdateRefs(dir: string, past: number = Date.now() / 1000 - 60): Promise<void> {
  const touch = (path: string) => utimes(path, past, past).catch(() => {});
  await touch(join(dir, 'HEAD'));
  await touch(join(dir, 'packed-refs'));
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) if (e.isDirectory()) await walk(join(d, e.name));
    await touch(d);
  };
  await walk(join(dir, 'refs'));
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gitport-adcache-'));
  gitDir = await createDemoRepository(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('AdvertisementCache', () => {
  it('reloads only when the refs on disk change, and shares one load between concurrent requests', async () => {
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
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

  it('forgets every repository on clear, and a load in flight then is not kept', async () => {
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
    let loads = 0;
    const load = async () => {
      loads++;
      return new TextEncoder().encode(git('for-each-ref'));
    };
    const dir = async () => gitDir;
    await cache.get('a', 'k', dir, load);
    await cache.get('b', 'k', dir, load);
    expect(cache.peek('a', 'k')).toBeDefined();
    expect(cache.peek('b', 'k')).toBeDefined();
    const inFlight = cache.get('c', 'k', dir, load);
    cache.clear();
    await inFlight;
    expect(cache.peek('a', 'k')).toBeUndefined();
    expect(cache.peek('b', 'k')).toBeUndefined();
    expect(cache.peek('c', 'k')).toBeUndefined();
    await cache.get('a', 'k', dir, load);
    expect(loads).toBe(4);
  });

  it('sees refs written straight to disk at once: moved, nested, twice in one tick, and HEAD', async () => {
    git('symbolic-ref', 'HEAD', 'refs/heads/main');
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
    let loads = 0;
    const load = async () => {
      loads++;
      return new TextEncoder().encode(git('for-each-ref') + git('symbolic-ref', 'HEAD'));
    };
    const expected = () => git('for-each-ref') + git('symbolic-ref', 'HEAD');
    const dir = async () => gitDir;
    const first = await cache.get('demo', 'k', dir, load);
    // settled and unchanged: answered synchronously from memory, no load
    expect(cache.peek('demo', 'k')).toBe(first);
    expect(loads).toBe(1);
    const head = git('rev-parse', 'refs/heads/main');
    const parent = git('rev-parse', 'refs/heads/main~1');
    git('update-ref', 'refs/heads/deep/er/still', head);
    await backdateRefs(gitDir);
    await cache.get('demo', 'k', dir, load);
    expect(cache.peek('demo', 'k')).toBeDefined();
    for (const change of [
      // a loose ref in a nested directory changes that directory only
      () => git('update-ref', 'refs/heads/deep/er/still', parent),
      // and again at once, most likely within the same clock tick
      () => git('update-ref', 'refs/heads/deep/er/still', head),
      () => git('update-ref', 'refs/heads/deep/er/still', parent),
      () => git('symbolic-ref', 'HEAD', 'refs/heads/deep/er/still'),
      () => git('symbolic-ref', 'HEAD', 'refs/heads/main'),
      () => git('pack-refs', '--all'),
      () => git('update-ref', '-d', 'refs/heads/deep/er/still'),
    ]) {
      change();
      // a check serves the rest of the synchronous run it was made in (requests sent before it)
      await Promise.resolve();
      expect(cache.peek('demo', 'k')).toBeUndefined();
      expect(new TextDecoder().decode(await cache.get('demo', 'k', dir, load))).toBe(expected());
    }
  });

  it("checks a repository's refs once per synchronous run for all its advertisements", async () => {
    git('symbolic-ref', 'HEAD', 'refs/heads/main');
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
    const dir = async () => gitDir;
    const keys = ['upload', 'upload-v2', 'receive'];
    for (const key of keys) await cache.get('demo', key, dir, async () => new TextEncoder().encode(key));
    const paths = (await readRefsStamp(gitDir)).paths.length;
    await Promise.resolve();
    // one run: the first key's check stats each path once, the other keys reuse those stats
    const before = cache.syncStats;
    for (const key of keys) expect(cache.peek('demo', key)).toBeDefined();
    const oneCheck = cache.syncStats - before;
    expect(oneCheck).toBe(paths);
    for (const key of keys) expect(cache.peek('demo', key)).toBeDefined();
    expect(cache.syncStats - before).toBe(oneCheck);
    // the next run checks again, and sees a ref written in between for every key
    await Promise.resolve();
    for (const key of keys) expect(cache.peek('demo', key)).toBeDefined();
    expect(cache.syncStats - before).toBe(2 * oneCheck);
    git('update-ref', 'refs/heads/shared-check', git('rev-parse', 'HEAD'));
    await Promise.resolve();
    for (const key of keys) expect(cache.peek('demo', key)).toBeUndefined();
    git('update-ref', '-d', 'refs/heads/shared-check');
  });

  it('trusts whole-second times (a coarse file system) only much later than sub-second ones', async () => {
    const cache = new AdvertisementCache();
    const load = async () => new TextEncoder().encode(git('for-each-ref'));
    const dir = async () => gitDir;
    // one to two seconds ago, in whole seconds: two updates that far apart could share a time
    await backdateRefs(gitDir, Math.floor(Date.now() / 1000) - 1);
    await cache.get('demo', 'k', dir, load);
    expect(cache.peek('demo', 'k')).toBeUndefined();
    // as long ago, with a fraction of a second: a file system with fine times, settled
    await backdateRefs(gitDir, Date.now() / 1000 - 1.5 + 0.000_123);
    await cache.get('demo', 'k', dir, load);
    expect(cache.peek('demo', 'k')).toBeDefined();
  });

  it('answers a request that arrives during a check from a check that starts after it', async () => {
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
    const releases: ((bytes: Uint8Array) => void)[] = [];
    const load = () => new Promise<Uint8Array>((resolve) => releases.push(resolve));
    const dir = async () => gitDir;
    const early = cache.get('demo', 'k', dir, load);
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    git('update-ref', 'refs/heads/late', git('rev-parse', 'refs/heads/main'));
    const late = cache.get('demo', 'k', dir, load);
    const alsoLate = cache.get('demo', 'k', dir, load);
    releases[0]!(new Uint8Array([1]));
    expect(await early).toEqual(new Uint8Array([1]));
    // the refs changed after the first check began: the late requests share a second one
    await vi.waitFor(() => expect(releases).toHaveLength(2));
    releases[1]!(new Uint8Array([2]));
    expect(await late).toEqual(new Uint8Array([2]));
    expect(await alsoLate).toEqual(new Uint8Array([2]));
    expect(releases).toHaveLength(2);
    git('update-ref', '-d', 'refs/heads/late');
  });

  it('does not keep what a load read before a drop, nor let later requests join it', async () => {
    await backdateRefs(gitDir);
    const cache = new AdvertisementCache();
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
