import type { GitObject, MemoryObjectStore, ObjectId, ObjectStore, ObjectType, StoredPack } from '@gitport/pack';
import { describe, expect, it } from 'vitest';
import { connectionPair } from './channel.js';
import { clone } from './fetch-client.js';
import { PackReuseCache } from './pack-reuse.js';
import { chain, emptyRepo, packOf } from './test-repo.js';
import { serveUploadPack } from './upload-pack.js';

/** An ObjectStore class whose state is in #private fields: reached through `this` only. */
class PrivateStore implements ObjectStore {
  readonly #inner: MemoryObjectStore;
  readonly #pack: Uint8Array | undefined;
  #reads = 0;
  #finds = 0;

  constructor(inner: MemoryObjectStore, pack?: Uint8Array) {
    this.#inner = inner;
    this.#pack = pack;
  }

  get reads(): number {
    return this.#reads;
  }

  get finds(): number {
    return this.#finds;
  }

  has(oid: ObjectId): Promise<boolean> {
    return this.#inner.has(oid);
  }

  read(oid: ObjectId): Promise<GitObject | undefined> {
    this.#reads++;
    return this.#inner.read(oid);
  }

  readSync(oid: ObjectId): GitObject | undefined {
    this.#reads++;
    return this.#inner.readSync(oid);
  }

  write(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
    return this.#inner.write(type, data);
  }

  async findPack(oids: readonly ObjectId[]): Promise<StoredPack | undefined> {
    this.#finds++;
    const pack = this.#pack;
    if (pack === undefined || oids.length !== this.#inner.size) return undefined;
    for (const oid of oids) if (!(await this.#inner.has(oid))) return undefined;
    return {
      ofsDeltas: false,
      async *stream() {
        yield pack.slice();
      },
    };
  }
}

describe('PackReuseCache', () => {
  it('keeps a few wants sets per store, forgets the oldest, and forgets a pack the store lost', async () => {
    const repo = emptyRepo();
    await chain(repo, 2);
    const all = [...repo.objects.keys()];
    const cache = new PackReuseCache(2);
    const withPack = new PrivateStore(repo.objects, await packOf(repo.objects, all));
    const withoutPack = new PrivateStore(repo.objects);
    expect(await cache.stream(withPack, 'a', true)).toBeUndefined();
    cache.remember(withPack, 'a', all);
    cache.remember(withPack, 'b', all);
    expect(await cache.stream(withPack, 'a', true)).toBeDefined();
    cache.remember(withPack, 'c', all); // 'a' is the oldest entry
    expect(await cache.stream(withPack, 'a', true)).toBeUndefined();
    expect(await cache.stream(withPack, 'b', true)).toBeDefined();
    // entries are per store
    expect(await cache.stream(withoutPack, 'b', true)).toBeUndefined();
    cache.remember(withoutPack, 'b', all);
    const finds = withoutPack.finds;
    expect(await cache.stream(withoutPack, 'b', true)).toBeUndefined();
    // forgotten: no second lookup
    expect(await cache.stream(withoutPack, 'b', true)).toBeUndefined();
    expect(withoutPack.finds).toBe(finds + 1);
  });

  it('lets upload-pack reuse a stored pack of a store with #private fields without walking again', async () => {
    const repo = emptyRepo();
    const commits = await chain(repo, 8);
    await repo.refs.update([{ name: 'refs/heads/main', old: null, new: commits[7]! }]);
    const all = [...repo.objects.keys()];
    const store = new PrivateStore(repo.objects, await packOf(repo.objects, all));
    const hosted = { objects: store, refs: repo.refs };
    const cloneOnce = async () => {
      const [a, b] = connectionPair();
      const served = serveUploadPack(hosted, b);
      const local = emptyRepo();
      const before = store.reads;
      const result = await clone(local, { connection: a });
      await served;
      for (const oid of all) expect(await local.objects.has(oid)).toBe(true);
      return { result, reads: store.reads - before };
    };
    const first = await cloneOnce();
    const second = await cloneOnce();
    expect(store.finds).toBe(2);
    expect(first.reads).toBeGreaterThan(all.length / 2);
    expect(second.reads).toBeLessThan(first.reads / 2);
    expect(second.result.pack?.hash).toBe(first.result.pack?.hash);
  });
});
