/**
 * The RefStore conformance suite: every RefStore implementation (protocol's memory store, the
 * on-disk store of the `gitport` package, in Node and in Chromium) runs these same tests.
 *
 *   import { refStoreConformance } from '@gitport/test-helpers/ref-store-conformance';
 *   refStoreConformance('FsRefStore', async () => ({ store: new FsRefStore(fs, dir), cleanup }));
 *
 * The factory returns an empty store (no refs; HEAD may point anywhere or be missing).
 */

import { MAX_REF_COMPONENT_BYTES, type RefStore } from '@gitport/protocol';
import { describe, expect, it } from 'vitest';

export interface RefStoreFixture {
  store: RefStore;
  cleanup?: () => Promise<void>;
}

const encoder = new TextEncoder();
function compareBytes(x: string, y: string): number {
  const a = encoder.encode(x);
  const b = encoder.encode(y);
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return a.length - b.length;
}

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

export function refStoreConformance(name: string, create: () => Promise<RefStoreFixture>): void {
  const withStore = (fn: (store: RefStore) => Promise<void>) => async () => {
    const fixture = await create();
    try {
      await fn(fixture.store);
    } finally {
      await fixture.cleanup?.();
    }
  };

  describe(`RefStore conformance: ${name}`, () => {
    it(
      'creates, reads, lists sorted and filters by prefix',
      withStore(async (store) => {
        const results = await store.update([
          { name: 'refs/tags/v1', old: null, new: C },
          { name: 'refs/heads/main', old: null, new: A },
          { name: 'refs/heads/feature/x', old: null, new: B },
        ]);
        expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
        expect(await store.read('refs/heads/main')).toEqual({ kind: 'direct', oid: A });
        expect(await store.read('refs/heads/nope')).toEqual({ kind: 'missing' });
        expect((await store.list()).map((r) => r.name)).toEqual([
          'refs/heads/feature/x',
          'refs/heads/main',
          'refs/tags/v1',
        ]);
        expect(await store.list('refs/heads/')).toEqual([
          { name: 'refs/heads/feature/x', oid: B },
          { name: 'refs/heads/main', oid: A },
        ]);
        expect(await store.list('refs/remotes/')).toEqual([]);
      }),
    );

    it(
      'sorts names bytewise like git (C locale)',
      withStore(async (store) => {
        const names = [
          'refs/heads/b',
          'refs/heads/B',
          'refs/heads/a-b',
          'refs/heads/a/b',
          'refs/heads/a.b',
          'refs/heads/a_b',
        ];
        await store.update(names.map((n) => ({ name: n, old: null, new: A })));
        const expected = [...names].sort(compareBytes);
        expect((await store.list()).map((r) => r.name)).toEqual(expected);
      }),
    );

    it(
      'follows symbolic HEAD, and reports an unborn HEAD as undefined',
      withStore(async (store) => {
        await store.setSymbolic('HEAD', 'refs/heads/main');
        expect(await store.read('HEAD')).toEqual({ kind: 'symbolic', target: 'refs/heads/main' });
        expect(await store.resolve('HEAD')).toBeUndefined();
        await store.update([{ name: 'refs/heads/main', old: null, new: A }]);
        expect(await store.resolve('HEAD')).toBe(A);
        await store.setSymbolic('HEAD', 'refs/heads/dev');
        expect(await store.resolve('HEAD')).toBeUndefined();
        expect((await store.list()).some((r) => r.name === 'HEAD')).toBe(false);
      }),
    );

    it(
      'compare-and-swap: a stale old value is refused and changes nothing',
      withStore(async (store) => {
        await store.update([{ name: 'refs/heads/main', old: null, new: A }]);
        const [stale] = await store.update([{ name: 'refs/heads/main', old: B, new: C }]);
        expect(stale).toMatchObject({ status: 'rejected', reason: 'stale' });
        const [exists] = await store.update([{ name: 'refs/heads/main', old: null, new: C }]);
        expect(exists).toMatchObject({ status: 'rejected', reason: 'stale' });
        expect(await store.resolve('refs/heads/main')).toBe(A);
        const [ok] = await store.update([{ name: 'refs/heads/main', old: A, new: B }]);
        expect(ok).toEqual({ name: 'refs/heads/main', status: 'ok', old: A, new: B });
        const [unchecked] = await store.update([{ name: 'refs/heads/main', new: C }]);
        expect(unchecked?.status).toBe('ok');
        expect(await store.resolve('refs/heads/main')).toBe(C);
      }),
    );

    it(
      'deletes with compare-and-swap',
      withStore(async (store) => {
        await store.update([{ name: 'refs/heads/gone', old: null, new: A }]);
        const [bad] = await store.update([{ name: 'refs/heads/gone', old: B, new: null }]);
        expect(bad?.status).toBe('rejected');
        const [ok] = await store.update([{ name: 'refs/heads/gone', old: A, new: null }]);
        expect(ok?.status).toBe('ok');
        expect(await store.read('refs/heads/gone')).toEqual({ kind: 'missing' });
        expect(await store.list()).toEqual([]);
      }),
    );

    it(
      'non-atomic batches apply each update on its own',
      withStore(async (store) => {
        await store.update([{ name: 'refs/heads/a', old: null, new: A }]);
        const results = await store.update([
          { name: 'refs/heads/a', old: B, new: C },
          { name: 'refs/heads/b', old: null, new: B },
        ]);
        expect(results.map((r) => r.status)).toEqual(['rejected', 'ok']);
        expect(await store.resolve('refs/heads/a')).toBe(A);
        expect(await store.resolve('refs/heads/b')).toBe(B);
      }),
    );

    it(
      'atomic batches apply all or nothing',
      withStore(async (store) => {
        await store.update([{ name: 'refs/heads/a', old: null, new: A }]);
        const results = await store.update(
          [
            { name: 'refs/heads/b', old: null, new: B },
            { name: 'refs/heads/a', old: B, new: C },
            { name: 'refs/heads/c', old: null, new: C },
          ],
          { atomic: true },
        );
        expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
        expect(results[1]).toMatchObject({ reason: 'stale' });
        expect(results[0]).toMatchObject({ reason: 'atomic' });
        expect((await store.list()).map((r) => r.name)).toEqual(['refs/heads/a']);
        const ok = await store.update(
          [
            { name: 'refs/heads/a', old: A, new: B },
            { name: 'refs/heads/b', old: null, new: C },
          ],
          { atomic: true },
        );
        expect(ok.map((r) => r.status)).toEqual(['ok', 'ok']);
        expect(await store.resolve('refs/heads/a')).toBe(B);
      }),
    );

    it(
      'atomic batches with a failure in the middle change nothing',
      withStore(async (store) => {
        await store.update([
          { name: 'refs/heads/a', old: null, new: A },
          { name: 'refs/heads/taken', old: null, new: A },
          { name: 'refs/tags/old', old: null, new: A },
        ]);
        const before = await store.list();
        for (const middle of [
          // refused before any lock: a name too long for any store
          { name: `refs/heads/${'x'.repeat(5000)}`, old: null, new: B },
          // refused under the locks: a directory/file clash with an existing ref
          { name: 'refs/heads/taken/sub', old: null, new: B },
          // refused under the locks: a stale old value
          { name: 'refs/heads/taken', old: C, new: B },
        ]) {
          const results = await store.update(
            [
              { name: 'refs/heads/a', old: A, new: B },
              { name: 'refs/heads/created', old: null, new: B },
              middle,
              { name: 'refs/tags/old', old: A, new: null },
              { name: 'refs/heads/z', old: null, new: C },
            ],
            { atomic: true },
          );
          expect(
            results.map((r) => r.status),
            middle.name.slice(0, 40),
          ).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
          expect(results.map((r) => r.status === 'rejected' && r.reason)).toEqual([
            'atomic',
            'atomic',
            expect.not.stringMatching(/^atomic$/),
            'atomic',
            'atomic',
          ]);
          expect(await store.list()).toEqual(before);
        }
        // and the same batch without its failure applies whole
        const ok = await store.update(
          [
            { name: 'refs/heads/a', old: A, new: B },
            { name: 'refs/heads/created', old: null, new: B },
            { name: 'refs/tags/old', old: A, new: null },
          ],
          { atomic: true },
        );
        expect(ok.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
        expect(await store.list()).toEqual([
          { name: 'refs/heads/a', oid: B },
          { name: 'refs/heads/created', oid: B },
          { name: 'refs/heads/taken', oid: A },
        ]);
      }),
    );

    it(
      'directory/file clashes are refused; a ref deleted leaves no clash behind',
      withStore(async (store) => {
        const statuses = async (updates: Parameters<RefStore['update']>[0]) =>
          (await store.update(updates)).map((r) => (r.status === 'ok' ? 'ok' : r.reason));
        // a ref under an existing one, and one above existing ones, are refused
        expect(await statuses([{ name: 'refs/heads/main', old: null, new: A }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/main/x', old: null, new: B }])).toEqual(['invalid-name']);
        expect(await statuses([{ name: 'refs/heads/main/x/y', old: null, new: B }])).toEqual(['invalid-name']);
        // the refusal leaves nothing in the way of the ref it clashed with
        expect(await statuses([{ name: 'refs/heads/main', old: A, new: B }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/deep/a/b', old: null, new: A }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/deep', old: null, new: A }])).toEqual(['invalid-name']);
        expect(await statuses([{ name: 'refs/heads/deep/a', old: null, new: A }])).toEqual(['invalid-name']);
        // once the clashing ref is deleted, either name can be created again
        expect(await statuses([{ name: 'refs/heads/deep/a/b', old: A, new: null }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/deep', old: null, new: C }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/main', old: B, new: null }])).toEqual(['ok']);
        expect(await statuses([{ name: 'refs/heads/main/x', old: null, new: C }])).toEqual(['ok']);
        // two names of one batch that clash: neither is written; the rest of the batch is
        expect(
          await statuses([
            { name: 'refs/heads/pair', old: null, new: A },
            { name: 'refs/heads/pair/sub', old: null, new: B },
            { name: 'refs/heads/other', old: null, new: C },
          ]),
        ).toEqual(['invalid-name', 'invalid-name', 'ok']);
        expect(await store.list()).toEqual([
          { name: 'refs/heads/deep', oid: C },
          { name: 'refs/heads/main/x', oid: C },
          { name: 'refs/heads/other', oid: C },
        ]);
        expect(await store.read('refs/heads/deep')).toEqual({ kind: 'direct', oid: C });
        expect(await store.read('refs/heads/main')).toEqual({ kind: 'missing' });
      }),
    );

    it(
      'a name too long for a store is rejected with a message, not thrown, and reads as missing',
      withStore(async (store) => {
        const long = [
          `refs/heads/${'n'.repeat(5000)}`,
          `refs/heads/${'é'.repeat(200)}`,
          `refs/heads/${Array.from({ length: 200 }, (_, i) => `part${i}`).join('/')}`,
        ];
        const results = await store.update([
          ...long.map((name) => ({ name, old: null, new: A })),
          { name: 'refs/heads/short', old: null, new: A },
        ]);
        expect(results.map((r) => (r.status === 'ok' ? 'ok' : r.reason))).toEqual([
          'invalid-name',
          'invalid-name',
          'invalid-name',
          'ok',
        ]);
        for (const r of results.slice(0, 3)) expect(r.status === 'rejected' && r.message).toMatch(/too long/);
        for (const name of long) expect(await store.read(name)).toEqual({ kind: 'missing' });
        expect(await store.list()).toEqual([{ name: 'refs/heads/short', oid: A }]);
        // the longest accepted name is accepted
        const fits = `refs/heads/${'f'.repeat(MAX_REF_COMPONENT_BYTES)}`;
        expect((await store.update([{ name: fits, old: null, new: B }]))[0]?.status).toBe('ok');
        expect(await store.resolve(fits)).toBe(B);
      }),
    );

    it(
      'refuses invalid ref names without touching other refs',
      withStore(async (store) => {
        for (const bad of [
          'refs/heads/a..b',
          'refs/heads/x.lock',
          'refs/heads/sp ace',
          'refs/heads/',
          'main',
          'refs/heads/a~1',
          'refs/heads/@{x}',
        ]) {
          const [r] = await store.update([{ name: bad, old: null, new: A }]);
          expect(r, bad).toMatchObject({ status: 'rejected', reason: 'invalid-name' });
        }
        expect(await store.list()).toEqual([]);
      }),
    );

    it(
      'concurrent compare-and-swap on one ref: exactly one winner',
      withStore(async (store) => {
        await store.update([{ name: 'refs/heads/race', old: null, new: A }]);
        const attempts = await Promise.all(
          [B, C, B, C].map((value) => store.update([{ name: 'refs/heads/race', old: A, new: value }])),
        );
        const winners = attempts.filter(([r]) => r?.status === 'ok');
        expect(winners).toHaveLength(1);
        const winner = winners[0]?.[0];
        expect(await store.resolve('refs/heads/race')).toBe(winner?.status === 'ok' ? winner.new : undefined);
      }),
    );

    it(
      'handles 2,000 refs',
      withStore(async (store) => {
        const updates = Array.from({ length: 2000 }, (_, i) => ({
          name: `refs/tags/t${String(i).padStart(4, '0')}`,
          old: null,
          new: i % 2 ? A : B,
        }));
        const results = await store.update(updates);
        expect(results.every((r) => r.status === 'ok')).toBe(true);
        const listed = await store.list('refs/tags/');
        expect(listed).toHaveLength(2000);
        expect(listed[1999]).toEqual({ name: 'refs/tags/t1999', oid: A });
      }),
    );
  });
}

/**
 * For stores that offer the optional `initialize` and `prepareInitialize` (a clone's first refs
 * in one step): every such store runs these too.
 */
export function initialRefsConformance(name: string, create: () => Promise<RefStoreFixture>): void {
  const withStore = (fn: (store: RefStore) => Promise<void>) => async () => {
    const fixture = await create();
    try {
      expect(fixture.store.initialize).toBeTypeOf('function');
      expect(fixture.store.prepareInitialize).toBeTypeOf('function');
      await fn(fixture.store);
    } finally {
      await fixture.cleanup?.();
    }
  };

  describe(`RefStore first refs conformance: ${name}`, () => {
    it(
      'first refs in one step: claimed by one at a time, shown only at commit',
      withStore(async (store) => {
        const first = [
          { name: 'refs/tags/v1', oid: C },
          { name: 'refs/heads/main', oid: A },
        ];
        const claim = await store.prepareInitialize!(first);
        expect(claim).toBeDefined();
        expect(await store.list()).toEqual([]);
        // one claim at a time
        expect(await store.prepareInitialize!([{ name: 'refs/heads/other', oid: B }])).toBeUndefined();
        await claim!.abort();
        expect(await store.list()).toEqual([]);
        const again = await store.prepareInitialize!(first);
        expect(await again!.commit()).toBe(true);
        expect(await store.list()).toEqual([
          { name: 'refs/heads/main', oid: A },
          { name: 'refs/tags/v1', oid: C },
        ]);
        // a store that holds refs: refused, and so is a claim on one that got a ref since
        expect(await store.prepareInitialize!([{ name: 'refs/heads/other', oid: B }])).toBeUndefined();
        expect(await store.initialize!([{ name: 'refs/heads/other', oid: B }])).toBe(false);
      }),
    );

    it(
      'a claim on first refs answers false at commit when a ref was written meanwhile, and writes nothing',
      withStore(async (store) => {
        const claim = await store.prepareInitialize!([{ name: 'refs/heads/main', oid: A }]);
        expect(claim).toBeDefined();
        expect((await store.update([{ name: 'refs/heads/side', old: null, new: B }]))[0]!.status).toBe('ok');
        expect(await claim!.commit()).toBe(false);
        expect(await store.list()).toEqual([{ name: 'refs/heads/side', oid: B }]);
        // the claim was released: once the store is empty again, it can be claimed
        expect((await store.update([{ name: 'refs/heads/side', old: B, new: null }]))[0]!.status).toBe('ok');
        const next = await store.prepareInitialize!([{ name: 'refs/heads/main', oid: A }]);
        expect(next).toBeDefined();
        await next!.abort();
        expect(await store.list()).toEqual([]);
      }),
    );
  });
}
