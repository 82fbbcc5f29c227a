import { getEventListeners } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import { type ConformancePair, transportConformance } from '@gitport/test-helpers/transport-conformance';
import { serveConformance, type TransportSide } from '@gitport/test-helpers/transport-conformance-service';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listenOn } from './accept.js';
import { MAX_FRAME_CHUNKS, PROTOCOL_VERSION, parseFrame } from './frames.js';
import type { DuplexStream } from './index.js';
import { portLink } from './link.js';
import { Multiplexer } from './multiplexer.js';
import { openOn } from './open.js';
import { muxPair, nodePort } from './test-mux.js';

const sideOf = (mux: Multiplexer): TransportSide => ({
  listen: (name, onStream, options) => listenOn(mux, name, onStream, options),
  open: (peer, name, options) => openOn(mux, peer, name, options),
  stats: () => mux.stats,
});

/** A muxPair whose far side serves the conformance suite. */
function rawPair(options: { maxMessageSize?: number } = {}): ConformancePair {
  const { near: local, far, channel, close } = muxPair(options);
  const stop = serveConformance(sideOf(far));
  return {
    local: sideOf(local),
    remotePeer: 'far',
    async kill() {
      stop();
      far.close();
      channel.port2.close();
    },
    async close() {
      stop();
      close();
    },
  };
}

transportConformance('raw MessageChannel, one thread', async () => rawPair());
transportConformance(
  'raw MessageChannel, 200 KiB messages, 64 KiB window',
  async () => rawPair({ maxMessageSize: 200 * 1024 }),
  {
    bigBytes: 20 * 1000 * 1000,
    window: 64 * 1024,
  },
);

/** The chunks of the data frames among `frames`, in order (a frame may carry several). */
const dataChunks = (frames: Record<string, unknown>[]): Uint8Array[] =>
  frames
    .filter((f) => f.t === 'data')
    .flatMap((f) => (Array.isArray(f.b) ? (f.b as Uint8Array[]) : [f.b as Uint8Array]));

/** A multiplexer on one port and a hand-driven far side on the other. */
function manualPair(options: { maxMessageSize?: number } = {}) {
  const channel = new MessageChannel();
  const mux = new Multiplexer(portLink(nodePort(channel.port1), { peer: 'far', ...options }));
  const frames: Record<string, unknown>[] = [];
  channel.port2.on('message', (frame) => frames.push(frame));
  const next = async (type: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const i = frames.findIndex((f) => f.t === type);
      if (i >= 0) return frames.splice(i, 1)[0]!;
      await new Promise((resolve) => channel.port2.once('message', resolve));
    }
  };
  const post = (frame: unknown, transfer: Transferable[] = []) => channel.port2.postMessage(frame, transfer as never);
  return {
    mux,
    channel,
    frames,
    next,
    post,
    /** Opens `x`, answers the open frame with `accept`; gives the stream and the open frame. */
    async accepted(accept: { w: number; m: number; r?: number }, options?: { window?: number }) {
      const opening = openOn(mux, 'far', 'x', options);
      const open = await next('open');
      post({ t: 'accept', s: open.s, ...accept });
      return { stream: await opening, open };
    },
    close() {
      mux.close();
      channel.port1.close();
      channel.port2.close();
    },
  };
}

