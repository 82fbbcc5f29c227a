/**
 * The bus conformance suite: one set of tests run over every kind of Endpoint. The caller gives a
 * factory that connects a fresh test peer (bus-test-peer.ts) on the far side of a new endpoint pair and
 * returns our side. No Node built-ins here, so the same suite runs in Chromium.
 */

import { type Bus, type BusOptions, createBus, type Endpoint } from '@gitport/bus';
import * as Comlink from 'comlink';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_PEER_MAX_MESSAGE_SIZE } from './bus-test-peer.js';

export interface ConformanceTarget {
  /** Our side of the new endpoint pair; a test peer is (being) connected on the other side. */
  endpoint: Endpoint;
  /** The test peer's bus id. */
  remoteId: string;
  /** Settles when the far side's own connect has settled too (same-thread peers). */
  ready?: Promise<unknown>;
  /** Makes the other side vanish without a goodbye (terminate the worker, close the port). */
  kill(): void | Promise<void>;
  dispose(): void | Promise<void>;
}

export interface ConformanceOptions {
  /** The endpoint can transfer ArrayBuffers and MessagePorts (not BroadcastChannel). */
  transfer?: boolean;
  /** Local bus options for this endpoint kind (heartbeats for endpoints without a close event). */
  bus?: Partial<BusOptions>;
}

const LOCAL_MAX = 256 * 1024;

function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code,
  );
}

function next(bus: Bus, event: string): Promise<{ payload: unknown; from: string }> {
  return new Promise((resolve) => {
    const off = bus.on(event, (payload, meta) => {
      off();
      resolve({ payload, from: meta.from });
    });
  });
}

