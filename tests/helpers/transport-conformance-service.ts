/**
 * The far side of the transport conformance suite (`transport-conformance.ts`). It runs wherever
 * the other end of the pair lives: the same thread, a worker thread, a Web Worker; so it uses
 * web APIs only.
 *
 * It listens on `conformance` (the default window) and `conformance-small` (a receive window of
 * {@link SMALL_WINDOW}), the same service on both. A stream starts with one header line of JSON, `{"op": ...}\n`:
 *   sink       read everything; answer {bytes, hash, maxQueued} and end
 *   echo       write every chunk back; end when the input ends
 *   source     write `bytes` seeded random bytes in random chunks, end; read the input (report)
 *   stall      read nothing until `release` names it; then behave as sink
 *   release    release a stalled stream; answer its queue figures first
 *   abort-after  read `bytes`, then abort with Error(`reason`)
 *   watch      read until the end or an error and record what happened (report)
 *   call-back  open a stream back to the caller on `name`, write `bytes`, end, read the answer (report)
 *   report     answer the record of stream `id` once it is complete
 *   stats      answer the transport's byte counts
 */
import type { DuplexStream, TransportStats } from '@gitport/transport';

/** The receive window of the service's streams on `conformance-small`. */
export const SMALL_WINDOW = 32 * 1024;

export interface TransportSide {
  listen(name: string, onStream: (stream: DuplexStream) => void, options?: { window?: number }): () => void;
  open(peer: string, name: string, options?: { window?: number; signal?: AbortSignal }): Promise<DuplexStream>;
  stats(): TransportStats;
}

/** 32-bit FNV-1a over a byte sequence, with its length: order-sensitive, chunking-insensitive. */
export class ByteHash {
  #h = 0x811c9dc5;
  bytes = 0;
  update(chunk: Uint8Array): void {
    let h = this.#h;
    for (let i = 0; i < chunk.length; i++) h = Math.imul(h ^ chunk[i]!, 0x01000193);
    this.#h = h;
    this.bytes += chunk.length;
  }
  get hex(): string {
    return `${(this.#h >>> 0).toString(16).padStart(8, '0')}:${this.bytes}`;
  }
}

/** A seeded xorshift32 generator of bytes and sizes (the same on both sides). */
export class Random {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let s = this.#s;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.#s = s >>> 0;
    return this.#s;
  }
  /** A float in [0, 1). */
  float(): number {
    return this.next() / 2 ** 32;
  }
  fill(target: Uint8Array): Uint8Array {
    let i = 0;
    for (; i + 4 <= target.length; i += 4) {
      const v = this.next();
      target[i] = v;
      target[i + 1] = v >>> 8;
      target[i + 2] = v >>> 16;
      target[i + 3] = v >>> 24;
    }
    for (; i < target.length; i++) target[i] = this.next();
    return target;
  }
  /** A log-uniform size in [1, max]. */
  size(max: number): number {
    return Math.max(1, Math.min(max, Math.floor(2 ** (this.float() * Math.log2(max + 1)))));
  }
}

export interface Report {
  bytes: number;
  hash: string;
  maxQueued: number;
  error?: { code?: string; message: string; cause?: string };
  writeError?: string;
}

export type Header =
  | { op: 'sink'; id?: string }
  | { op: 'echo' }
  | { op: 'source'; bytes: number; seed: number; maxChunk: number; id?: string }
  | { op: 'stall'; id: string }
  | { op: 'release'; id: string }
  | { op: 'abort-after'; bytes: number; reason: string }
  | { op: 'watch'; id: string }
  | { op: 'call-back'; name: string; bytes: number; seed: number; id: string }
  | { op: 'report'; id: string }
  | { op: 'stats' };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads the header line; returns it and an iterator over the rest of the stream's bytes. */
export async function readHeader(
  stream: AsyncIterable<Uint8Array>,
): Promise<{ header: unknown; rest: AsyncIterator<Uint8Array>; first?: Uint8Array }> {
  const it = stream[Symbol.asyncIterator]();
  let text = '';
  for (;;) {
    const r = await it.next();
    if (r.done) throw new Error('stream ended before its header');
    const nl = r.value.indexOf(10);
    if (nl < 0) {
      text += decoder.decode(r.value, { stream: true });
      continue;
    }
    text += decoder.decode(r.value.subarray(0, nl));
    const first = nl + 1 < r.value.length ? r.value.subarray(nl + 1) : undefined;
    return { header: JSON.parse(text), rest: it, ...(first ? { first } : {}) };
  }
}

export const jsonLine = (value: unknown): Uint8Array => encoder.encode(`${JSON.stringify(value)}\n`);

const describeError = (error: unknown): Report['error'] => {
  const e = error as { code?: unknown; message?: unknown; cause?: { message?: unknown } };
  return {
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    message: String(e?.message ?? error),
    ...(e?.cause?.message !== undefined ? { cause: String(e.cause.message) } : {}),
  };
};

