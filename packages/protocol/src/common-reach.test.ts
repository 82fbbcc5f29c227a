import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CommitGraph, CommitNode } from './commit-graph.js';
import { CommonReach } from './common-reach.js';
import { fuzzParameters } from './test-fuzz.js';

const oid = (i: number) => i.toString(16).padStart(40, '0');

function graphOf(commits: readonly CommitNode[]): CommitGraph {
  const byId = new Map(commits.map((c) => [c.oid, c]));
  return { commit: async (id: string) => byId.get(id) } as unknown as CommitGraph;
}

/**
 * git's ok_to_give_up, walked from scratch: each want reaches a have through commits at or after
 * the cut-off; wants are walked whatever their date, also when met from another want (git's
 * answer then depends on the order it takes the wants in).
 */
function naive(
  commits: ReadonlyMap<string, CommitNode>,
  wants: readonly string[],
  theyHave: ReadonlySet<string>,
  cutoff: number,
): boolean {
  const wanted = new Set(wants);
  for (const want of wants) {
    const start = commits.get(want);
    if (!start) continue;
    const seen = new Set([want]);
    const stack = [start];
    let reached = false;
    while (stack.length > 0 && !reached) {
      const c = stack.pop() as CommitNode;
      if (theyHave.has(c.oid)) reached = true;
      else if (wanted.has(c.oid) || c.time >= cutoff) {
        for (const p of c.parents) {
          const pc = commits.get(p);
          if (pc && !seen.has(p)) {
            seen.add(p);
            stack.push(pc);
          }
        }
      }
    }
    if (!reached) return false;
  }
  return true;
}

describe('CommonReach', () => {
  it('agrees with a walk from scratch after every common commit (random histories, skewed dates)', async () => {
    const history = fc
      .array(fc.record({ parents: fc.array(fc.nat(), { maxLength: 3 }), time: fc.nat({ max: 30 }) }), {
        minLength: 1,
        maxLength: 40,
      })
      .map((specs) =>
        specs.map((s, i): CommitNode => {
          const parents = i === 0 ? [] : [...new Set(s.parents.map((p) => oid(p % i)))];
          // a parent outside the history stands for a commit the server lacks (shallow)
          if (s.parents.length === 3) parents.push(oid(1000 + i));
          return { oid: oid(i), tree: oid(0), parents, time: s.time };
        }),
      );
    const { seed, numRuns } = fuzzParameters('CommonReach', 300);
    await fc.assert(
      fc.asyncProperty(
        history,
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (commits, rawWants, rawHaves) => {
          const byId = new Map(commits.map((c) => [c.oid, c]));
          const wants = rawWants.map((w) => oid(w % commits.length));
          const reach = new CommonReach(graphOf(commits));
          reach.setWants(wants);
          const theyHave = new Set<string>();
          let cutoff = Number.POSITIVE_INFINITY;
          expect(await reach.reachesAll()).toBe(false);
          for (const h of rawHaves) {
            const c = commits[h % commits.length] as CommitNode;
            reach.addCommon(c);
            theyHave.add(c.oid);
            for (const p of c.parents) theyHave.add(p);
            cutoff = Math.min(cutoff, c.time);
            expect(await reach.reachesAll()).toBe(naive(byId, wants, theyHave, cutoff));
          }
          expect(reach.expanded).toBeLessThanOrEqual(commits.length);
        },
      ),
      { seed, numRuns },
    );
  });
});