export function busConformance(
  kind: string,
  create: (localId: string) => Promise<ConformanceTarget>,
  options: ConformanceOptions = {},
): void {
  describe(`bus conformance: ${kind}`, () => {
    const cleanups: (() => void | Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function setup(extra: Partial<BusOptions> = {}) {
      const target = await create('local');
      const bus = createBus({ id: 'local', maxMessageSize: LOCAL_MAX, ...options.bus, ...extra });
      cleanups.push(() => target.dispose());
      cleanups.push(() => bus.close());
      const peer = await bus.connect(target.endpoint);
      await target.ready;
      return { bus, target, peer, remote: target.remoteId };
    }

    it('handshakes: both sides know each other by id', async () => {
      const { bus, peer, remote } = await setup();
      expect(peer.id).toBe(remote);
      expect([...bus.peers.keys()]).toEqual([remote]);
      expect(await bus.request(remote, 'peers', null)).toEqual(['local']);
    });

    it('carries events both ways with structured payloads', async () => {
      const { bus, remote } = await setup();
      const payload = { bytes: new Uint8Array([1, 2, 255]), map: new Map([['k', [1, 2]]]), nested: { a: null } };
      const pong = next(bus, 'pong');
      bus.send(remote, 'ping', payload);
      const got = await pong;
      expect(got.from).toBe(remote);
      expect(got.payload).toEqual(payload);
    });

    it('keeps the order of many events', async () => {
      const { bus, remote } = await setup();
      const seen: number[] = [];
      const done = new Promise<void>((resolve) =>
        bus.on('pong', (payload) => {
          seen.push(payload as number);
          if (seen.length === 300) resolve();
        }),
      );
      for (let i = 0; i < 300; i++) bus.send(remote, 'ping', i);
      await done;
      expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => i));
    });

    it('broadcasts a signal to the peer', async () => {
      const { bus } = await setup();
      const pong = next(bus, 'pong');
      bus.signal('ping', 'to all');
      expect((await pong).payload).toBe('to all');
    });

    it('answers requests, many in flight', async () => {
      const { bus, remote } = await setup();
      const results = await Promise.all(Array.from({ length: 64 }, (_, i) => bus.request(remote, 'echo', { i })));
      expect(results).toEqual(Array.from({ length: 64 }, (_, i) => ({ i })));
      expect(bus.pendingRequests).toBe(0);
    });

    it('carries handler errors with name, message, code, data and cause', async () => {
      const { bus, remote } = await setup();
      const error = await bus.request(remote, 'fail', null).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: 'TypeError',
        message: 'boom',
        code: 'E_BOOM',
        remote: true,
        data: { detail: { n: 1, list: ['x'] } },
      });
      expect((error as Error).cause).toMatchObject({ message: 'root cause', name: 'Error' });
      await expect(bus.request(remote, 'fail-async', null)).rejects.toMatchObject({
        code: 'E_ASYNC',
        message: 'async boom',
      });
      await expect(bus.request(remote, 'throw-string', null)).rejects.toMatchObject({
        code: 'BUS_REMOTE_ERROR',
        message: 'plain string',
      });
    });

    it('never calls inherited properties as handlers', async () => {
      const { bus, remote } = await setup();
      for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'missing']) {
        expect(await codeOf(bus.request(remote, name, null)), name).toBe('BUS_NO_HANDLER');
      }
    });

    it('does not let payloads pollute prototypes', async () => {
      const { bus, remote } = await setup();
      const evil = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}');
      expect(await bus.request(remote, 'own-keys', evil)).toEqual(['__proto__', 'constructor']);
      const back = (await bus.request(remote, 'echo', evil)) as Record<string, unknown>;
      expect(Object.hasOwn(back, '__proto__')).toBe(true);
      bus.send(remote, 'ping', evil);
      expect(await bus.request(remote, 'prototype', null)).toEqual({ polluted: undefined, objectHasIt: undefined });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('times out, clears the request, and aborts the handler', async () => {
      const { bus, remote } = await setup();
      const aborted = next(bus, 'aborted');
      expect(await codeOf(bus.request(remote, 'wait-abort', null, { timeout: 20 }))).toBe('BUS_TIMEOUT');
      expect(bus.pendingRequests).toBe(0);
      expect((await aborted).payload).toEqual({ code: 'BUS_ABORTED' });
    });

    it('cancels with an AbortSignal and aborts the handler', async () => {
      const { bus, remote } = await setup();
      const controller = new AbortController();
      const aborted = next(bus, 'aborted');
      const request = bus.request(remote, 'wait-abort', null, { signal: controller.signal });
      await bus.request(remote, 'echo', 1); // the first request has reached the handler
      controller.abort(new Error('changed my mind'));
      const error = await request.catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'BUS_ABORTED' });
      expect((error as Error).cause).toMatchObject({ message: 'changed my mind' });
      expect((await aborted).payload).toEqual({ code: 'BUS_ABORTED' });
      expect(bus.pendingRequests).toBe(0);
      expect(await codeOf(bus.request(remote, 'echo', 1, { signal: controller.signal }))).toBe('BUS_ABORTED');
    });

    it('refuses oversized messages on the sending side, synchronously', async () => {
      const { bus, remote } = await setup();
      const big = new Uint8Array(LOCAL_MAX + 1);
      expect(() => bus.send(remote, 'ping', big)).toThrow(expect.objectContaining({ code: 'BUS_MESSAGE_TOO_LARGE' }));
      expect(() => bus.signal('ping', big)).toThrow(expect.objectContaining({ code: 'BUS_MESSAGE_TOO_LARGE' }));
      expect(await codeOf(bus.request(remote, 'echo', big))).toBe('BUS_MESSAGE_TOO_LARGE');
      expect(() => bus.send(remote, 'ping', () => 1)).toThrow(expect.objectContaining({ code: 'BUS_DATA_CLONE' }));
      // The remote refuses to send a response larger than its own limit.
      expect(await codeOf(bus.request(remote, 'bytes', TEST_PEER_MAX_MESSAGE_SIZE + 1))).toBe('BUS_MESSAGE_TOO_LARGE');
    });

    it('drops oversized messages on the receiving side', async () => {
      const { bus, remote } = await setup();
      const tooBig = new Uint8Array(TEST_PEER_MAX_MESSAGE_SIZE + 10); // fine for us, too big for the remote
      const reported = next(bus, 'peer:error');
      const pongs: unknown[] = [];
      bus.on('pong', (payload) => pongs.push(payload));
      bus.send(remote, 'ping', tooBig);
      expect((await reported).payload).toEqual({ code: 'BUS_MESSAGE_TOO_LARGE' });
      expect(await codeOf(bus.request(remote, 'echo', tooBig))).toBe('BUS_MESSAGE_TOO_LARGE');
      expect(await bus.request(remote, 'echo', 'small')).toBe('small');
      expect(pongs).toEqual([]);
    });

    it('drops an oversized response on the requesting side', async () => {
      const { bus, remote } = await setup({ maxMessageSize: 32 * 1024 });
      expect(await codeOf(bus.request(remote, 'bytes', 40 * 1024))).toBe('BUS_MESSAGE_TOO_LARGE');
      expect(bus.pendingRequests).toBe(0);
    });

    if (options.transfer !== false) {
      it('transfers buffers instead of copying them', async () => {
        const { bus, remote } = await setup();
        const buffer = new ArrayBuffer(1024);
        const length = bus.request(remote, 'byte-length', buffer, { transfer: [buffer] });
        expect(await length).toBe(1024);
        expect(buffer.byteLength).toBe(0);
        expect(((await bus.request(remote, 'transfer-back', 2048)) as ArrayBuffer).byteLength).toBe(2048);
      });
    }

    it('runs the real comlink through bus.endpoint', async () => {
      const { bus, remote } = await setup();
      expect(await bus.request(remote, 'expose', null)).toBe(true);
      const api = Comlink.wrap<{
        add(a: number, b: number): number;
        slowDouble(x: number): Promise<number>;
        callBack(fn: (x: number) => Promise<number>): Promise<number>;
        fail(): void;
      }>(bus.endpoint(remote, 'api'));
      expect(await api.add(2, 3)).toBe(5);
      expect(await Promise.all([api.slowDouble(4), api.slowDouble(5)])).toEqual([8, 10]);
      await expect(api.fail()).rejects.toThrow('comlink failure');
      if (options.transfer !== false) {
        expect(await api.callBack(Comlink.proxy(async (x: number) => x + 1))).toBe(43);
      }
      api[Comlink.releaseProxy]();
    });

    it('loses the peer when it vanishes, rejecting its pending requests', async () => {
      const { bus, target, remote } = await setup();
      const lost = new Promise<[string, string | undefined]>((resolve) =>
        bus.onPeer('lost', (peer, reason) => resolve([peer, reason?.code])),
      );
      const pending = codeOf(bus.request(remote, 'wait-abort', null, { timeout: 0 }));
      await bus.request(remote, 'echo', 1);
      await target.kill();
      expect(await lost).toEqual([remote, 'BUS_PEER_LOST']);
      expect(await pending).toBe('BUS_PEER_LOST');
      expect(bus.peers.size).toBe(0);
      expect(() => bus.send(remote, 'ping', 1)).toThrow(expect.objectContaining({ code: 'BUS_UNKNOWN_PEER' }));
    });

    it('loses the peer when its bus closes', async () => {
      const { bus, remote } = await setup();
      const lost = new Promise<string | undefined>((resolve) =>
        bus.onPeer('lost', (_peer, reason) => resolve(reason?.code)),
      );
      const pending = codeOf(bus.request(remote, 'wait-abort', null, { timeout: 0 }));
      expect(await bus.request(remote, 'close', null)).toBe(true);
      expect(await lost).toBe('BUS_PEER_LOST');
      expect(await pending).toBe('BUS_PEER_LOST');
    });

    it('rejects everything pending when our bus closes', async () => {
      const { bus, remote } = await setup();
      const pending = codeOf(bus.request(remote, 'wait-abort', null, { timeout: 0 }));
      bus.close();
      expect(await pending).toBe('BUS_CLOSED');
      expect(() => bus.send(remote, 'ping', 1)).toThrow(expect.objectContaining({ code: 'BUS_CLOSED' }));
      expect(await codeOf(bus.request(remote, 'echo', 1))).toBe('BUS_CLOSED');
      expect(await codeOf(bus.connect(createBus({ id: 'x' }).endpoint('y', 'z')))).toBe('BUS_CLOSED');
    });
  });
}
