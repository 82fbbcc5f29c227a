import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { DuplexStream } from './index.js';
import { portLink } from './link.js';
import { Multiplexer } from './multiplexer.js';
import type { StreamStats } from './stream.js';
import { type ConformancePair, transportConformance } from './test-conformance.js';
import { serveConformance, type TransportSide } from './test-conformance-service.js';

const sideOf = (mux: Multiplexer): TransportSide => ({
  listen: (name, onStream, options) => mux.listen(name, onStream, options),
  open: (peer, name, options) => mux.open(peer, name, options),
  stats: () => mux.stats,
});

/** Two multiplexers over the two ports of one MessageChannel, in this thread. */
function rawPair(options: { maxMessageSize?: number } = {}): ConformancePair {
  const channel = new MessageChannel();
  const local = new Multiplexer(portLink(channel.port1, { peer: 'far', ...options }));
  const far = new Multiplexer(portLink(channel.port2, { peer: 'near', ...options }));
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
      far.close();
      local.close();
      channel.port1.close();
      channel.port2.close();
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

const stats = (stream: DuplexStream): StreamStats => (stream as unknown as { stats: StreamStats }).stats;

/** The chunks of the data frames among `frames`, in order (a frame may carry several). */
const dataChunks = (frames: Record<string, unknown>[]): Uint8Array[] =>
  frames
    .filter((f) => f.t === 'data')
    .flatMap((f) => (Array.isArray(f.b) ? (f.b as Uint8Array[]) : [f.b as Uint8Array]));

/** A multiplexer on one port and a hand-driven far side on the other. */
function manualPair(options: { maxMessageSize?: number } = {}) {
  const channel = new MessageChannel();
  const mux = new Multiplexer(portLink(channel.port1, { peer: 'far', ...options }));
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
    frames,
    next,
    post,
    /** Opens `x`, answers the open frame with `accept`; gives the stream and the open frame. */
    async accepted(accept: { w: number; m: number; r?: number }, options?: { window?: number }) {
      const opening = mux.open('far', 'x', options);
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
  it('ignores malformed frames and keeps working', async () => {
    const bad: unknown[] = [
      null,
      42,
      'open',
      { t: 'open' },
      { t: 'open', s: -1, n: 'conformance', w: 10, v: 1 },
      { t: 'open', s: 1, n: 'conformance', w: 0, m: 65536, v: 1 },
      { t: 'open', s: 1, n: 'conformance', w: 10, m: 3, v: 1 },
      { t: 'data', s: 1, i: 1, b: 'not bytes' },
      { t: 'credit', s: 1, i: 0, n: -5 },
      { t: 'abort', s: 1, i: 1, e: { name: 1 } },
      { t: 'whatever', s: 1 },
    ];
    const channel = new MessageChannel();
    const mux = new Multiplexer(portLink(channel.port1, { peer: 'x' }));
    const stop = serveConformance(sideOf(mux));
    for (const frame of bad) channel.port2.postMessage(frame);
    // A frame for a stream nobody has is ignored too.
    channel.port2.postMessage({ t: 'data', s: 77, i: 1, b: new Uint8Array(3) });
    const refused = new Promise<unknown>((resolve) => {
      channel.port2.on('message', (frame) => {
        if ((frame as { t?: string }).t === 'refuse') resolve(frame);
      });
    });
    channel.port2.postMessage({ t: 'open', s: 5, n: 'nobody', w: 1024, m: 65536, v: 1 });
    expect(await refused).toMatchObject({ t: 'refuse', s: 5, c: 'TRANSPORT_NO_LISTENER' });
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

  it('grants credit in batches, and at once to a writer that says it is blocked', async () => {
    const m = manualPair();
    const { stream, open } = await m.accepted({ w: 4096, m: 65536 }, { window: 4000 });
    const it = stream[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(400) });
    for (let i = 0; i < 2; i++) expect((await it.next()).value).toHaveLength(400);
    // 800 consumed: below the batch (window / 4 = 1000), nothing granted yet.
    expect(m.frames.filter((f) => f.t === 'credit')).toHaveLength(0);
    expect((await it.next()).value).toHaveLength(400);
    expect(await m.next('credit')).toMatchObject({ n: 1200 });
    m.post({ t: 'data', s: open.s, i: 0, b: new Uint8Array(10) });
    expect((await it.next()).value).toHaveLength(10);
    m.post({ t: 'blocked', s: open.s, i: 0 });
    expect(await m.next('credit')).toMatchObject({ n: 10 });
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
    const opening = m.mux.open('far', 'x');
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
    const chunks = Array.from({ length: 6 }, (_, i) => new Uint8Array(64 * 1024).fill(i + 1));
    for (const chunk of chunks) await stream.write(chunk, { transfer: true });
    await stream.end();
    await m.next('end');
    const frames = m.frames.filter((f) => f.t === 'data');
    // 256 KiB make a batch: four chunks in the first frame, the other two in the next.
    expect(frames.map((f) => (Array.isArray(f.b) ? f.b.length : 1))).toEqual([4, 2]);
    expect(dataChunks(m.frames).map((b) => [b.byteLength, b[0]])).toEqual(chunks.map((_, i) => [64 * 1024, i + 1]));
    expect(chunks.every((chunk) => chunk.byteLength === 0)).toBe(true);
    m.close();
  });

  it('opens optimistically a name accepted before: data follows the open frame, the accept sets the window', async () => {
    const m = manualPair();
    const { open: open1 } = await m.accepted({ w: 100_000, m: 1024 * 1024, r: 5 });
    expect(open1.c).toBeUndefined();
    // Accepted once with room left: the next open resolves with no answer yet.
    const stream = await m.mux.open('far', 'x');
    const open2 = await m.next('open');
    expect(open2.c).toBe(100_000);
    expect(stats(stream)).toMatchObject({ remoteWindow: 100_000, credit: 100_000 });
    await stream.write(new Uint8Array(60_000).fill(5), { transfer: true });
    expect(await m.next('data')).toMatchObject({ s: open2.s, i: 1 });
    // The listener's window is smaller now: what was sent counts against it.
    m.post({ t: 'accept', s: open2.s, w: 50_000, m: 1024 * 1024, r: 4 });
    // A byte from the far side, read here, comes after the accept: the accept is in.
    const it = stream[Symbol.asyncIterator]();
    m.post({ t: 'data', s: open2.s, i: 0, b: new Uint8Array(1) });
    expect((await it.next()).value).toHaveLength(1);
    expect(stats(stream)).toMatchObject({ remoteWindow: 50_000, credit: -10_000 });
    let resolved = false;
    const writing = stream.write(new Uint8Array(1000), { transfer: true }).then(() => {
      resolved = true;
    });
    m.post({ t: 'credit', s: open2.s, i: 0, n: 5000 });
    m.post({ t: 'data', s: open2.s, i: 0, b: new Uint8Array(1) });
    expect((await it.next()).value).toHaveLength(1);
    // Granted 5000 of the 11000 it needs: still waiting.
    expect(stats(stream).credit).toBe(-5000);
    expect(resolved).toBe(false);
    m.post({ t: 'credit', s: open2.s, i: 0, n: 55_000 });
    await writing;
    expect(stats(stream).credit).toBe(49_000);
    stream.abort(new Error('done'));
    m.close();
  });

  it('fails an optimistic stream the far side refuses, and opens the next one the slow way', async () => {
    const m = manualPair();
    await m.accepted({ w: 65536, m: 1024 * 1024, r: 1 });
    const stream = await m.mux.open('far', 'x');
    const open2 = await m.next('open');
    expect(open2.c).toBe(65536);
    await stream.write(new Uint8Array(1000));
    m.post({ t: 'refuse', s: open2.s, c: 'TRANSPORT_NO_LISTENER', m: 'gone' });
    await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    await expect(stream.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_NO_LISTENER' });
    // Nobody listens there any more: the next open waits for the answer and rejects.
    const third = m.mux.open('far', 'x');
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
    await m.mux.open('far', 'x');
    expect((await m.next('open')).c).toBe(65536);
    let settled = false;
    const third = m.mux.open('far', 'x').finally(() => {
      settled = true;
    });
    const open3 = await m.next('open');
    expect(open3.c).toBeUndefined();
    expect(settled).toBe(false);
    m.post({ t: 'refuse', s: open3.s, c: 'TRANSPORT_TOO_MANY_STREAMS', m: 'full' });
    await expect(third).rejects.toMatchObject({ code: 'TRANSPORT_TOO_MANY_STREAMS' });
    m.close();
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
    const channel = new MessageChannel();
    const near = new Multiplexer(portLink(channel.port1, { peer: 'far' }));
    const far = new Multiplexer(portLink(channel.port2, { peer: 'near' }));
    const accepted: DuplexStream[] = [];
    far.listen('limited', (stream) => accepted.push(stream), { maxStreams: 2 });
    far.listen('failing', async () => {
      await Promise.resolve();
      throw new Error('handler failed');
    });
    const first = await near.open('far', 'limited');
    await near.open('far', 'limited');
    await expect(near.open('far', 'limited')).rejects.toMatchObject({ code: 'TRANSPORT_TOO_MANY_STREAMS' });
    first.abort(new Error('make room'));
    await expect(accepted[0]!.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    await near.open('far', 'limited');
    const failing = await near.open('far', 'failing');
    await expect(failing.closed).rejects.toMatchObject({
      code: 'TRANSPORT_ABORTED',
      cause: { message: 'handler failed' },
    });
    near.close();
    far.close();
    channel.port1.close();
    channel.port2.close();
  });

  it('accepts opens on a listener whose maxStreams is above what a frame can carry', async () => {
    const channel = new MessageChannel();
    const near = new Multiplexer(portLink(channel.port1, { peer: 'far' }));
    const far = new Multiplexer(portLink(channel.port2, { peer: 'near' }));
    far.listen('wide', () => {}, { maxStreams: 2 ** 40 });
    const stream = await near.open('far', 'wide', { timeout: 5_000 });
    expect(stream.name).toBe('wide');
    stream.abort(new Error('done'));
    near.close();
    far.close();
    channel.port1.close();
    channel.port2.close();
  });

  it('gives up opening on timeout and on abort, with typed errors', async () => {
    const channel = new MessageChannel();
    const mux = new Multiplexer(portLink(channel.port1, { peer: 'silent' }));
    channel.port2.start(); // nobody answers there
    await expect(mux.open('silent', 'x', { timeout: 20 })).rejects.toMatchObject({ code: 'TRANSPORT_OPEN_TIMEOUT' });
    // One timer serves every pending open: a later, shorter timeout and an earlier, longer one.
    const longer = mux.open('silent', 'x', { timeout: 60 });
    const shorter = mux.open('silent', 'x', { timeout: 10 });
    await expect(shorter).rejects.toMatchObject({
      code: 'TRANSPORT_OPEN_TIMEOUT',
      message: expect.stringContaining('10 ms'),
    });
    await expect(longer).rejects.toMatchObject({
      code: 'TRANSPORT_OPEN_TIMEOUT',
      message: expect.stringContaining('60 ms'),
    });
    const controller = new AbortController();
    const opening = mux.open('silent', 'x', { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(opening).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    await expect(mux.open('someone-else', 'x')).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
    mux.close();
    await expect(mux.open('silent', 'x')).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
    channel.port1.close();
    channel.port2.close();
  });
});
