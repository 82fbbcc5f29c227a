/**
 * Request bodies: bounded, idle-timed, optionally gzip-inflated (gitprotocol-http: clients send
 * `Content-Encoding: gzip` upload-pack requests over 1 KiB), all as pull-based async iterables so
 * a slow consumer slows the client down instead of buffering.
 */
import { GatewayError } from './errors.js';

export type BodySource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

function iterate(source: BodySource): AsyncIterator<Uint8Array> {
  if (Symbol.asyncIterator in source) return (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const reader = (source as ReadableStream<Uint8Array>).getReader();
  return {
    async next() {
      const r = await reader.read();
      return r.done ? { done: true, value: undefined } : { done: false, value: r.value };
    },
    async return() {
      await reader.cancel().catch(() => {});
      return { done: true, value: undefined };
    },
  };
}

export interface BodyReadLimits {
  /** Bytes at most; past them GATEWAY_BODY_TOO_LARGE (413), or `code`. */
  maxBytes: number;
  code?: string;
  /** Longest wait for the next chunk, ms (0 or absent: none); past it GATEWAY_BODY_IDLE (408). */
  idleMs?: number;
  /**
   * The slowest the body may arrive (0 or absent: no minimum). The body may spend `idleMs` (one
   * second without it) plus one second per `minBytesPerSecond` bytes received waiting for its
   * client in all; past that
   * GATEWAY_BODY_TOO_SLOW (408). Only time spent waiting in `next()` counts: a consumer that
   * does not pull (backpressure) does not use the client's allowance.
   */
  minBytesPerSecond?: number;
  /** The longest the whole body may take from the first read, ms (0 or absent: none); then GATEWAY_BODY_TIMEOUT (408). */
  timeoutMs?: number;
}

type Deadline = { ms: number; error: () => GatewayError };

/**
 * Yields the body's chunks, enforcing the limits above. Each wait is bounded by whichever limit
 * is nearest, and the error says which one ran out.
 */
export async function* limitBody(
  source: BodySource,
  limits: BodyReadLimits,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  const it = iterate(source);
  const idleMs = limits.idleMs ?? 0;
  const rate = limits.minBytesPerSecond ?? 0;
  const timeoutMs = limits.timeoutMs ?? 0;
  const started = Date.now();
  let total = 0;
  let waited = 0;
  try {
    for (;;) {
      if (signal.aborted) throw abortError(signal);
      let deadline: Deadline | undefined;
      const nearer = (ms: number, error: () => GatewayError) => {
        // setTimeout takes at most 2^31 - 1 ms
        if (deadline === undefined || ms < deadline.ms) deadline = { ms: Math.min(Math.max(0, ms), 0x7fffffff), error };
      };
      if (idleMs > 0) {
        nearer(
          idleMs,
          () => new GatewayError('GATEWAY_BODY_IDLE', `no request body bytes for ${idleMs} ms`, { status: 408 }),
        );
      }
      if (rate > 0) {
        const allowance = (idleMs > 0 ? idleMs : 1000) + (total * 1000) / rate;
        nearer(
          allowance - waited,
          () =>
            new GatewayError('GATEWAY_BODY_TOO_SLOW', `request body slower than ${rate} bytes per second`, {
              status: 408,
            }),
        );
      }
      if (timeoutMs > 0) {
        nearer(
          timeoutMs - (Date.now() - started),
          () =>
            new GatewayError('GATEWAY_BODY_TIMEOUT', `request body took longer than ${timeoutMs} ms`, { status: 408 }),
        );
      }
      const asked = Date.now();
      const step = await withDeadline(it.next(), deadline, signal);
      waited += Date.now() - asked;
      if (step.done) return;
      total += step.value.byteLength;
      if (total > limits.maxBytes) {
        throw new GatewayError(
          limits.code ?? 'GATEWAY_BODY_TOO_LARGE',
          `request body exceeds ${limits.maxBytes} bytes`,
          {
            status: 413,
          },
        );
      }
      yield step.value;
    }
  } finally {
    // not awaited: a generator with a next() still pending (a stalled client) would never return
    void it.return?.()?.catch(() => {});
  }
}

function abortError(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  if (
    typeof reason === 'object' &&
    reason !== null &&
    String((reason as { code?: unknown }).code).startsWith('GATEWAY_')
  ) {
    return reason;
  }
  return new GatewayError('GATEWAY_ABORTED', 'request aborted', { status: 499, cause: reason });
}

function withDeadline<T>(promise: Promise<T>, deadline: Deadline | undefined, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      cleanup();
      reject(abortError(signal));
    };
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    if (deadline !== undefined) {
      timer = setTimeout(() => {
        cleanup();
        reject(deadline.error());
      }, deadline.ms);
    }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        cleanup();
        resolve(v);
      },
      (e) => {
        cleanup();
        reject(e);
      },
    );
  });
}

