/**
 * Pack import and creation on Bun, run by `bun test` (see pack-interop.test.ts): the interop
 * suite of tests/src/pack, where real git reads what gitport writes (index-pack --strict,
 * verify-pack, fsck) and object ids are compared, never pack bytes (Bun's deflate output differs
 * from Node's). Under Bun the pack package takes its node:zlib and node:crypto paths.
 */
import { expect, it } from 'vitest';
import { sha1Implementation } from '../../../packages/pack/src/sha1.node.js';
import { zlibImplementation } from '../../../packages/pack/src/zlib.node.js';
import '../pack/interop.test.js';

it('takes the node:zlib and node:crypto fast paths on Bun', () => {
  expect(zlibImplementation()).toBe('node:zlib (reused native context)');
  expect(sha1Implementation).toBe('node:crypto');
});
