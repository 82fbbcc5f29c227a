/**
 * Request bodies: bounded, idle-timed, optionally gzip-inflated (gitprotocol-http: clients send
 * `Content-Encoding: gzip` upload-pack requests over 1 KiB), all as pull-based async iterables so
 * a slow consumer slows the client down instead of buffering.
 */
import { GatewayError } from './errors.js';

export interface BodyLimits {
  /** Bytes on the wire (before inflation). */
  maxBytes: number;
  /** Bytes after gzip inflation. */
  maxInflatedBytes: number;
  /** Longest wait for the next chunk, in ms (0: none). */
  idleMs: number;
}

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

/** Yields the body's chunks; throws GATEWAY_BODY_TOO_LARGE past `maxBytes`, GATEWAY_BODY_IDLE on a stall. */
export async function* limitBody(
  source: BodySource,
  limits: { maxBytes: number; idleMs: number; code?: string },
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  const it = iterate(source);
  let total = 0;
  try {
    for (;;) {
      if (signal.aborted) throw abortError(signal);
      const step = await withIdle(it.next(), limits.idleMs, signal);
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

function withIdle<T>(promise: Promise<T>, idleMs: number, signal: AbortSignal): Promise<T> {
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
    if (idleMs > 0) {
      timer = setTimeout(() => {
        cleanup();
        reject(new GatewayError('GATEWAY_BODY_IDLE', `no request body bytes for ${idleMs} ms`, { status: 408 }));
      }, idleMs);
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
