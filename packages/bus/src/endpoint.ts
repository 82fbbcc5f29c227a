/**
 * The one structural Endpoint shape every context boundary is adapted to: `postMessage` plus a
 * `message` listener, optionally `start` (MessagePort queues until started), `close`, and `onClose`
 * (a way to learn that the other side is gone; endpoints without it get heartbeats from the bus).
 * A DOM MessagePort, a dedicated Worker, a worker's global scope and comlink's Endpoint all fit.
 *
 * Adapters here need no Node built-ins; the worker_threads adapter is `@gitport/bus/node`.
 */
import { BusError } from './errors.js';

export interface BusMessageEvent {
  data: unknown;
  /** The sender's origin as reported by the browser (window messages); empty or absent for ports. */
  origin?: string;
}

export type MessageListener = (event: BusMessageEvent) => void;

/** What a DOM-style `addEventListener` takes: a function or an object with `handleEvent` (comlink passes either). */
export type AnyMessageListener = ((event: never) => void) | { handleEvent(event: never): void };

export interface Endpoint {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  addEventListener(type: 'message', listener: MessageListener): void;
  removeEventListener(type: 'message', listener: MessageListener): void;
  start?(): void;
  close?(): void;
  /** Calls `listener` once when the other side is known to be gone; returns an unsubscribe function. */
  onClose?(listener: () => void): () => void;
}

/**
 * The endpoint `bus.endpoint(peer, channel)` returns: an Endpoint whose listener methods take any
 * DOM-style listener, so it is also a comlink `Endpoint` (no cast needed for `Comlink.wrap/expose`).
 */
export interface ChannelEndpoint extends Endpoint {
  addEventListener(type: string, listener: AnyMessageListener): void;
  removeEventListener(type: string, listener: AnyMessageListener): void;
}

/** What the adapters listen on: any EventTarget (a DOM MessagePort, Worker, BroadcastChannel, window, worker scope). */
type MessageTargetLike = Pick<EventTarget, 'addEventListener' | 'removeEventListener'>;

/**
 * The transfer-list parameter the adapters ask of `postMessage`: `never[]`, which every platform's
 * list type accepts (the DOM's `Transferable[]`, node:worker_threads' `readonly Transferable[]`,
 * whose port type differs from the DOM's), so the real objects are assignable without casts.
 */
type AnyTransferList = never[];

/** Posts through `target` with a transfer list of this platform's kind (see AnyTransferList). */
function transferList(transfer: Transferable[] | undefined): AnyTransferList {
  return (transfer ?? []) as AnyTransferList;
}

/**
 * A DOM MessagePort, or anything shaped like one (a node:worker_threads MessagePort is an
 * EventTarget too). Started on connect.
 */
export function messagePortEndpoint(
  port: MessageTargetLike & {
    postMessage(message: unknown, transfer: AnyTransferList): void;
    start?(): void;
    close?(): void;
  },
): Endpoint {
  return {
    postMessage: (message, transfer) => port.postMessage(message, transferList(transfer)),
    addEventListener: (_type, listener) => port.addEventListener('message', listener as unknown as EventListener),
    removeEventListener: (_type, listener) => port.removeEventListener('message', listener as unknown as EventListener),
    start: () => port.start?.(),
    close: () => port.close?.(),
  };
}

/** A web Worker seen from its parent (or a worker's global scope seen from inside). No close event: heartbeats apply. */
export function workerEndpoint(
  worker: MessageTargetLike & { postMessage(message: unknown, transfer: AnyTransferList): void; terminate?(): void },
): Endpoint {
  return {
    postMessage: (message, transfer) => worker.postMessage(message, transferList(transfer)),
    addEventListener: (_type, listener) => worker.addEventListener('message', listener as unknown as EventListener),
    removeEventListener: (_type, listener) =>
      worker.removeEventListener('message', listener as unknown as EventListener),
  };
}

/**
 * A BroadcastChannel, used point to point between two buses that share its name. Structured clone
 * copies; transfer lists are not supported by BroadcastChannel and are refused.
 */
export function broadcastChannelEndpoint(
  channel: MessageTargetLike & { postMessage(message: unknown): void; close?(): void },
): Endpoint {
  return {
    postMessage: (message, transfer) => {
      if (transfer !== undefined && transfer.length > 0) {
        throw new BusError('BUS_DATA_CLONE', 'a BroadcastChannel cannot transfer objects');
      }
      channel.postMessage(message);
    },
    addEventListener: (_type, listener) => channel.addEventListener('message', listener as unknown as EventListener),
    removeEventListener: (_type, listener) =>
      channel.removeEventListener('message', listener as unknown as EventListener),
    close: () => channel.close?.(),
  };
}

export interface WindowLike {
  postMessage(message: unknown, targetOrigin: string, transfer?: Transferable[]): void;
}

/**
 * Another window (an iframe's contentWindow, window.parent, an opener). `targetOrigin` is required
 * and is never `*` unless passed explicitly; only messages whose `source` is `target` are accepted,
 * and the bus checks each message's browser-reported `origin` against its `allowedOrigins`.
 */
export function windowEndpoint(
  target: WindowLike,
  options: { targetOrigin: string; self?: MessageTargetLike },
): Endpoint {
  const targetOrigin = options?.targetOrigin;
  if (typeof targetOrigin !== 'string' || targetOrigin.length === 0) {
    throw new BusError('BUS_INVALID_ORIGIN', 'windowEndpoint needs an explicit targetOrigin');
  }
  const self = options.self ?? (globalThis as unknown as MessageTargetLike);
  const wrapped = new Map<MessageListener, (event: { data: unknown; origin: string; source: unknown }) => void>();
  return {
    postMessage: (message, transfer) => target.postMessage(message, targetOrigin, transfer ?? []),
    addEventListener: (_type, listener) => {
      if (wrapped.has(listener)) return;
      const filter = (event: { data: unknown; origin: string; source: unknown }): void => {
        if (event.source === target) listener(event);
      };
      wrapped.set(listener, filter);
      self.addEventListener('message', filter as unknown as EventListener);
    },
    removeEventListener: (_type, listener) => {
      const filter = wrapped.get(listener);
      if (filter === undefined) return;
      wrapped.delete(listener);
      self.removeEventListener('message', filter as unknown as EventListener);
    },
  };
}
