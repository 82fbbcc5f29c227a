/**
 * The pack layer on Bun checked by real git: Bun's test runner runs pack.bun.ts (the interop
 * suite of tests/src/pack and the pack package's suites of its node:zlib, node:crypto and worker
 * paths) in a child process, and every case must pass there.
 */
import { expect, it } from 'vitest';
import { runBunSuite } from './bun-process.js';

it('imports and writes packs on Bun that real git accepts, with the same object ids', async () => {
  const result = await runBunSuite('./pack.bun.ts');
  expect(
    result.cases.filter((c) => !c.passed),
    result.output,
  ).toEqual([]);
  expect(result.exitCode, result.output).toBe(0);
  const names = result.cases.map((c) => c.name);
  expect(names.length).toBeGreaterThanOrEqual(80);
  expect(names).toContain('takes the node:zlib and node:crypto fast paths on Bun');
  expect(names).toContain(
    'stores .pack and an .idx byte-identical to git index-pack; git fsck --strict accepts the repository',
  );
  expect(names).toContain('computed deltas, OFS_DELTA: index-pack --strict, verify-pack -v, fsck');
  expect(names).toContain('the pack written with the worker holds every object, deltified, like the one-thread pack');
}, 300_000);
