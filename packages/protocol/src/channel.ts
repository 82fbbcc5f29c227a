/**
 * A one-producer one-consumer byte channel with backpressure: `write` resolves when the
 * consumer has taken the chunk (so a slow HTTP client slows the pack writer down, memory stays
 * bounded to one chunk), `end`/`fail` finish it, and a consumer that stops early (`return`)
 * makes further writes reject with `PROTOCOL_ABORTED`.
 */
import type { Connection } from './connection.js';
import { ProtocolError } from './errors.js';

export class ByteChannel implements AsyncIterable<Uint8Array> {
  #pending: { chunk: Uint8Array; resolve: () => void; reject: (e: unknown) => void } | undefined;
  #waiter: ((r: IteratorResult<Uint8Array>) => void) | undefined;
  #waiterReject: ((e: unknown) => void) | undefined;
  #ended = false;
  #error: unknown;
  #cancelled = false;

  write(chunk: Uint8Array): Promise<void> {
    if (this.#cancelled) return Promise.reject(new ProtocolError('PROTOCOL_ABORTED', 'the reader went away'));
    if (this.#ended) return Promise.reject(new ProtocolError('PROTOCOL_UNEXPECTED', 'write after end'));
    return new Promise<void>((resolve, reject) => {
      const waiter = this.#waiter;
      if (waiter) {
        this.#waiter = undefined;
        this.#waiterReject = undefined;
        waiter({ value: chunk, done: false });
        resolve();
      } else {
        this.#pending = { chunk, resolve, reject };
      }
    });
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
    const reject = this.#waiterReject;
    this.#waiter = undefined;
    this.#waiterReject = undefined;
    if (this.#pending) return; // the consumer still takes it, then sees the end
    if (this.#error !== undefined && reject) reject(this.#error);
    else waiter?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => {
        const pending = this.#pending;
        if (pending) {
          this.#pending = undefined;
          pending.resolve();
          return Promise.resolve({ value: pending.chunk, done: false });
        }
        if (this.#ended) {
          if (this.#error !== undefined) return Promise.reject(this.#error);
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => {
          this.#waiter = resolve;
          this.#waiterReject = reject;
        });
      },
      return: async () => {
        this.#cancelled = true;
        const pending = this.#pending;
        this.#pending = undefined;
        pending?.reject(new ProtocolError('PROTOCOL_ABORTED', 'the reader went away'));
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
