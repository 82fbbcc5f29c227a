/**
 * The peer on the far side of the conformance suite: a bus with a fixed set of handlers and
 * listeners, runnable in the same thread, a worker thread, or (later) a browser worker.
 */

import { type Bus, createBus, type Endpoint, withTransfer } from '@gitport/bus';
import * as Comlink from 'comlink';

export interface TestPeerOptions {
  id: string;
  maxMessageSize?: number;
  /** Called by the `exit` handler: end this context abruptly (worker: process.exit). */
  exit?: () => void;
}

/** Limit the conformance suite gives the test peer, so that the local side can out-size it. */
export const TEST_PEER_MAX_MESSAGE_SIZE = 64 * 1024;

export async function startTestPeer(endpoint: Endpoint, options: TestPeerOptions): Promise<Bus> {
  const bus: Bus = createBus({
    id: options.id,
    maxMessageSize: options.maxMessageSize ?? TEST_PEER_MAX_MESSAGE_SIZE,
    onError: (error) => {
      const code = (error as { code?: unknown }).code;
      if (!bus.closed) bus.signal('peer:error', { code: typeof code === 'string' ? code : 'UNKNOWN' });
    },
  });
  const api = {
    add: (a: number, b: number) => a + b,
    slowDouble: async (x: number) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return x * 2;
    },
    callBack: async (fn: (x: number) => Promise<number>) => (await fn(41)) + 1,
    fail: () => {
      throw new RangeError('comlink failure');
    },
  };
  bus.on('ping', (payload, meta) => {
    if (bus.peers.has(meta.from)) bus.send(meta.from, 'pong', payload);
  });
  bus.handle('echo', (payload) => payload);
  bus.handle('fail', () => {
    const error = new TypeError('boom', { cause: new Error('root cause') }) as TypeError & {
      code: string;
      detail: unknown;
    };
    error.code = 'E_BOOM';
    error.detail = { n: 1, list: ['x'] };
    throw error;
  });
  bus.handle('fail-async', async () => {
    await Promise.resolve();
    throw Object.assign(new Error('async boom'), { code: 'E_ASYNC' });
  });
  bus.handle('throw-string', () => {
    throw 'plain string';
  });
  bus.handle(
    'wait-abort',
    (_payload, meta) =>
      new Promise((resolve) => {
        meta.signal.addEventListener('abort', () => {
          const reason = meta.signal.reason as { code?: string } | undefined;
          if (bus.peers.has(meta.from)) bus.send(meta.from, 'aborted', { code: reason?.code });
          resolve(undefined);
        });
      }),
  );
  bus.handle('prototype', () => ({
    polluted: (Object.prototype as Record<string, unknown>).polluted,
    objectHasIt: ({} as Record<string, unknown>).polluted,
  }));
  bus.handle('own-keys', (payload) => Object.keys(payload as object));
  bus.handle('peers', () => [...bus.peers.keys()]);
  bus.handle('emit-to', (payload, meta) => {
    const { event, payload: inner } = payload as { event: string; payload: unknown };
    bus.send(meta.from, event, inner);
    return true;
  });
  bus.handle('bytes', (n) => new Uint8Array(n as number));
  bus.handle('byte-length', (buffer) => (buffer as ArrayBuffer).byteLength);
  bus.handle('transfer-back', (n) => {
    const buffer = new ArrayBuffer(n as number);
    return withTransfer(buffer, [buffer]);
  });
  bus.handle('expose', (_payload, meta) => {
    Comlink.expose(api, bus.endpoint(meta.from, 'api'));
    return true;
  });
  bus.handle('close', () => {
    setTimeout(() => bus.close(), 0);
    return true;
  });
  bus.handle('exit', () => {
    setTimeout(() => options.exit?.(), 0);
    return options.exit !== undefined;
  });
  await bus.connect(endpoint);
  return bus;
}