describe('transport details', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ignores malformed frames and keeps working', async () => {
    const bad: unknown[] = [
      null,
      42,
      'open',
      { t: 'open' },
      { t: 'open', s: -1, n: 'conformance', w: 10, v: PROTOCOL_VERSION },
      { t: 'open', s: 1, n: 'conformance', w: 0, m: 65536, v: PROTOCOL_VERSION },
      { t: 'open', s: 1, n: 'conformance', w: 10, m: 3, v: PROTOCOL_VERSION },
      { t: 'data', s: 1, i: 1, b: 'not bytes' },
      { t: 'credit', s: 1, i: 0, n: -5 },
      { t: 'abort', s: 1, i: 1, e: { name: 1 } },
      { t: 'whatever', s: 1 },
    ];
    const channel = new MessageChannel();
    const mux = new Multiplexer(portLink(nodePort(channel.port1), { peer: 'x' }));
    const stop = serveConformance(sideOf(mux));
    for (const frame of bad) channel.port2.postMessage(frame);
    // A frame for a stream nobody has is ignored too.
    channel.port2.postMessage({ t: 'data', s: 77, i: 1, b: new Uint8Array(3) });
    const refused = new Promise<unknown>((resolve) => {
      channel.port2.on('message', (frame) => {
        if ((frame as { t?: string }).t === 'refuse') resolve(frame);
      });
    });
    channel.port2.postMessage({ t: 'open', s: 5, n: 'nobody', w: 1024, m: 65536, v: PROTOCOL_VERSION });
    expect(await refused).toMatchObject({ t: 'refuse', s: 5, c: 'TRANSPORT_NO_LISTENER' });
    // An opener of an earlier version (whose reader granted credit back on other terms) is refused.
    const refusedOld = new Promise<unknown>((resolve) => {
      channel.port2.on('message', (frame) => {
        const f = frame as { t?: string; s?: number };
        if (f.t === 'refuse' && f.s === 6) resolve(frame);
      });
    });
    channel.port2.postMessage({ t: 'open', s: 6, n: 'conformance', w: 1024, m: 65536, v: PROTOCOL_VERSION - 1 });
    expect(await refusedOld).toMatchObject({ t: 'refuse', s: 6, c: 'TRANSPORT_PROTOCOL' });
    expect(mux.stats.streams).toBe(0);
    stop();
    mux.close();
    channel.port1.close();
    channel.port2.close();
  });

  it('aborts with TRANSPORT_PROTOCOL when the writer overruns the window', async () => {
    const m = manualPair();
    const { stream, open } = await m.accepted({ w: 4096, m: 65536 }, { window: 1000 });
    m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(600) });
    m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(600) });
    await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    expect(await m.next('abort')).toMatchObject({ s: open.s, i: 1, e: { code: 'TRANSPORT_PROTOCOL' } });
    m.close();
  });

  it('aborts with TRANSPORT_PROTOCOL when the reader grants back more than was sent', async () => {
    const m = manualPair();
    const { stream, open } = await m.accepted({ w: 4096, m: 65536 });
    await stream.write(new Uint8Array(1000), { transfer: true });
    expect(await m.next('data')).toMatchObject({ s: open.s, i: 1 });
    expect(stream.stats).toMatchObject({ credit: 3096, inFlightBytes: 1000 });
    // 1000 bytes in flight; a buggy or hostile reader grants 1500 back.
    m.post({ t: 'credit', s: open.s, i: 0, n: 1500 });
    await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    expect(await m.next('abort')).toMatchObject({ s: open.s, i: 1, e: { code: 'TRANSPORT_PROTOCOL' } });
    await expect(stream.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    // The bad grant was not counted.
    expect(stream.stats).toMatchObject({ credit: 3096, inFlightBytes: 1000 });
    m.close();
  });

  it('grants credit in batches, and at once to a writer that says it is blocked', async () => {
    const m = manualPair();
    const { stream, open } = await m.accepted({ w: 4096, m: 65536 }, { window: 4000 });
    const it = stream[Symbol.asyncIterator]();
    for (let i = 0; i < 6; i++) m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(400) });
    for (let i = 0; i < 4; i++) expect((await it.next()).value).toHaveLength(400);
    // 1600 consumed: below the batch (window / 2 = 2000), nothing granted yet.
    expect(m.frames.filter((f) => f.t === 'credit')).toHaveLength(0);
    expect((await it.next()).value).toHaveLength(400);
    expect(await m.next('credit')).toMatchObject({ n: 2000 });
    expect((await it.next()).value).toHaveLength(400);
    m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(10) });
    expect((await it.next()).value).toHaveLength(10);
    m.post({ t: 'blocked', s: open.s, i: 0 });
    expect(await m.next('credit')).toMatchObject({ n: 410 });
    m.close();
  });

  it('transfers owned chunks, copies views and kept chunks, coalesces small writes, splits large ones', async () => {
    const m = manualPair({ maxMessageSize: 100 * 1024 });
    const { stream } = await m.accepted({ w: 8 * 1024 * 1024, m: 1024 * 1024 });
    const owned = new Uint8Array(64 * 1024).fill(1);
    await stream.write(owned, { transfer: true });
    const kept = new Uint8Array(64 * 1024).fill(2);
    await stream.write(kept);
    expect(kept.byteLength).toBe(64 * 1024);
    const backing = new Uint8Array(128 * 1024);
    const view = backing.subarray(1024, 1024 + 64 * 1024).fill(3);
    await stream.write(view, { transfer: true });
    expect(view.byteLength).toBe(64 * 1024);
    expect(backing.byteLength).toBe(128 * 1024);
    for (let i = 0; i < 1000; i++) await stream.write(new Uint8Array([i & 255, 7]));
    await stream.write(new Uint8Array(1024 * 1024).fill(4));
    await stream.end();
    await m.next('end');
    expect(owned.byteLength).toBe(0); // detached: it went without a copy
    const data = dataChunks(m.frames);
    expect(data.slice(0, 3).map((b) => [b.byteLength, b[0]])).toEqual([
      [64 * 1024, 1],
      [64 * 1024, 2],
      [64 * 1024, 3],
    ]);
    // 1000 writes of 2 bytes went in one message.
    expect(data[3]).toHaveLength(2000);
    expect(data[3]![1998]).toBe(231);
    // 1 MiB went in pieces below the message limit.
    const pieces = data.slice(4);
    expect(pieces.length).toBeGreaterThanOrEqual(11);
    expect(pieces.every((b) => b.byteLength <= 100 * 1024 && b[0] === 4)).toBe(true);
    expect(pieces.reduce((n, b) => n + b.byteLength, 0)).toBe(1024 * 1024);
    m.close();
  });

  it("splits data below the other side's message limit when it is the smaller one", async () => {
    const m = manualPair();
    const opening = openOn(m.mux, 'far', 'x');
    const open = await m.next('open');
    expect(open.m).toBe(64 * 1024 * 1024 - 1024);
    m.post({ t: 'accept', s: open.s, w: 1024 * 1024, m: 50_000 });
    const stream = await opening;
    const whole = new Uint8Array(200_000).fill(9);
    await stream.write(whole, { transfer: true });
    await stream.write(new Uint8Array(120_000).fill(8));
    await stream.end();
    await m.next('end');
    const data = dataChunks(m.frames);
    expect(data.every((b) => b.byteLength <= 50_000)).toBe(true);
    expect(data.reduce((n, b) => n + b.byteLength, 0)).toBe(320_000);
    m.close();
  });

  it('sends the chunks written in one tick in one data frame, each buffer transferred', async () => {
    const m = manualPair();
    const { stream } = await m.accepted({ w: 1024 * 1024, m: 1024 * 1024 });
    const chunks = Array.from({ length: 10 }, (_, i) => new Uint8Array(64 * 1024).fill(i + 1));
    for (const chunk of chunks) await stream.write(chunk, { transfer: true });
    await stream.end();
    await m.next('end');
    const frames = m.frames.filter((f) => f.t === 'data');
    // The first 256 KiB go out as written (the reader starts on the first chunk); then 256 KiB
    // make a batch: four chunks in one frame, the other two in the next.
    expect(frames.map((f) => (Array.isArray(f.b) ? f.b.length : 1))).toEqual([1, 1, 1, 1, 4, 2]);
    expect(dataChunks(m.frames).map((b) => [b.byteLength, b[0]])).toEqual(chunks.map((_, i) => [64 * 1024, i + 1]));
    expect(chunks.every((chunk) => chunk.byteLength === 0)).toBe(true);
    m.close();
  });

  it('sends small writes with the next macrotask, or at once on flush()', async () => {
    const m = manualPair();
    const { stream } = await m.accepted({ w: 1024 * 1024, m: 1024 * 1024 });
    const posts = vi.spyOn(m.channel.port1, 'postMessage');
    await stream.write(new Uint8Array([1, 2, 3]));
    await stream.write(new Uint8Array([4]));
    expect(posts).not.toHaveBeenCalled();
    stream.flush();
    expect(posts).toHaveBeenCalledTimes(1);
    expect([...((await m.next('data')).b as Uint8Array)]).toEqual([1, 2, 3, 4]);
    // without flush(): still gathered once the microtasks ran, sent by the macrotask
    await stream.write(new Uint8Array([5]));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(posts).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(posts).toHaveBeenCalledTimes(2);
    expect([...((await m.next('data')).b as Uint8Array)]).toEqual([5]);
    // nothing gathered: flush() sends nothing
    stream.flush();
    expect(posts).toHaveBeenCalledTimes(2);
    posts.mockRestore();
    stream.abort(new Error('done'));
    m.close();
  });

  it('opens optimistically a name accepted before: data follows the open frame, the accept sets the window', async () => {
    const m = manualPair();
    const { open: open1 } = await m.accepted({ w: 100_000, m: 1024 * 1024, r: 5 });
    expect(open1.c).toBeUndefined();
    // Accepted once with room left: the next open resolves with no answer yet.
    const stream = await openOn(m.mux, 'far', 'x');
    const open2 = await m.next('open');
    expect(open2.c).toBe(100_000);
    expect(stream.stats).toMatchObject({ remoteWindow: 100_000, credit: 100_000 });
    await stream.write(new Uint8Array(60_000).fill(5), { transfer: true });
    expect(await m.next('data')).toMatchObject({ s: open2.s, i: 1 });
    let resolved = false;
    const writing = stream.write(new Uint8Array(50_000), { transfer: true }).then(() => {
      resolved = true;
    });
    // The listener's window is larger now (a new listener there): what was sent counts against it.
    m.post({ t: 'accept', s: open2.s, w: 150_000, m: 1024 * 1024, r: 4 });
    await writing;
    expect(resolved).toBe(true);
    expect(stream.stats).toMatchObject({ remoteWindow: 150_000, credit: 40_000, inFlightBytes: 110_000 });
    stream.abort(new Error('done'));
    m.close();
  });

  it('fails an optimistic stream whose accept gives a window below the credit it announced', async () => {
    const m = manualPair();
    await m.accepted({ w: 100_000, m: 1024 * 1024, r: 5 });
    const stream = await openOn(m.mux, 'far', 'x');
    const open2 = await m.next('open');
    expect(open2.c).toBe(100_000);
    await stream.write(new Uint8Array(60_000), { transfer: true });
    // Waits for credit: 60 000 of the announced 100 000 are in flight.
    const writing = stream.write(new Uint8Array(50_000), { transfer: true });
    // A buggy or hostile acceptor: a window that the data already sent overruns.
    m.post({ t: 'accept', s: open2.s, w: 50_000, m: 1024 * 1024, r: 4 });
    await expect(writing).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    expect(await m.next('abort')).toMatchObject({ s: open2.s, i: 1, e: { code: 'TRANSPORT_PROTOCOL' } });
    // No credit below zero was ever taken as the stream's state.
    expect(stream.stats.credit).toBeGreaterThanOrEqual(0);
    // Only the first stream is left.
    expect(m.mux.stats).toMatchObject({ streams: 1, pendingOpens: 0 });
    m.close();
  });

  it('fails an optimistic stream the far side refuses, and opens the next one the slow way', async () => {
    const m = manualPair();
    await m.accepted({ w: 65536, m: 1024 * 1024, r: 1 });
    const stream = await openOn(m.mux, 'far', 'x');
    const open2 = await m.next('open');
    expect(open2.c).toBe(65536);
    await stream.write(new Uint8Array(1000));
    m.post({ t: 'refuse', s: open2.s, c: 'TRANSPORT_NO_LISTENER', m: 'gone' });
    await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    await expect(stream.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    // Nobody listens there any more: the next open waits for the answer and rejects.
    const third = openOn(m.mux, 'far', 'x');
    const open3 = await m.next('open');
    expect(open3.c).toBeUndefined();
    m.post({ t: 'refuse', s: open3.s, c: 'TRANSPORT_NO_LISTENER', m: 'gone' });
    await expect(third).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    m.close();
  });

  it('opens the slow way when the listener has no room left', async () => {
    const m = manualPair();
    await m.accepted({ w: 65536, m: 1024 * 1024, r: 1 });
    // One slot left: this open takes it optimistically, the next one has to wait.
    await openOn(m.mux, 'far', 'x');
    expect((await m.next('open')).c).toBe(65536);
    let settled = false;
    const third = openOn(m.mux, 'far', 'x').finally(() => {
      settled = true;
    });
    const open3 = await m.next('open');
    expect(open3.c).toBeUndefined();
    expect(settled).toBe(false);
    m.post({ t: 'refuse', s: open3.s, c: 'TRANSPORT_TOO_MANY_STREAMS', m: 'full' });
    await expect(third).rejects.toMatchObject({ code: 'TRANSPORT_TOO_MANY_STREAMS' });
    m.close();
  });

  it('settles an optimistic open whose stream ends before the answer: no timer left waiting', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const m = manualPair();
    // The first stream (opened the slow way) stays open throughout.
    await m.accepted({ w: 65536, m: 1024 * 1024, r: 5 });
    expect(vi.getTimerCount()).toBe(0);
    // Aborted before the accept came: the far side drops the stream and sends no accept.
    const aborted = await openOn(m.mux, 'far', 'x');
    const open2 = await m.next('open');
    aborted.abort(new Error('changed my mind'));
    expect(await m.next('abort')).toMatchObject({ s: open2.s, i: 1 });
    expect(m.mux.stats).toMatchObject({ streams: 1, pendingOpens: 0 });
    expect(vi.getTimerCount()).toBe(0);
    // Ended and cancelled before the accept came: finished cleanly on both sides.
    const ended = await openOn(m.mux, 'far', 'x');
    const open3 = await m.next('open');
    await ended[Symbol.asyncIterator]().return?.();
    await ended.end();
    await ended.closed;
    expect(await m.next('end')).toMatchObject({ s: open3.s, i: 1 });
    expect(m.mux.stats).toMatchObject({ streams: 1, pendingOpens: 0 });
    expect(vi.getTimerCount()).toBe(0);
    // An answer that comes after all is told the stream is gone.
    m.post({ t: 'accept', s: open3.s, w: 65536, m: 1024 * 1024, r: 5 });
    expect(await m.next('abort')).toMatchObject({ s: open3.s, i: 1 });
    m.close();
  });

  it('sends no accept for an optimistic stream the opener ended first, and nothing waits on either side', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { near, far, close } = muxPair();
    const accepted: DuplexStream[] = [];
    listenOn(far, 'x', (stream) => accepted.push(stream));
    const first = await openOn(near, 'far', 'x');
    const second = await openOn(near, 'far', 'x');
    second.abort(new Error('gone at once'));
    // The first stream's echo of a byte comes behind whatever the far side sent for the second.
    const reading = first[Symbol.asyncIterator]().next();
    while (accepted.length < 2) await new Promise((resolve) => setImmediate(resolve));
    await expect(accepted[1]!.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    await accepted[0]!.write(new Uint8Array([1]));
    expect((await reading).value).toEqual(new Uint8Array([1]));
    expect(near.stats).toMatchObject({ streams: 1, pendingOpens: 0 });
    expect(far.stats).toMatchObject({ streams: 1, pendingOpens: 0 });
    expect(vi.getTimerCount()).toBe(0);
    first.abort(new Error('done'));
    close();
  });

  it('fails an optimistic stream to a listener replaced by one with a smaller window with a code to open again', async () => {
    const { near, far, close } = muxPair();
    const echo = (stream: DuplexStream) => {
      void (async () => {
        for await (const chunk of stream) await stream.write(chunk.slice());
        await stream.end();
      })().catch(() => {});
    };
    const stop = listenOn(far, 'x', echo, { window: 1024 * 1024 });
    const roundTrip = async (stream: DuplexStream) => {
      await stream.write(new Uint8Array([1, 2, 3]));
      await stream.end();
      const got: number[] = [];
      for await (const chunk of stream) got.push(...chunk);
      return got;
    };
    expect(await roundTrip(await openOn(near, 'far', 'x'))).toEqual([1, 2, 3]);
    stop();
    listenOn(far, 'x', echo, { window: 64 * 1024 });
    const optimistic = await openOn(near, 'far', 'x'); // resolves at once: the name is known
    await expect(optimistic.closed).rejects.toMatchObject({ code: 'TRANSPORT_WINDOW_CHANGED' });
    // The next open waits for the answer and learns the new window.
    const again = await openOn(near, 'far', 'x');
    expect(await roundTrip(again)).toEqual([1, 2, 3]);
    expect(again.stats.remoteWindow).toBe(64 * 1024);
    close();
  });

  it('drops the signal and the timeout of an optimistic open once it resolved', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const m = manualPair();
    await m.accepted({ w: 65536, m: 1024 * 1024, r: 5 });
    const controller = new AbortController();
    const stream = await openOn(m.mux, 'far', 'x', { signal: controller.signal, timeout: 50 });
    const open2 = await m.next('open');
    expect(open2.c).toBe(65536);
    // Neither a timer nor an abort listener outlives open().
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort(new Error('too late'));
    vi.advanceTimersByTime(100);
    await stream.write(new Uint8Array([7]));
    expect(await m.next('data')).toMatchObject({ s: open2.s, i: 1 });
    m.post({ t: 'accept', s: open2.s, w: 65536, m: 1024 * 1024, r: 4 });
    m.post({ t: 'data', s: open2.s, i: 0, b: new Uint8Array([8]) });
    expect((await stream[Symbol.asyncIterator]().next()).value).toEqual(new Uint8Array([8]));
    expect(m.frames.filter((f) => f.t === 'abort')).toHaveLength(0);
    expect(m.mux.stats).toMatchObject({ streams: 2, pendingOpens: 0 });
    stream.abort(new Error('done'));
    m.close();
  });

  it('never gives a stream more than its listener window, whatever credit an open announces', async () => {
    // A hand-driven opener against a listener with a small window.
    const channel = new MessageChannel();
    const mux = new Multiplexer(portLink(nodePort(channel.port1), { peer: 'opener' }));
    const accepted: DuplexStream[] = [];
    listenOn(mux, 'small', (stream) => accepted.push(stream), { window: 4096 });
    const frames: Record<string, unknown>[] = [];
    channel.port2.on('message', (frame) => frames.push(frame));
    const next = async (type: string, s: number): Promise<Record<string, unknown>> => {
      for (;;) {
        const i = frames.findIndex((f) => f.t === type && f.s === s);
        if (i >= 0) return frames.splice(i, 1)[0]!;
        await new Promise((resolve) => channel.port2.once('message', resolve));
      }
    };
    const open = (s: number, c?: number) =>
      channel.port2.postMessage({
        t: 'open',
        s,
        n: 'small',
        w: 65536,
        m: 65536,
        v: PROTOCOL_VERSION,
        ...(c ? { c } : {}),
      });
    open(1);
    expect(await next('accept', 1)).toMatchObject({ w: 4096 });
    // More credit than the listener's window: refused, not widened.
    open(2, 8192);
    expect(await next('refuse', 2)).toMatchObject({ c: 'TRANSPORT_WINDOW_CHANGED' });
    // Within the window: accepted with the listener's window, which the acceptor enforces.
    open(3, 4096);
    expect(await next('accept', 3)).toMatchObject({ w: 4096 });
    expect(accepted.map((stream) => stream.stats.window)).toEqual([4096, 4096]);
    channel.port2.postMessage({ t: 'data', s: 3, i: 1, b: new Uint8Array(4000) });
    channel.port2.postMessage({ t: 'data', s: 3, i: 1, b: new Uint8Array(1000) });
    expect(await next('abort', 3)).toMatchObject({ i: 0, e: { code: 'TRANSPORT_PROTOCOL' } });
    await expect(accepted[1]!.closed).rejects.toMatchObject({ code: 'TRANSPORT_PROTOCOL' });
    mux.close();
    channel.port1.close();
    channel.port2.close();
  });

  it('opens optimistically within a small listener window, and both sides count the same window', async () => {
    const { near, far, close } = muxPair();
    const accepted: DuplexStream[] = [];
    listenOn(far, 'small', (stream) => accepted.push(stream), { window: 4096 });
    await openOn(near, 'far', 'small');
    const stream = await openOn(near, 'far', 'small');
    // Before any answer: the credit assumed is the listener's window, not more.
    expect(stream.stats).toMatchObject({ remoteWindow: 4096, credit: 4096 });
    await stream.write(new Uint8Array(4096).fill(1));
    let wrote = false;
    const writing = stream.write(new Uint8Array(10).fill(2)).then(() => {
      wrote = true;
    });
    while (accepted.length < 2) await new Promise((resolve) => setImmediate(resolve));
    const reader = accepted[1]![Symbol.asyncIterator]();
    const got = await reader.next();
    expect(got.value).toHaveLength(4096);
    expect(accepted[1]!.stats).toMatchObject({ window: 4096 });
    await writing;
    expect(wrote).toBe(true);
    expect((await reader.next()).value).toEqual(new Uint8Array(10).fill(2));
    expect(stream.stats).toMatchObject({ remoteWindow: 4096 });
    close();
  });

  it('carries at most MAX_FRAME_CHUNKS chunks in a data frame, and ignores frames with more', () => {
    const chunks = (n: number) => Array.from({ length: n }, () => new Uint8Array(1));
    expect(parseFrame({ t: 'data', s: 1, i: 0, b: chunks(MAX_FRAME_CHUNKS) })).toBeDefined();
    expect(parseFrame({ t: 'data', s: 1, i: 0, b: chunks(MAX_FRAME_CHUNKS + 1) })).toBeUndefined();
  });

  it('rejects bad arguments and double use with typed errors', async () => {
    const pair = rawPair();
    expect(() => pair.local.listen('', () => {})).toThrow(
      expect.objectContaining({ code: 'TRANSPORT_INVALID_ARGUMENT' }),
    );
    const stop = pair.local.listen('twice', () => {});
    expect(() => pair.local.listen('twice', () => {})).toThrow(
      expect.objectContaining({ code: 'TRANSPORT_INVALID_ARGUMENT' }),
    );
    stop();
    await expect(pair.local.open('far', 'conformance', { window: 0 })).rejects.toMatchObject({
      code: 'TRANSPORT_INVALID_ARGUMENT',
    });
    const stream = await pair.local.open('far', 'conformance');
    await expect(stream.write('text' as unknown as Uint8Array)).rejects.toMatchObject({
      code: 'TRANSPORT_INVALID_ARGUMENT',
    });
    stream[Symbol.asyncIterator]();
    expect(() => stream.readable).toThrow(expect.objectContaining({ code: 'TRANSPORT_LOCKED' }));
    stream.abort(new Error('done'));
    await pair.close();
  });

  it('refuses streams past maxStreams, and aborts the stream of a handler that rejects', async () => {
    const { near, far, close } = muxPair();
    const accepted: DuplexStream[] = [];
    listenOn(far, 'limited', (stream) => accepted.push(stream), { maxStreams: 2 });
    listenOn(far, 'failing', async () => {
      await Promise.resolve();
      throw new Error('handler failed');
    });
    const first = await openOn(near, 'far', 'limited');
    await openOn(near, 'far', 'limited');
    await expect(openOn(near, 'far', 'limited')).rejects.toMatchObject({ code: 'TRANSPORT_TOO_MANY_STREAMS' });
    first.abort(new Error('make room'));
    await expect(accepted[0]!.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    await openOn(near, 'far', 'limited');
    const failing = await openOn(near, 'far', 'failing');
    await expect(failing.closed).rejects.toMatchObject({
      code: 'TRANSPORT_ABORTED',
      cause: { message: 'handler failed' },
    });
    close();
  });

  it('accepts opens on a listener whose maxStreams is above what a frame can carry', async () => {
    const { near, far, close } = muxPair();
    listenOn(far, 'wide', () => {}, { maxStreams: 2 ** 40 });
    const stream = await openOn(near, 'far', 'wide', { timeout: 5_000 });
    expect(stream.name).toBe('wide');
    stream.abort(new Error('done'));
    close();
  });

  it('gives up opening on timeout and on abort, with typed errors', async () => {
    const channel = new MessageChannel();
    const mux = new Multiplexer(portLink(nodePort(channel.port1), { peer: 'silent' }));
    channel.port2.start(); // nobody answers there
    await expect(openOn(mux, 'silent', 'x', { timeout: 20 })).rejects.toMatchObject({ code: 'TRANSPORT_OPEN_TIMEOUT' });
    // One timer serves every pending open: a later, shorter timeout and an earlier, longer one.
    const longer = openOn(mux, 'silent', 'x', { timeout: 60 });
    const shorter = openOn(mux, 'silent', 'x', { timeout: 10 });
    await expect(shorter).rejects.toMatchObject({
      code: 'TRANSPORT_OPEN_TIMEOUT',
      message: expect.stringContaining('10 ms'),
    });
    await expect(longer).rejects.toMatchObject({
      code: 'TRANSPORT_OPEN_TIMEOUT',
      message: expect.stringContaining('60 ms'),
    });
    const controller = new AbortController();
    const opening = openOn(mux, 'silent', 'x', { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(opening).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    await expect(openOn(mux, 'someone-else', 'x')).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
    mux.close();
    await expect(openOn(mux, 'silent', 'x')).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
    channel.port1.close();
    channel.port2.close();
  });
});
