export { AdvertisementCache } from './advertisement-cache.js';
export type { GitBackend, GitService, RpcOptions } from './backend.js';
export { createDemoPage, type DemoAsset, type DemoPage, type DemoPageOptions } from './demo-page.js';
export { nodeDemoAssets } from './demo-page.node.js';
export { createDemoRepository } from './demo-repository.js';
export { GatewayError, isGatewayError } from './errors.js';
export { createGitProcessBackend, type GitProcessBackendOptions } from './git-process-backend.js';
export {
  createGateway,
  type Gateway,
  type GatewayLimits,
  type GatewayOptions,
  type GatewayReply,
  type GatewayRequest,
  presentedToken,
  type ReplyBody,
  toResponse,
} from './handler.js';
export {
  createNodeListener,
  type ListenOptions,
  listen,
  type NodeListenerOptions,
  type RunningServer,
} from './node-adapter.js';
export { decodeRepoName, isValidRepoName } from './repo-name.js';
export { RepositoryRoot, refsFingerprint } from './repository-root.js';
export {
  formatRefUpdate,
  type RefUpdateEvent,
  SseHub,
  type SseHubOptions,
  type SseSink,
  type SubscribeOptions,
  ZERO_ID,
} from './sse-hub.js';
export {
  createWorkerPoolBackend,
  type SpawnWorker,
  type WorkerPoolBackend,
  type WorkerPoolOptions,
} from './worker-pool.js';
