/**
 * worker_threads adapter: a `MessagePort` (a MessageChannel port, `parentPort`) or a `Worker`
 * seen as an Endpoint. Node's port `close` event and the worker's `exit` event tell the bus the
 * other side is gone at once, so these endpoints need no heartbeats.
 *
 * Typed structurally (the parts of node:worker_threads' MessagePort and Worker used here), so the
 * package builds without Node's type declarations.
 */
import type { BusMessageEvent, Endpoint, MessageListener } from './endpoint.js';

/** The parts of a worker_threads MessagePort the adapter uses. */
export interface NodeMessagePortLike {
  postMessage(message: unknown, transfer?: readonly Transferable[]): void;
  on(event: 'message', listener: (value: unknown) => void): unknown;
  off(event: 'message', listener: (value: unknown) => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  start(): void;
  close(): void;
}

/** The parts of a worker_threads Worker the adapter uses. */
export interface NodeWorkerLike {
  postMessage(message: unknown, transfer?: readonly Transferable[]): void;
  on(event: 'message', listener: (value: unknown) => void): unknown;
  off(event: 'message', listener: (value: unknown) => void): unknown;
  off(event: 'exit', listener: () => void): unknown;
  once(event: 'exit', listener: () => void): unknown;
  terminate(): unknown;
}

function isWorker(target: NodeMessagePortLike | NodeWorkerLike): target is NodeWorkerLike {
  return typeof (target as NodeWorkerLike).terminate === 'function';
}

/** An Endpoint over a worker_threads MessagePort (including `parentPort`) or Worker. */
export function nodeEndpoint(target: NodeMessagePortLike | NodeWorkerLike): Endpoint {
  const wrapped = new Map<MessageListener, (data: unknown) => void>();
  const endpoint: Endpoint = {
    postMessage: (message, transfer) => target.postMessage(message, transfer),
    addEventListener: (_type, listener) => {
      if (wrapped.has(listener)) return;
      const onMessage = (data: unknown): void => listener({ data } satisfies BusMessageEvent);
      wrapped.set(listener, onMessage);
      target.on('message', onMessage);
    },
    removeEventListener: (_type, listener) => {
      const onMessage = wrapped.get(listener);
      if (onMessage === undefined) return;
      wrapped.delete(listener);
      target.off('message', onMessage);
    },
    start: () => {
      if (!isWorker(target)) target.start();
    },
    onClose: (listener) => {
      let called = false;
      const once = (): void => {
        if (called) return;
        called = true;
        listener();
      };
      if (isWorker(target)) {
        target.once('exit', once);
        return () => target.off('exit', once);
      }
      target.once('close', once);
      return () => target.off('close', once);
    },
  };
  if (!isWorker(target)) endpoint.close = () => target.close();
  return endpoint;
}