/** Serves the conformance protocol on `side`; returns the function that stops it. */
export function serveConformance(side: TransportSide): () => void {
  const reports = new Map<string, Report>();
  const reportWaiters = new Map<string, ((r: Report) => void)[]>();
  const stalls = new Map<string, { stream: DuplexStream; release: () => void }>();
  const stallWaiters = new Map<string, () => void>();

  const record = (id: string | undefined, report: Report) => {
    if (id === undefined) return;
    reports.set(id, report);
    for (const w of reportWaiters.get(id) ?? []) w(report);
    reportWaiters.delete(id);
  };
  const waitReport = (id: string) =>
    new Promise<Report>((resolve) => {
      const r = reports.get(id);
      if (r) return resolve(r);
      reportWaiters.set(id, [...(reportWaiters.get(id) ?? []), resolve]);
    });

  /** Reads the rest of a stream into a report (errors are recorded, not thrown). */
  const drain = async (stream: DuplexStream, rest: AsyncIterator<Uint8Array>, first?: Uint8Array): Promise<Report> => {
    const hash = new ByteHash();
    if (first) hash.update(first);
    try {
      for (;;) {
        const r = await rest.next();
        if (r.done) break;
        hash.update(r.value);
      }
    } catch (error) {
      let writeError: string | undefined;
      try {
        await stream.write(new Uint8Array(1));
      } catch (e) {
        writeError = (e as { code?: string }).code ?? String(e);
      }
      return {
        bytes: hash.bytes,
        hash: hash.hex,
        maxQueued: stream.stats.maxQueuedBytes,
        error: describeError(error),
        ...(writeError ? { writeError } : {}),
      };
    }
    return { bytes: hash.bytes, hash: hash.hex, maxQueued: stream.stats.maxQueuedBytes };
  };

  const writeRandom = async (stream: DuplexStream, bytes: number, seed: number, maxChunk: number) => {
    const random = new Random(seed);
    const sizes = new Random(seed ^ 0x5bd1e995);
    let left = bytes;
    while (left > 0) {
      const n = Math.min(left, sizes.size(maxChunk));
      await stream.write(random.fill(new Uint8Array(n)), { transfer: true });
      left -= n;
    }
  };

  const handle = async (stream: DuplexStream) => {
    const { header, rest, first } = await readHeader(stream);
    const h = header as Header;
    switch (h.op) {
      case 'sink': {
        const report = await drain(stream, rest, first);
        record(h.id, report);
        await stream.write(jsonLine(report));
        await stream.end();
        return;
      }
      case 'echo': {
        if (first) await stream.write(first.slice(), { transfer: true });
        for (;;) {
          const r = await rest.next();
          if (r.done) break;
          await stream.write(r.value, { transfer: true });
        }
        await stream.end();
        return;
      }
      case 'source': {
        const reading = drain(stream, rest, first);
        let writeError: string | undefined;
        try {
          await writeRandom(stream, h.bytes, h.seed, h.maxChunk);
          await stream.end();
        } catch (error) {
          writeError = (error as { code?: string }).code ?? String(error);
        }
        const report = await reading;
        record(h.id, writeError ? { ...report, writeError } : report);
        return;
      }
      case 'stall': {
        await new Promise<void>((release) => {
          stalls.set(h.id, { stream, release });
          stallWaiters.get(h.id)?.();
        });
        const report = await drain(stream, rest, first);
        record(h.id, report);
        await stream.write(jsonLine(report));
        await stream.end();
        return;
      }
      case 'release': {
        if (!stalls.has(h.id)) await new Promise<void>((resolve) => stallWaiters.set(h.id, resolve));
        const stall = stalls.get(h.id)!;
        stalls.delete(h.id);
        await stream.write(jsonLine({ stream: stall.stream.stats, transport: side.stats() }));
        stall.release();
        await stream.end();
        return;
      }
      case 'abort-after': {
        let got = first?.length ?? 0;
        while (got < h.bytes) {
          const r = await rest.next();
          if (r.done) break;
          got += r.value.length;
        }
        stream.abort(new Error(h.reason));
        return;
      }
      case 'watch': {
        record(h.id, await drain(stream, rest, first));
        return;
      }
      case 'call-back': {
        await stream.end();
        const back = await side.open(stream.peer, h.name);
        const reading = drain(back, back[Symbol.asyncIterator]());
        await writeRandom(back, h.bytes, h.seed, 64 * 1024);
        await back.end();
        record(h.id, await reading);
        return;
      }
      case 'report': {
        await stream.write(jsonLine(await waitReport(h.id)));
        await stream.end();
        return;
      }
      case 'stats': {
        await stream.write(jsonLine(side.stats()));
        await stream.end();
        return;
      }
      default:
        stream.abort(new Error(`unknown op ${String((h as { op?: unknown }).op)}`));
    }
  };

  const onStream = (stream: DuplexStream) => {
    handle(stream).catch((error) => {
      // A stream that failed under a test (aborts, peer death) is expected here.
      stream.abort(error);
    });
  };
  const stops = [
    side.listen('conformance', onStream),
    side.listen('conformance-small', onStream, { window: SMALL_WINDOW }),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}
