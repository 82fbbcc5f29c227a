/**
 * Response chunks whose memory is freed as soon as the socket has written them, instead of when
 * the garbage collector next runs.
 *
 * A pack moved from a worker thread arrives as ArrayBuffers transferred to this thread; V8 counts
 * them against no allocation of its own, so a clone's worth of them piles up until some later
 * collection. A chunk that spans its whole ArrayBuffer, and that its producer gave up
 * (`releasable`), is transferred once written into a message channel whose other end is closed:
 * the buffer is detached here and its memory freed at once, the message being dropped.
 */
import { MessageChannel } from 'node:worker_threads';

const given = new WeakSet<Uint8Array>();
let sink: MessageChannel['port1'] | undefined;

const spansWholeBuffer = (chunk: Uint8Array): boolean =>
  chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && chunk.buffer instanceof ArrayBuffer;

/**
 * Marks `chunk` as no one's but its consumer's (its buffer came from another thread and nothing
 * else holds it): once written, it may be released. Chunks that do not span their whole
 * ArrayBuffer are left alone.
 */
export function releasable(chunk: Uint8Array): Uint8Array {
  if (spansWholeBuffer(chunk)) given.add(chunk);
  return chunk;
}

/** Frees the memory of a chunk marked `releasable` (a written one: it must not be read again). */
export function release(chunk: Uint8Array): void {
  if (!given.delete(chunk) || !spansWholeBuffer(chunk)) return;
  if (sink === undefined) {
    const channel = new MessageChannel();
    channel.port2.close();
    sink = channel.port1;
    sink.unref();
  }
  sink.postMessage(null, [chunk.buffer as ArrayBuffer]);
}
