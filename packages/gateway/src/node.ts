/**
 * @gitport/gateway/node: the gateway on Node. The node:http adapter (`listen`,
 * `createNodeListener`), the backends that host repositories under a root directory (worker
 * threads running gitport, or git's own programs in child processes), and the demo repository.
 */
export { nodeDemoAssets } from './node/demo-assets.js';
export { createDemoRepository } from './node/demo-repository.js';
export { createGitProcessBackend, type GitProcessBackendOptions } from './node/git-process-backend.js';
export {
  createNodeListener,
  type ListenOptions,
  listen,
  type NodeListenerOptions,
  type RunningServer,
} from './node/http-adapter.js';
export {
  checkRedisUrl,
  RedisEventLog,
  type RedisEventLogOptions,
  redisEventLog,
} from './node/redis-event-log.js';
export { RepositoryRoot } from './node/repository-root.js';
export {
  createWorkerPoolBackend,
  type SpawnWorker,
  type WorkerPoolBackend,
  type WorkerPoolOptions,
} from './node/worker-pool.js';
export type { WorkerStats } from './node/worker-stats.js';
