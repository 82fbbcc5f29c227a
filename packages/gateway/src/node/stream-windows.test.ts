/** Stream windows sized by load, on real transport streams over a real bus. */
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { type DuplexStream, listen, open } from '@gitport/transport';
import { describe, expect, it } from 'vitest';
import { StreamWindows } from './stream-windows.js';

const SOLO = 64 * 1024;
const SHARED = 256 * 1024;

async function connected() {
  const { port1, port2 } = new MessageChannel();
  const near = createBus({ id: 'gateway' });
  const far = createBus({ id: 'worker' });
  await Promise.all([near.connect(nodeEndpoint(port1)), far.connect(nodeEndpoint(port2))]);
  /** The worker's side of each stream, in the order they were accepted. */
  const accepted: DuplexStream[] = [];
  listen(far, 'http', (stream) => void accepted.push(stream));
  const windows = new StreamWindows(SOLO, SHARED);
  const openOne = async () => {
    const window = windows.reserve();
    const stream = await open(near, 'worker', 'http', { window });
    windows.opened(stream);
    return { stream, window };
  };
  const close = () => {
    near.close();
    far.close();
    port1.close();
    port2.close();
  };
  return { windows, accepted, openOne, close };
}

/** Waits until the worker's side of a stream sees `window` as the gateway's (the frame is a message away). */
async function untilRemoteWindow(stream: () => DuplexStream | undefined, window: number): Promise<void> {
  for (let i = 0; i < 200 && stream()?.stats.remoteWindow !== window; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect(stream()?.stats.remoteWindow).toBe(window);
}

/** Ends a stream from both sides and waits until it closed. */
async function finish(near: DuplexStream, far: DuplexStream): Promise<void> {
  await Promise.all([near.end(), far.end()]);
  const drain = async (s: DuplexStream) => {
    for await (const _ of s);
  };
  await Promise.all([drain(near), drain(far), near.closed, far.closed]);
}

describe('StreamWindows', () => {
  it('opens a lone stream small, widens every stream once another opens, and opens small again when alone', async () => {
    const { windows, accepted, openOne, close } = await connected();
    const a = await openOne();
    expect(a.window).toBe(SOLO);
    await untilRemoteWindow(() => accepted[0], SOLO);

    const b = await openOne();
    expect(b.window).toBe(SHARED);
    expect(a.stream.stats.window).toBe(SHARED);
    // The worker may now send the first stream a shared window's worth ahead.
    await untilRemoteWindow(() => accepted[0], SHARED);
    await untilRemoteWindow(() => accepted[1], SHARED);
    expect(windows.open).toBe(2);

    await finish(a.stream, accepted[0]!);
    await finish(b.stream, accepted[1]!);
    expect(windows.open).toBe(0);
    const c = await openOne();
    expect(c.window).toBe(SOLO);
    close();
  });

  it('widens a stream that opened alone while a second one was on its way', async () => {
    const { windows, accepted, openOne, close } = await connected();
    const [a, b] = await Promise.all([openOne(), openOne()]);
    expect([a.window, b.window]).toEqual([SOLO, SHARED]);
    expect(a.stream.stats.window).toBe(SHARED);
    await untilRemoteWindow(() => accepted[0], SHARED);
    expect(windows.open).toBe(2);
    close();
  });

  it('forgets a stream that failed or never opened', async () => {
    const { windows, openOne, close } = await connected();
    windows.reserve();
    windows.notOpened();
    const a = await openOne();
    expect(a.window).toBe(SOLO);
    a.stream.abort(new Error('client gone'));
    await a.stream.closed.catch(() => {});
    expect(windows.open).toBe(0);
    expect((await openOne()).window).toBe(SOLO);
    close();
  });

  it('never opens a lone stream wider than a shared one', () => {
    expect(new StreamWindows(SHARED * 2, SHARED).reserve()).toBe(SHARED);
  });
});
