/**
 * `#push-client` under the `node` condition: the protocol's push client, imported on its first
 * call, so that a Node thread that loads `gitport/node` and never pushes does not load pack
 * writing with it. Bundles for other targets take `@gitport/protocol`'s module itself
 * (package.json `imports`).
 */
import type * as Client from '@gitport/protocol/internal/push-client';

export const push: typeof Client.push = async (...args) =>
  (await import('@gitport/protocol/internal/push-client')).push(...args);
