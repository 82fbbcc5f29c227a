/**
 * A one-producer one-consumer byte channel with backpressure: `write` resolves at once while
 * fewer than `highWaterMark` bytes wait for the consumer, otherwise when the consumer has taken
 * enough (so a slow HTTP client slows the pack writer down and memory stays bounded), `end` /
 * `fail` finish it, and a consumer that stops early (`return`) makes further writes reject with
 * `PROTOCOL_ABORTED` and drops what was queued. A chunk written with `transfer` was given up by its
 * writer: `given` tells the consumer it may move that chunk's buffer on (to another thread)
 * instead of copying it.
 */
import type { Connection } from './connection.js';
import { ProtocolError } from './errors.js';

export class ByteChannel implements AsyncIterable<Uint8Array> {
  readonly #queue: Uint8Array[] = [];
  #queued = 0;
  readonly #highWaterMark: number;
  #drained: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  #waiter: { resolve: (r: IteratorResult<Uint8Array>) => void; reject: (e: unknown) => void } | undefined;
  #ended = false;
  #error: unknown;
  #cancelled = false;
  /** Chunks their writer gave up (written with `transfer`). */
  readonly #given = new WeakSet<Uint8Array>();

  constructor(options: { highWaterMark?: number } = {}) {
    this.#highWaterMark = options.highWaterMark ?? 1024 * 1024;
  }

  write(chunk: Uint8Array, options?: { transfer?: boolean }): Promise<void> {
    if (this.#cancelled) return Promise.reject(new ProtocolError('PROTOCOL_ABORTED', 'the reader went away'));
    if (this.#ended) return Promise.reject(new ProtocolError('PROTOCOL_UNEXPECTED', 'write after end'));
    if (options?.transfer === true) this.#given.add(chunk);
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      waiter.resolve({ value: chunk, done: false });
      return Promise.resolve();
    }
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued < this.#highWaterMark) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.#drained.push({ resolve, reject }));
  }

  /** Whether the writer gave `chunk` up (wrote it with `transfer`): its reader may move its buffer. */
  given(chunk: Uint8Array): boolean {
    return this.#given.has(chunk);
  }

  async end(): Promise<void> {
    this.#finish();
  }

  fail(error: unknown): void {
    if (this.#ended) return;
    this.#error = error;
    this.#finish();
  }

  #finish(): void {
    this.#ended = true;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (!waiter) return; // queued chunks are still delivered, then the end
    if (this.#error !== undefined) waiter.reject(this.#error);
    else waiter.resolve({ value: undefined, done: true });
  }

  #take(): Uint8Array | undefined {
    const chunk = this.#queue.shift();
    if (!chunk) return undefined;
    this.#queued -= chunk.length;
    if (this.#queued < this.#highWaterMark && this.#drained.length > 0) {
      const drained = this.#drained;
      this.#drained = [];
      for (const d of drained) d.resolve();
    }
    return chunk;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => {
        const chunk = this.#take();
        if (chunk) return Promise.resolve({ value: chunk, done: false });
        if (this.#ended) {
          if (this.#error !== undefined) return Promise.reject(this.#error);
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => {
          this.#waiter = { resolve, reject };
        });
      },
      return: async () => {
        this.#cancelled = true;
        this.#queue.length = 0;
        this.#queued = 0;
        const drained = this.#drained;
        this.#drained = [];
        for (const d of drained) d.reject(new ProtocolError('PROTOCOL_ABORTED', 'the reader went away'));
        return { value: undefined, done: true };
      },
    };
  }
}

/**
 * Two connected in-memory Connections (what one writes, the other reads), for hosting a server
 * and a client in one context, and for tests.
 */
export function connectionPair(): [Connection, Connection] {
  const aToB = new ByteChannel();
  const bToA = new ByteChannel();
  return [
    { input: bToA, write: (bytes) => aToB.write(bytes), end: () => aToB.end() },
    { input: aToB, write: (bytes) => bToA.write(bytes), end: () => bToA.end() },
  ];
}
