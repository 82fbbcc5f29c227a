/**
 * `#fetch-client` under the `node` condition: the protocol's fetch and clone clients, imported
 * on their first call, so that a Node thread that loads `gitport/node` only to host a
 * repository does not load the receiving side (pack import, negotiation). Bundles for other
 * targets take `@gitport/protocol`'s module itself (package.json `imports`).
 */
import type * as Client from '@gitport/protocol/internal/fetch-client';

const client = () => import('@gitport/protocol/internal/fetch-client');

export const lsRemoteWith: typeof Client.lsRemoteWith = async (...args) => (await client()).lsRemoteWith(...args);
export const fetchWith: typeof Client.fetchWith = async (...args) => (await client()).fetchWith(...args);
export const cloneWith: typeof Client.cloneWith = async (...args) => (await client()).cloneWith(...args);
export const fetchObjectsWith: typeof Client.fetchObjectsWith = async (...args) =>
  (await client()).fetchObjectsWith(...args);
