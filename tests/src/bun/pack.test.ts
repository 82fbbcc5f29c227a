/**
 * The pack layer on Bun checked by real git: Bun's test runner runs, in a child process, the
 * interop suite of tests/src/pack, where real git reads what gitport writes (index-pack --strict,
 * verify-pack, fsck) and object ids are compared, never pack bytes (Bun's deflate output differs
 * from Node's); and the pack package's own suites of the paths Bun takes through the `node`
 * condition: node:zlib's reused native contexts (checked against the web inflate on every cut), node:crypto
 * hashing (object ids in the codec and store suites), the delta search on a worker thread. Every
 * case must pass there.
 */
import { expect, it } from 'vitest';
import { runBunSuite } from './bun-process.js';

const packSuites = [
  'codec.test.ts',
  'delta-worker.test.ts',
  'hostile.test.ts',
  'pack-writer-stored.test.ts',
  'quarantine.test.ts',
  'store.test.ts',
  'zlib.node.test.ts',
].map((name) => `../../../packages/pack/src/${name}`);

it('imports and writes packs on Bun that real git accepts, with the same object ids', async () => {
  const result = await runBunSuite(['../pack/interop.test.ts', ...packSuites]);
  expect(
    result.cases.filter((c) => !c.passed),
    result.output,
  ).toEqual([]);
  expect(result.exitCode, result.output).toBe(0);
  const names = result.cases.map((c) => c.name);
  expect(names.length).toBeGreaterThanOrEqual(80);
  expect(names).toContain(
    'the package takes the node:zlib and node:crypto fast paths under the node condition (Node, Bun)',
  );
  expect(names).toContain(
    'stores .pack and an .idx byte-identical to git index-pack; git fsck --strict accepts the repository',
  );
  expect(names).toContain('computed deltas, OFS_DELTA: index-pack --strict, verify-pack -v, fsck');
  expect(names).toContain('the pack written with the worker holds every object, deltified, like the one-thread pack');
}, 300_000);
