/**
 * The pack layer on Bun, run by `bun test` (see pack.test.ts): the interop suite of
 * tests/src/pack, where real git reads what gitport writes (index-pack --strict, verify-pack,
 * fsck) and object ids are compared, never pack bytes (Bun's deflate output differs from
 * Node's); and the pack package's own suites of the paths Bun takes through the `node`
 * condition: node:zlib's reused native contexts (checked against pako on every cut), node:crypto
 * hashing (object ids in the codec and store suites), the delta search on a worker thread.
 */
import { expect, it } from 'vitest';
import { sha1Implementation } from '../../../packages/pack/src/sha1.node.js';
import { zlibImplementation } from '../../../packages/pack/src/zlib.node.js';
import '../pack/interop.test.js';
import '../../../packages/pack/src/codec.test.js';
import '../../../packages/pack/src/delta-worker.test.js';
import '../../../packages/pack/src/hostile.test.js';
import '../../../packages/pack/src/pack-writer-stored.test.js';
import '../../../packages/pack/src/quarantine.test.js';
import '../../../packages/pack/src/store.test.js';
import '../../../packages/pack/src/zlib.node.test.js';

it('takes the node:zlib and node:crypto fast paths on Bun', () => {
  expect(zlibImplementation()).toBe('node:zlib (reused native context)');
  expect(sha1Implementation).toBe('node:crypto');
});
