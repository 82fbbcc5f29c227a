import * as nodeFs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommit } from './commit.js';
import { FsObjectStore } from './fs-store.js';
import type { ObjectId } from './object.js';
import {
  filterBlob,
  filterKeeps,
  filterTree,
  formatObjectFilter,
  type ObjectFilter,
  parseObjectFilter,
} from './object-filter.js';
import { fuzzParameters } from './test-fuzz.js';
import { filterTestRepository } from './test-repo-files.js';
import { parseTree } from './tree.js';

/** Specs git takes (`git rev-list --filter`) and ones it refuses; both lists are checked against git below. */
const ACCEPTED = [
  'blob:none',
  'blob:limit=0',
  'blob:limit=100',
  'blob:limit=1k',
  'blob:limit=2M',
  'blob:limit=1g',
  'tree:0',
  'tree:1',
  'tree:3',
  'object:type=blob',
  'object:type=tree',
  'object:type=commit',
  'object:type=tag',
  'combine:blob:none+tree:2',
  'combine:blob%3Alimit%3D1k+tree%3A1',
  'combine:tree:3+object:type=blob',
];
const REFUSED = [
  '',
  'blob',
  'blob:some',
  'blob:limit=',
  'blob:limit=x',
  'blob:limit=-1',
  'tree:',
  'tree:x',
  'tree:-1',
  'object:type=',
  'object:type=bogus',
  'combine:',
  'combine:blob:none+',
  'combine:+tree:1',
  'combine:nope+tree:1',
  'combine:blob:limit=1k+tree:1 ',
  'nope',
];

describe('filter specs', () => {
  it('parse as git parses them: the same specs accepted and refused', async () => {
    await using sandbox = await createGitSandbox();
    const repo = sandbox.path('repo');
    await sandbox.git(['init', '--quiet', repo]);
    await writeFile(`${repo}/a`, 'a\n');
    await sandbox.git(['add', 'a'], { cwd: repo });
    await sandbox.git(['commit', '--quiet', '-m', 'a'], { cwd: repo });
    for (const spec of [...ACCEPTED, ...REFUSED]) {
      const byGit = await sandbox.run(['rev-list', '--objects', '--all', `--filter=${spec}`], {
        cwd: repo,
        allowFailure: true,
      });
      let ours: string;
      try {
        parseObjectFilter(spec);
        ours = 'accepted';
      } catch (error) {
        expect(error, spec).toMatchObject({ code: 'FILTER_INVALID' });
        ours = 'refused';
      }
      expect([spec, ours]).toEqual([spec, byGit.code === 0 ? 'accepted' : 'refused']);
      expect(ACCEPTED.includes(spec), spec).toBe(ours === 'accepted');
    }
  });

  it('format back to a spec that parses to the same filter', () => {
    for (const spec of ACCEPTED) {
      const filter = parseObjectFilter(spec);
      expect(parseObjectFilter(formatObjectFilter(filter)), spec).toEqual(filter);
    }
    expect(formatObjectFilter(parseObjectFilter('blob:limit=1k'))).toBe('blob:limit=1024');
    expect(formatObjectFilter(parseObjectFilter('combine:blob%3Anone+tree%3A2'))).toBe('combine:blob:none+tree:2');
    expect(formatObjectFilter({ kind: 'combine', filters: [{ kind: 'sparse:oid', oid: 'main:a+b' }] })).toBe(
      'combine:sparse:oid=main:a%2bb',
    );
  });

  it('take any string without throwing anything but FILTER_INVALID', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 64 }),
          fc
            .constantFrom(...ACCEPTED)
            .chain((spec) => fc.tuple(fc.constant(spec), fc.string({ maxLength: 8 })).map(([a, b]) => a + b)),
          fc
            .array(fc.constantFrom(...ACCEPTED, '%', '+', '%2B', 'combine:'), { maxLength: 6 })
            .map((parts) => `combine:${parts.join('+')}`),
        ),
        (spec) => {
          try {
            const filter = parseObjectFilter(spec);
            expect(parseObjectFilter(formatObjectFilter(filter))).toEqual(filter);
          } catch (error) {
            expect(error).toMatchObject({ code: 'FILTER_INVALID' });
          }
        },
      ),
      fuzzParameters('filter specs', 500),
    );
    expect(() => parseObjectFilter(`combine:${'blob:none+'.repeat(1000)}tree:1`)).toThrow(/longer than/);
  });
});