/**
 * Inflates a gzip body, counting inflated bytes: past `maxInflatedBytes` it stops (a gzip bomb
 * costs at most that much memory and time) with GATEWAY_INFLATE_TOO_LARGE; corrupt input gives
 * GATEWAY_BAD_GZIP.
 */
export async function* gunzipBody(
  source: AsyncIterable<Uint8Array>,
  maxInflatedBytes: number,
): AsyncGenerator<Uint8Array> {
  const input = source[Symbol.asyncIterator]();
  const compressed = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const step = await input.next();
        if (step.done) controller.close();
        else controller.enqueue(step.value);
      },
      cancel() {
        void input.return?.()?.catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  const reader = compressed
    .pipeThrough(new DecompressionStream('gzip') as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)
    .getReader();
  let total = 0;
  try {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (cause) {
        if (
          typeof cause === 'object' &&
          cause !== null &&
          'code' in cause &&
          String(cause.code).startsWith('GATEWAY_')
        ) {
          throw cause;
        }
        throw new GatewayError('GATEWAY_BAD_GZIP', 'request body is not valid gzip', { status: 400, cause });
      }
      if (step.done) return;
      total += step.value.byteLength;
      if (total > maxInflatedBytes) {
        throw new GatewayError('GATEWAY_INFLATE_TOO_LARGE', `inflated request body exceeds ${maxInflatedBytes} bytes`, {
          status: 413,
        });
      }
      yield step.value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Reads a whole (already bounded) body into one array. */
export async function collect(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    parts.push(chunk);
    size += chunk.byteLength;
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Reads at least `n` bytes (or to the end) and returns them with an iterable that yields the
 * whole body again, the head first.
 */
export async function peek(
  source: AsyncIterable<Uint8Array>,
  n: number,
): Promise<{ head: Uint8Array; ended: boolean; body: AsyncIterable<Uint8Array> }> {
  const it = source[Symbol.asyncIterator]();
  const parts: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  while (size < n) {
    const step = await it.next();
    if (step.done) {
      ended = true;
      break;
    }
    parts.push(step.value);
    size += step.value.byteLength;
  }
  const head = parts.length === 1 ? parts[0]! : await collect(toIterable(parts));
  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      if (head.byteLength > 0) yield head;
      if (ended) return;
      for (;;) {
        const step = await it.next();
        if (step.done) return;
        yield step.value;
      }
    } finally {
      void it.return?.()?.catch(() => {});
    }
  }
  return { head, ended, body: body() };
}

async function* toIterable(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* parts;
}

/** One chunk as a body. */
export async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** No bytes. */
export async function* empty(): AsyncGenerator<Uint8Array> {}

/** Remembers the first error the body throws, so it can be reported instead of its consequences. */
export function trackErrors(source: AsyncIterable<Uint8Array>): {
  body: AsyncIterable<Uint8Array>;
  error(): unknown;
} {
  let failure: unknown;
  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      yield* source;
    } catch (error) {
      failure ??= error;
      throw error;
    }
  }
  return { body: body(), error: () => failure };
}

/** Calls `ended` once the source has ended without error. */
export async function* onEnd(source: AsyncIterable<Uint8Array>, ended: () => void): AsyncGenerator<Uint8Array> {
  yield* source;
  ended();
}
