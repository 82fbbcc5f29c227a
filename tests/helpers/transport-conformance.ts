/**
 * The transport conformance suite: one set of tests every way of pairing two transports must
 * pass (raw MessageChannel in one thread, a bus over MessageChannel, a bus to a worker thread,
 * later a Web Worker in Chromium). The far side runs `serveConformance`
 * (`transport-conformance-service.ts`); this side drives it. Web APIs only.
 *
 * Everything asserted is a byte count, a hash or an error code: no timings.
 */

import type { DuplexStream, StreamStats } from '@gitport/transport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ByteHash,
  type Header,
  jsonLine,
  Random,
  type Report,
  SMALL_WINDOW,
  type TransportSide,
} from './transport-conformance-service.js';

export interface ConformancePair {
  /** The transport in this context. */
  local: TransportSide;
  /** The bus id of the far side (which runs `serveConformance`). */
  remotePeer: string;
  /** Kills the far side abruptly (terminates its worker, closes its port). */
  kill(): Promise<void>;
  /** Releases everything (after kill() too). */
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** Bytes of the big integrity transfer (100 MB unless told). */
  bigBytes?: number;
  /** The receive window the streams of the suite use (the default window unless told). */
  window?: number;
}

const MiB = 1024 * 1024;
const decoder = new TextDecoder();

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<ByteHash> {
  const hash = new ByteHash();
  for await (const chunk of stream) hash.update(chunk);
  return hash;
}

async function readJson<T>(stream: AsyncIterable<Uint8Array>): Promise<T> {
  let text = '';
  for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  return JSON.parse(text) as T;
}

/** Writes `bytes` seeded random bytes in random chunk sizes and random ownership; returns their hash. */
async function writeRandom(
  stream: DuplexStream,
  bytes: number,
  seed: number,
  maxChunk: number,
  checks: { views: number; transferred: number } = { views: 0, transferred: 0 },
): Promise<ByteHash> {
  const data = new Random(seed);
  const choice = new Random(seed ^ 0x2545f491);
  const hash = new ByteHash();
  let left = bytes;
  while (left > 0) {
    const n = Math.min(left, choice.size(maxChunk));
    const mode = choice.next() % 3;
    if (mode === 0) {
      // A chunk we keep: copied.
      const chunk = data.fill(new Uint8Array(n));
      hash.update(chunk);
      await stream.write(chunk);
    } else if (mode === 1) {
      // A chunk we give up, spanning its whole buffer: may be transferred.
      const chunk = data.fill(new Uint8Array(n));
      hash.update(chunk);
      await stream.write(chunk, { transfer: true });
      checks.transferred++;
    } else {
      // A view into a larger buffer (like a pooled Buffer): must be copied even with transfer.
      const backing = new Uint8Array(n + 64);
      const chunk = data.fill(backing.subarray(32, 32 + n));
      hash.update(chunk);
      await stream.write(chunk, { transfer: true });
      expect(backing.byteLength).toBe(n + 64);
      expect(chunk.byteLength).toBe(n);
      checks.views++;
    }
    left -= n;
  }
  return hash;
}

async function start(
  pair: ConformancePair,
  header: Header,
  window?: number,
  name = 'conformance',
): Promise<DuplexStream> {
  const stream = await pair.local.open(pair.remotePeer, name, window ? { window } : {});
  await stream.write(jsonLine(header));
  return stream;
}

async function report(pair: ConformancePair, id: string): Promise<Report> {
  const stream = await start(pair, { op: 'report', id });
  await stream.end();
  return readJson<Report>(stream);
}

let ids = 0;
const nextId = (prefix: string) => `${prefix}-${++ids}`;

/**
 * Registers the suite. `createPair` is called once for the shared tests and once more for the
 * peer-death test (which kills its far side).
 */