describe('filter verdicts', () => {
  let sandbox: GitSandbox;
  let repo: string;
  beforeAll(async () => {
    sandbox = await createGitSandbox();
    repo = await filterTestRepository(sandbox);
  });
  afterAll(async () => {
    await sandbox.cleanup();
  });

  it('leave out what git rev-list --filter leaves out', async () => {
    const store = new FsObjectStore(nodeFs, `${repo}/.git`);
    const commits = (await sandbox.git(['rev-list', '--all'], { cwd: repo })).split('\n');
    // the objects `--all` names (the refs' values, and what the tag points at) are always listed
    const tips = (await sandbox.git(['rev-parse', 'HEAD', 'v1', 'v1^{}'], { cwd: repo })).split('\n');
    for (const spec of ACCEPTED) {
      // rev-list may print a tree twice when it meets it again at a smaller depth: compare sets
      const listed = (await sandbox.git(['rev-list', '--objects', '--all', `--filter=${spec}`], { cwd: repo }))
        .split('\n')
        .filter(Boolean)
        .map((line) => line.slice(0, 40));
      const expected = [...new Set(listed)].sort();
      const { kept, recurring } = await filteredWalk(store, parseObjectFilter(spec), commits, tips);
      if (!spec.startsWith('combine:')) {
        expect([spec, [...kept].sort()]).toEqual([spec, expected]);
        continue;
      }
      // git's combine: also leaves out an object met again at another depth once one part has
      // seen it (each part remembers what it saw), where gitport's verdict is by the smallest
      // depth. That is the only difference.
      expect([spec, expected.filter((oid) => !kept.has(oid))]).toEqual([spec, []]);
      const extra = [...kept].filter((oid) => !expected.includes(oid));
      expect([spec, extra.filter((oid) => !recurring.has(oid))]).toEqual([spec, []]);
    }
    await store.close();
  });
});

/**
 * The objects reachable from `commits` that `filter` keeps, plus the named `tips` (commits and
 * tags), walked as git's list-objects does: a tree met again at a smaller depth is walked again
 * from there. `recurring`: the trees and blobs met at more than one depth.
 */
async function filteredWalk(
  store: FsObjectStore,
  filter: ObjectFilter,
  commits: readonly ObjectId[],
  tips: readonly ObjectId[],
): Promise<{ kept: Set<ObjectId>; recurring: Set<ObjectId> }> {
  const kept = new Set<ObjectId>(tips);
  const recurring = new Set<ObjectId>();
  const shallowest = new Map<ObjectId, number>();
  const blobDepths = new Map<ObjectId, number>();
  const walkTree = async (oid: ObjectId, depth: number): Promise<void> => {
    const seenAt = shallowest.get(oid);
    if (seenAt !== undefined && seenAt !== depth) recurring.add(oid);
    if (seenAt !== undefined && seenAt <= depth) return;
    shallowest.set(oid, depth);
    const verdict = filterTree(filter, depth);
    if (verdict.include) kept.add(oid);
    if (!verdict.walk) return;
    for (const entry of parseTree((await store.read(oid))!.data)) {
      if (entry.type === 'tree') await walkTree(entry.oid, depth + 1);
      else if (entry.type === 'blob') {
        const blobAt = blobDepths.get(entry.oid);
        if (blobAt !== undefined && blobAt !== depth + 1) recurring.add(entry.oid);
        blobDepths.set(entry.oid, Math.min(blobAt ?? depth + 1, depth + 1));
        const size = (await store.read(entry.oid))!.data.length;
        if (filterBlob(filter, depth + 1, () => size)) kept.add(entry.oid);
      }
    }
  };
  for (const commit of commits) {
    if (filterKeeps(filter, 'commit')) kept.add(commit);
    await walkTree(parseCommit((await store.read(commit))!.data).tree, 0);
  }
  return { kept, recurring };
}
