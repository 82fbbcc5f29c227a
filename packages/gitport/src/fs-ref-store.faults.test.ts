/**
 * FsRefStore under injected fs faults: seeded random batches of updates, over random loose and
 * packed refs, with one fs call made to fail at a random point. An atomic batch is applied
 * whole or not at all, a batch never throws, and no lock, temporary file or empty ref directory
 * is left behind.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FsPromisesLike } from './fs.js';
import { FsRefStore } from './fs-ref-store.js';
import { MemoryFs } from './memory-fs.js';

const OIDS = ['1', '2', '3'].map((c) => c.repeat(40));
/** Names that can exist together at the start. */
const INITIAL = ['refs/heads/a', 'refs/heads/b', 'refs/heads/d/e', 'refs/heads/f/g/h', 'refs/tags/t'];
/** Names an update may touch: the initial ones and some that clash with them (directory/file). */
const TOUCHED = [...INITIAL, 'refs/heads/c', 'refs/heads/d', 'refs/heads/f/g', 'refs/heads/a/x'];

interface Scenario {
  initial: { name: string; oid: string; packed: boolean }[];
  updates: { name: string; old?: string | null; new: string | null }[];
  atomic: boolean;
  /** Which of the faultable calls fails (past the last one: none). */
  failAt: number;
  code: string;
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    initial: fc
      .subarray(INITIAL)
      .chain((names) =>
        fc.tuple(
          ...names.map((name) =>
            fc.record({ name: fc.constant(name), oid: fc.constantFrom(...OIDS), packed: fc.boolean() }),
          ),
        ),
      ),
    updates: fc.array(
      fc.record(
        {
          name: fc.constantFrom(...TOUCHED),
          old: fc.option(fc.constantFrom(...OIDS), { nil: null }),
          new: fc.option(fc.constantFrom(...OIDS), { nil: null }),
        },
        { requiredKeys: ['name', 'new'] },
      ),
      { minLength: 1, maxLength: 6 },
    ),
    atomic: fc.boolean(),
    failAt: fc.nat({ max: 40 }),
    code: fc.constantFrom('EIO', 'EACCES', 'ENOSPC'),
  })
  .map((s) => ({ ...s, initial: s.initial as Scenario['initial'] }));

/** A memory fs whose `failAt`-th write, rename, exclusive open or unlink (other than of a lock) fails. */
function faultyFs(fs: MemoryFs, failAt: number, code: string): FsPromisesLike {
  const raw = fs.promises;
  let calls = 0;
  const maybeFail = (path: string) => {
    if (calls++ === failAt) throw Object.assign(new Error(`${code}: injected, '${path}'`), { code });
  };
  return {
    ...raw,
    writeFile: async (path, data, options) => {
      maybeFail(path);
      return raw.writeFile(path, data, options);
    },
    rename: async (from, to) => {
      maybeFail(to);
      return raw.rename!(from, to);
    },
    open: async (path, flags) => {
      if (flags === 'wx') maybeFail(path);
      return raw.open(path, flags);
    },
    // removing a lock that cannot be removed leaves it (reported as held later): not injected here
    unlink: async (path) => {
      if (!path.endsWith('.lock')) maybeFail(path);
      return raw.unlink(path);
    },
  };
}

/** Locks, temporary files and empty directories below `refs/<kind>/` in the git directory `dir`. */
async function leftovers(fs: MemoryFs, dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string, depth: number) => {
    const names = await fs.promises.readdir(path);
    if (names.length === 0 && depth > 2) found.push(`${path}/`);
    for (const name of names) {
      const child = `${path}/${name}`;
      if ((await fs.promises.stat(child)).isDirectory()) await walk(child, depth + 1);
      else if (name.endsWith('.lock') || name.startsWith('.tmp-')) found.push(child);
    }
  };
  await walk(dir, 0);
  return found;
}

describe('FsRefStore under injected fs faults (seeded)', () => {
  it('atomic batches apply whole or not at all; no batch throws or leaves a lock', async () => {
    const seed = Number(process.env.GITPORT_REFS_SEED ?? 20261126);
    console.log(`ref store fault seed: ${seed} (rerun with GITPORT_REFS_SEED=${seed})`);
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const fs = new MemoryFs();
        await fs.promises.mkdir('/r');
        const setup = new FsRefStore(fs, '/r');
        const packed = s.initial.filter((r) => r.packed).map(({ name, oid }) => ({ name, oid }));
        expect(await setup.initialize(packed)).toBe(true);
        const loose = s.initial.filter((r) => !r.packed).map(({ name, oid }) => ({ name, old: null, new: oid }));
        expect((await setup.update(loose)).every((r) => r.status === 'ok')).toBe(true);
        const before = await setup.list();

        const store = new FsRefStore(faultyFs(fs, s.failAt, s.code), '/r');
        const results = await store.update(s.updates, { atomic: s.atomic });
        expect(results).toHaveLength(s.updates.length);

        const after = new Map(before.map((r) => [r.name, r.oid]));
        results.forEach((r, i) => {
          expect(r.name).toBe(s.updates[i]!.name);
          if (r.status === 'rejected') {
            expect(typeof r.message).toBe('string');
            return;
          }
          const update = s.updates[i]!;
          const was = after.get(r.name) ?? null;
          // an applied update saw the value the state before had, and the old value it asked for
          expect(r.old).toBe(was);
          if (update.old !== undefined) expect(update.old).toBe(was);
          if (r.new === null) after.delete(r.name);
          else after.set(r.name, r.new);
        });
        if (s.atomic) {
          const statuses = new Set(results.map((r) => r.status));
          expect(statuses.size).toBe(1);
        }
        const expected = [...after].map(([name, oid]) => ({ name, oid })).sort((a, b) => (a.name < b.name ? -1 : 1));
        expect(await new FsRefStore(fs, '/r').list()).toEqual(expected);
        expect(await leftovers(fs, '/r')).toEqual([]);
      }),
      { seed, numRuns: 300 },
    );
  });
});
