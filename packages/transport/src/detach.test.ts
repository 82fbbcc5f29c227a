/**
 * Which buffers a stream transfers (detaches) and which it sends by copy: the stream's own
 * buffers go by copy until this thread has detached one (see `detachedHere` in stream.ts).
 * That state belongs to the module instance, so these tests run in order in a file of their own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listenOn } from './accept.js';
import { dataBytes } from './frames.js';
import type { DuplexStream } from './index.js';
import type { FrameLink } from './link.js';
import { openOn } from './open.js';
import { muxPair } from './test-mux.js';

interface SentData {
  bytes: number;
  /** The byte lengths of the buffers in the frame's transfer list, as they were before the post. */
  transferred: number[];
}

/** A stream from a multiplexer whose data frames are recorded, to a far side that reads it all. */
async function recordedStream() {
  const sent: SentData[] = [];
  const { near, far, close } = muxPair({
    nearLink: (inner): FrameLink => ({
      maxMessageSize: inner.maxMessageSize,
      send(peer, frame, transfer) {
        if (frame.t === 'data') {
          sent.push({
            bytes: dataBytes(frame.b),
            transferred: transfer.map((buffer) => (buffer as ArrayBuffer).byteLength),
          });
        }
        inner.send(peer, frame, transfer);
      },
      subscribe: (onFrame, onLost) => inner.subscribe(onFrame, onLost),
    }),
  });
  const received = new Promise<Uint8Array>((resolve, reject) => {
    listenOn(far, 'bytes', (stream: DuplexStream) => {
      (async () => {
        const parts: Uint8Array[] = [];
        for await (const part of stream) parts.push(part);
        await stream.end();
        resolve(Buffer.concat(parts));
      })().catch(reject);
    });
  });
  const stream = await openOn(near, 'far', 'bytes');
  return { stream, sent, received, close };
}

/** `length` bytes counting up from `start`. */
function bytes(length: number, start = 0): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (start + i) & 255;
  return out;
}

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

describe('what a stream detaches', () => {
  it('sends its own buffers (coalesced small writes, copies of views) by copy while the thread has detached none', async () => {
    const { stream, sent, received, close } = await recordedStream();
    cleanup = close;
    const expected: Uint8Array[] = [];
    for (let i = 0; i < 300; i++) {
      const small = bytes(100, i);
      expected.push(small);
      await stream.write(small);
    }
    // A view (a copy is made) of 40 KiB: no larger than a coalescing buffer.
    const big = bytes(100_000);
    const view = big.subarray(1000, 1000 + 40 * 1024);
    expected.push(view.slice());
    await stream.write(view, { transfer: true });
    await stream.end();

    expect(Buffer.compare(await received, Buffer.concat(expected))).toBe(0);
    expect(big.byteLength).toBe(100_000);
    expect(sent.reduce((n, s) => n + s.bytes, 0)).toBe(300 * 100 + 40 * 1024);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.flatMap((s) => s.transferred)).toEqual([]);
  });

  it('transfers a copy larger than a coalescing buffer, a chunk the writer gives up, and from then on its own buffers', async () => {
    const { stream, sent, received, close } = await recordedStream();
    cleanup = close;
    const expected: Uint8Array[] = [];

    // A 100 KiB view: copied, and the copy is transferred rather than cloned once more.
    const big = bytes(200_000, 7);
    const view = big.subarray(50_000, 50_000 + 100 * 1024);
    expected.push(view.slice());
    await stream.write(view);
    stream.flush();
    expect(sent.at(-1)).toEqual({ bytes: 100 * 1024, transferred: [100 * 1024] });
    expect(big.byteLength).toBe(200_000);

    // A whole buffer given up: transferred, so detached here.
    const given = bytes(20_000, 3);
    expected.push(given.slice());
    await stream.write(given, { transfer: true });
    stream.flush();
    expect(sent.at(-1)).toEqual({ bytes: 20_000, transferred: [20_000] });
    expect(given.byteLength).toBe(0);

    // Small writes now: their coalescing buffer is transferred too.
    const before = sent.length;
    for (let i = 0; i < 50; i++) {
      const small = bytes(100, i);
      expected.push(small);
      await stream.write(small);
    }
    await stream.end();
    const later = sent.slice(before);
    expect(later.reduce((n, s) => n + s.bytes, 0)).toBe(50 * 100);
    expect(later.every((s) => s.transferred.length === 1)).toBe(true);

    expect(Buffer.compare(await received, Buffer.concat(expected))).toBe(0);
  });
});
