/**
 * `@gitport/bus`: the cross-context message bus. No Node built-ins here; the worker_threads adapter
 * `nodeEndpoint` is exported by `@gitport/bus/node`.
 */
export {
  type Bus,
  type BusOptions,
  type BusSchema,
  createBus,
  createHub,
  type EventName,
  type EventPattern,
  type EventPayload,
  type Handler,
  type HandlerMeta,
  type MessageMeta,
  type MethodName,
  type MethodPayload,
  type MethodResult,
  type Peer,
  PROTOCOL_VERSION,
  Transferring,
  withTransfer,
} from './bus.js';
export { createEmitter, type Emitter, type Listener, type OnOptions } from './emitter.js';
export {
  type AnyMessageListener,
  type BusMessageEvent,
  broadcastChannelEndpoint,
  type ChannelEndpoint,
  type Endpoint,
  type MessageListener,
  messagePortEndpoint,
  type WindowLike,
  windowEndpoint,
  workerEndpoint,
} from './endpoint.js';
export { BusError, type BusErrorCode, errorFromWire, errorToWire, isBusError, type WireError } from './errors.js';
export { originMatcher } from './origin.js';
export { messageSize } from './size.js';
