/**
 * @gitport/gateway: smart HTTP and SSE ref events as a web-standard `fetch(Request)` handler.
 * This entry is web-only (it runs on Node, Bun, Deno and in workers); the node:http adapter, the
 * worker-pool and git-process backends and the demo repository are at `@gitport/gateway/node`.
 */
export type { GitBackend, GitService, RpcOptions } from './backend.js';
export { createDemoPage, type DemoAsset, type DemoPage, type DemoPageOptions } from './demo-page.js';
export { GatewayError, isGatewayError } from './errors.js';
export type { RefEventLog } from './event-log.js';
export { createGateway, type Gateway, type GatewayOptions } from './handler.js';
export type { GatewayLimits } from './limits.js';
export type { GatewayReply, ReplyBody } from './reply.js';
export type { GatewayRequest } from './request.js';
export {
  type EventReplay,
  formatRefUpdate,
  formatReset,
  type RefUpdateEvent,
  SseHub,
  type SseHubOptions,
  type SseSink,
  type SubscribeOptions,
} from './sse-hub.js';
