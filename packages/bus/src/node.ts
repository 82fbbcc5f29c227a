/** `@gitport/bus/node`: everything in `@gitport/bus`, plus the worker_threads adapter. */

export { type NodeMessagePortLike, type NodeWorkerLike, nodeEndpoint } from './endpoint.node.js';
export * from './index.js';