export function transportConformance(
  label: string,
  createPair: () => Promise<ConformancePair>,
  options: ConformanceOptions = {},
): void {
  const bigBytes = options.bigBytes ?? 100 * 1000 * 1000;
  const window = options.window;

  describe(`transport conformance: ${label}`, () => {
    let pair: ConformancePair;
    beforeAll(async () => {
      pair = await createPair();
    });
    afterAll(async () => {
      await pair?.close();
    });

    it(`carries ${bigBytes} random bytes in random chunk sizes, in order, both ways`, async () => {
      const id = nextId('big');
      // This side to the far side.
      const up = await start(pair, { op: 'sink', id }, window);
      const checks = { views: 0, transferred: 0 };
      const sent = await writeRandom(up, bigBytes, 0xc0ffee, 2 * MiB, checks);
      await up.end();
      const got = await readJson<Report>(up);
      expect(got.bytes).toBe(bigBytes);
      expect(got.hash).toBe(sent.hex);
      expect(checks.views).toBeGreaterThan(10);
      expect(checks.transferred).toBeGreaterThan(10);
      await up.closed;
      // The far side to this side (its writer picks random chunk sizes too).
      const down = await start(pair, { op: 'source', bytes: bigBytes, seed: 7, maxChunk: 2 * MiB }, window);
      await down.end();
      const received = await readAll(down);
      const expected = new ByteHash();
      const random = new Random(7);
      const sizes = new Random(7 ^ 0x5bd1e995);
      for (let left = bigBytes; left > 0; ) {
        const n = Math.min(left, sizes.size(2 * MiB));
        expected.update(random.fill(new Uint8Array(n)));
        left -= n;
      }
      expect(received.hex).toBe(expected.hex);
      await down.closed;
    });

    it('echoes through the WHATWG readable/writable pair with small and large chunks', async () => {
      const stream = await start(pair, { op: 'echo' }, window);
      const random = new Random(99);
      const sizes = new Random(100);
      const sent = new ByteHash();
      const total = 8 * MiB;
      let left = total;
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (left === 0) return controller.close();
          const n = Math.min(left, sizes.size(256 * 1024));
          const chunk = random.fill(new Uint8Array(n));
          sent.update(chunk);
          left -= n;
          controller.enqueue(chunk);
        },
      });
      const received = new ByteHash();
      await Promise.all([
        source.pipeTo(stream.writable),
        stream.readable.pipeTo(new WritableStream({ write: (chunk) => received.update(chunk) })),
      ]);
      expect(received.bytes).toBe(total);
      expect(received.hex).toBe(sent.hex);
      await stream.closed;
    });

    it('delivers small writes without end(): request/response rounds', async () => {
      const stream = await start(pair, { op: 'echo' }, window);
      const it = stream[Symbol.asyncIterator]();
      for (let round = 0; round < 20; round++) {
        const request = new TextEncoder().encode(`request ${round}\n`);
        await stream.write(request);
        let got = 0;
        while (got < request.byteLength) {
          const r = await it.next();
          if (r.done) throw new Error('ended early');
          got += r.value.byteLength;
        }
        expect(got).toBe(request.byteLength);
      }
      await stream.end();
      expect((await it.next()).done).toBe(true);
      await stream.closed;
    });

    it('bounds memory with a stalled reader: the writer waits, queues stay within the window', async () => {
      const id = nextId('stall');
      const stream = await start(pair, { op: 'stall', id }, window);
      const chunk = 64 * 1024;
      const random = new Random(5);
      const sent = new ByteHash();
      const remoteWindow = stream.stats.remoteWindow;
      // Write while there is credit: each of these resolves without the reader.
      let written = 0;
      while (stream.stats.credit >= chunk) {
        const data = random.fill(new Uint8Array(chunk));
        sent.update(data);
        await stream.write(data, { transfer: true });
        written += chunk;
      }
      // One more cannot go out until the far side reads: it is larger than the credit left plus
      // anything the far side consumed (only the header line), and a transferred chunk goes whole.
      let resolved = false;
      const data = random.fill(new Uint8Array(stream.stats.credit + 4096));
      sent.update(data);
      const pendingWrite = stream.write(data, { transfer: true }).then(() => {
        resolved = true;
      });
      expect(stream.stats.inFlightBytes).toBeLessThanOrEqual(remoteWindow);
      // A round trip on the same connection: everything sent before it has arrived.
      const statsStream = await start(pair, { op: 'stats' });
      await statsStream.end();
      const remoteStats = await readJson<{ queuedBytes: number }>(statsStream);
      expect(remoteStats.queuedBytes).toBeLessThanOrEqual(remoteWindow);
      expect(resolved).toBe(false);
      // Release it: the far side reports its queue before reading.
      const release = await start(pair, { op: 'release', id });
      await release.end();
      const figures = await readJson<{ stream: StreamStats }>(release);
      expect(figures.stream.queuedBytes).toBeGreaterThanOrEqual(written);
      expect(figures.stream.queuedBytes).toBeLessThanOrEqual(remoteWindow);
      await pendingWrite;
      expect(resolved).toBe(true);
      // Then much more than the window flows, never queueing more than the window.
      for (let i = 0; i < 64; i++) {
        const more = random.fill(new Uint8Array(chunk));
        sent.update(more);
        await stream.write(more, { transfer: true });
      }
      await stream.end();
      const got = await readJson<Report>(stream);
      expect(got.hash).toBe(sent.hex);
      expect(got.maxQueued).toBeLessThanOrEqual(remoteWindow);
      expect(got.maxQueued).toBeGreaterThanOrEqual(written);
    });

    it('half-closes: this side ends first, then reads the whole answer', async () => {
      const stream = await start(pair, { op: 'echo' }, window);
      // The echo answers while we write, so we read at the same time (windows are finite).
      const reading = readAll(stream);
      const sent = await writeRandom(stream, 3 * MiB, 11, 128 * 1024);
      await stream.end();
      await expect(stream.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
      const got = await reading;
      expect(got.hex).toBe(sent.hex);
      await stream.closed;
    });

    it('half-closes: the far side ends first, this side keeps writing', async () => {
      const id = nextId('source');
      const stream = await start(pair, { op: 'source', bytes: MiB, seed: 3, maxChunk: 32 * 1024, id }, window);
      const got = await readAll(stream);
      expect(got.bytes).toBe(MiB);
      // Our direction is still open after theirs ended.
      const sent = await writeRandom(stream, 2 * MiB, 4, 100 * 1024);
      await stream.end();
      await stream.closed;
      const r = await report(pair, id);
      expect(r.hash).toBe(sent.hex);
      expect(r.error).toBeUndefined();
    });

    it('accepts streams the far side opens, half-closed both ways', async () => {
      const id = nextId('back');
      const name = `back-${id}`;
      const answer = new Random(21);
      const answered = new ByteHash();
      const received = new Promise<ByteHash>((resolve, reject) => {
        const stop = pair.local.listen(name, (stream) => {
          stop();
          (async () => {
            const got = await readAll(stream); // the far side ends first
            for (let i = 0; i < 10; i++) {
              const chunk = answer.fill(new Uint8Array(50_000));
              answered.update(chunk);
              await stream.write(chunk);
            }
            await stream.end();
            await stream.closed;
            return got;
          })().then(resolve, reject);
        });
      });
      const call = await start(pair, { op: 'call-back', name, bytes: 3 * MiB, seed: 22, id });
      await call.end();
      await readAll(call);
      const got = await received;
      const expected = new ByteHash();
      const random = new Random(22);
      const sizes = new Random(22 ^ 0x5bd1e995);
      for (let left = 3 * MiB; left > 0; ) {
        const n = Math.min(left, sizes.size(64 * 1024));
        expected.update(random.fill(new Uint8Array(n)));
        left -= n;
      }
      expect(got.hex).toBe(expected.hex);
      const r = await report(pair, id);
      expect(r.hash).toBe(answered.hex);
    });

    it('aborts from this side: both directions fail on both sides with TRANSPORT_ABORTED', async () => {
      const id = nextId('watch');
      const stream = await start(pair, { op: 'watch', id }, window);
      await stream.write(new Uint8Array(100_000));
      const reading = readAll(stream);
      stream.abort(new Error('local-boom'));
      await expect(reading).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      await expect(stream.write(new Uint8Array(10))).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      await expect(stream.end()).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      const r = await report(pair, id);
      expect(r.error?.code).toBe('TRANSPORT_ABORTED');
      expect(r.error?.cause).toBe('local-boom');
      expect(r.writeError).toBe('TRANSPORT_ABORTED');
    });

    it('aborts from the far side: writes and reads here fail with TRANSPORT_ABORTED and its reason', async () => {
      const stream = await start(pair, { op: 'abort-after', bytes: 200_000, reason: 'remote-boom' }, window);
      const reading = readAll(stream);
      let failure: unknown;
      try {
        for (let i = 0; i < 10_000; i++) await stream.write(new Uint8Array(64 * 1024));
      } catch (error) {
        failure = error;
      }
      expect(failure).toMatchObject({ code: 'TRANSPORT_ABORTED' });
      expect((failure as Error).cause).toMatchObject({ message: 'remote-boom' });
      await expect(reading).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
    });

    it('cancelling the readable stops the far writer with TRANSPORT_CANCELLED', async () => {
      const id = nextId('cancel');
      const stream = await start(pair, { op: 'source', bytes: 1024 * MiB, seed: 8, maxChunk: 64 * 1024, id }, window);
      await stream.end();
      const reader = stream.readable.getReader();
      let got = 0;
      while (got < 2 * MiB) {
        const r = await reader.read();
        if (r.done) throw new Error('ended early');
        got += r.value.byteLength;
      }
      await reader.cancel(new Error('enough'));
      const r = await report(pair, id);
      expect(r.writeError).toBe('TRANSPORT_CANCELLED');
      await stream.closed;
    });

    it('a failing source piped into the writable aborts the stream on both sides', async () => {
      const id = nextId('pipe-abort');
      const stream = await start(pair, { op: 'watch', id }, window);
      let sent = 0;
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 300_000) return controller.error(new Error('source-broke'));
          sent += 50_000;
          controller.enqueue(new Uint8Array(50_000));
        },
      });
      await expect(source.pipeTo(stream.writable)).rejects.toMatchObject({ message: 'source-broke' });
      await expect(stream.closed).rejects.toMatchObject({ code: 'TRANSPORT_ABORTED' });
      const r = await report(pair, id);
      expect(r.error?.code).toBe('TRANSPORT_ABORTED');
      expect(r.error?.cause).toBe('source-broke');
    });

    it('refuses to open a name nobody listens on with TRANSPORT_NO_LISTENER', async () => {
      await expect(pair.local.open(pair.remotePeer, 'nobody-listens-here')).rejects.toMatchObject({
        code: 'TRANSPORT_NO_LISTENER',
      });
    });

    it('runs 100 concurrent streams on one connection, each intact, none starved', async () => {
      const before = pair.local.stats().streams;
      const count = 100;
      const perStream = 512 * 1024;
      // Small windows both ways: the far side receives on `conformance-small`.
      const streamWindow = SMALL_WINDOW;
      const streams = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          start(pair, { op: 'sink', id: nextId(`many${i}`) }, streamWindow, 'conformance-small'),
        ),
      );
      const written = new Array<number>(count).fill(0);
      let minWhenFirstDone = -1;
      const results = await Promise.all(
        streams.map(async (stream, i) => {
          const random = new Random(1000 + i);
          const sizes = new Random(2000 + i);
          const sent = new ByteHash();
          while (written[i]! < perStream) {
            const n = Math.min(perStream - written[i]!, sizes.size(16 * 1024));
            const chunk = random.fill(new Uint8Array(n));
            sent.update(chunk);
            await stream.write(chunk, { transfer: true });
            written[i]! += n;
          }
          if (minWhenFirstDone < 0) minWhenFirstDone = Math.min(...written);
          await stream.end();
          const got = await readJson<Report>(stream);
          return { sent: sent.hex, got: got.hash, maxQueued: got.maxQueued };
        }),
      );
      for (const r of results) {
        expect(r.got).toBe(r.sent);
        expect(r.maxQueued).toBeLessThanOrEqual(streamWindow);
      }
      // When the first writer finished, every other one had had its window's worth go out.
      expect(minWhenFirstDone).toBeGreaterThanOrEqual(streamWindow - 16 * 1024);
      expect(pair.local.stats().streams).toBe(before);
    });
  });

  describe(`transport conformance: ${label}, sharing`, () => {
    let pair: ConformancePair;
    beforeAll(async () => {
      pair = await createPair();
    });
    afterAll(async () => {
      await pair?.close();
    });

    it('a bulk stream does not hold back small exchanges on the same connection', async () => {
      // The bulk can only run a window ahead of what the far side has read, and each small
      // exchange (open, write, echo) waits behind at most a window of bulk data at each step. So
      // every exchange finishes within a few windows of bulk, counted in bytes (not time): the
      // far side's flushes of small writes must not wait until its port stops receiving.
      const bulk = await start(pair, { op: 'sink' }, window);
      const bulkWindow = bulk.stats.remoteWindow;
      const bulkBytes = 64 * bulkWindow;
      let bulkWritten = 0;
      const bulkWriting = (async () => {
        while (bulkWritten < bulkBytes) {
          await bulk.write(new Uint8Array(64 * 1024), { transfer: true });
          bulkWritten += 64 * 1024;
        }
        await bulk.end();
        return readJson<Report>(bulk);
      })();
      const bulkWhenDone = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const stream = await start(pair, { op: 'echo' }, window);
          const it = stream[Symbol.asyncIterator]();
          await stream.write(new TextEncoder().encode(`ping ${i}`));
          let got = 0;
          while (got < `ping ${i}`.length) {
            const r = await it.next();
            if (r.done) throw new Error('ended early');
            got += r.value.byteLength;
          }
          const written = bulkWritten;
          await stream.end();
          await it.next();
          return written;
        }),
      );
      expect(Math.max(...bulkWhenDone)).toBeLessThanOrEqual(8 * bulkWindow);
      expect((await bulkWriting).bytes).toBe(bulkBytes);
    });
  });

  describe(`transport conformance: ${label}, peer death`, () => {
    it('errors every open stream of a peer that dies mid-stream with TRANSPORT_PEER_LOST', async () => {
      const pair = await createPair();
      try {
        const writing = await start(pair, { op: 'sink' }, window);
        const stalled = await start(pair, { op: 'stall', id: nextId('dead') }, window);
        const reading = readAll(stalled);
        // Make sure the far side is mid-stream: it has read some of ours.
        await writing.write(new Uint8Array(3 * MiB));
        const statsStream = await start(pair, { op: 'stats' });
        await statsStream.end();
        await readJson(statsStream);
        const writer = (async () => {
          for (;;) await writing.write(new Uint8Array(64 * 1024));
        })();
        // both fail at the kill, before the assertions below reach them: handled from now on
        for (const pending of [writer, reading]) pending.catch(() => {});
        await pair.kill();
        // Settled first, then asserted: Bun's test runner delivers no MessagePort message while
        // an `expect(...).rejects` waits, and the hub's peer-left notice is one.
        const [writerError, readingError] = await Promise.all([writer, reading].map(settledError));
        expect(writerError).toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
        expect(readingError).toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
        await expect(writing.closed).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
        await expect(stalled.closed).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
        await expect(stalled.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
        expect(pair.local.stats().streams).toBe(0);
      } finally {
        await pair.close();
      }
    });
  });
}

/** What a promise rejected with, or undefined when it fulfilled. */
function settledError(pending: Promise<unknown>): Promise<unknown> {
  return pending.then(
    () => undefined,
    (error: unknown) => error,
  );
}
