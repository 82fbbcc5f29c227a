/**
 * @gitport/transport throughput, main thread -> worker thread (issue 4), side by side with a
 * minimal raw MessagePort sender on the same kind of port in the same run.
 *
 * Both senders allocate and fill each chunk and transfer its buffer; both receivers (a worker
 * thread each, tests/src/transport/bench-peer.ts) read every byte of every chunk with the same
 * function and answer a checksum that is checked, so a sender that drops or corrupts data fails
 * the bench.
 * Both use the same credit window (1 MiB for 64 KiB chunks, 4 MiB for 1 MiB chunks). The
 * transport's reader grants it back in half-window batches (its protocol); the raw receiver in
 * quarter-window batches, which measured no slower for it than halves. The transport goes
 * through the bus (createBus + nodeEndpoint on a MessageChannel port of its own); the raw
 * sender posts `{s, b}` on another bare MessageChannel port. The raw sender and receiver are the
 * ones the in-browser rows use (tests/src/transport/bench-shared.ts).
 *
 * Figures are medians of the timed runs: MB/s (10^6 bytes per second) and messages (chunks)
 * per second; each timed transfer includes opening the stream and waiting for the answer (the
 * warm-up runs open the same names, so timed opens are optimistic: data follows the open frame
 * without waiting for the accept, as for any opener that used a name before). The
 * transport and the raw sender run alternately within each iteration, so a change of load on
 * the (shared, 2-core) machine hits both alike.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { type Bus, createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { open } from '@gitport/transport';
import { afterAll, bench, describe } from 'vitest';
import {
  benchSinkFor,
  checkAnswer,
  nodeRawPort,
  type RawSender,
  rawSender,
  readEveryByte,
  sendToSink,
} from '../tests/src/transport/bench-shared.js';
import { startTsWorker } from '../tests/src/ts-worker.js';
import { mbps, median, record, sized } from './report.js';

const KiB = 1024;
const MiB = 1024 * 1024;
const WARMUP = sized(2, 1);
/** Timed runs of a case: at least 10, more for small transfers (about 1 GB per side), at most 50. */
const iterationsFor = (bytes: number) => sized(Math.max(10, Math.min(50, Math.floor(1e9 / bytes))), 1);

// ---------------------------------------------------------------- the worker

const PEER = 'bench-peer';
const PEER_ENTRY = new URL('../tests/src/transport/bench-peer.ts', import.meta.url);
let workers: Worker[] = [];
let bus: Bus | undefined;
let rawPort: MessagePort | undefined;
let raw: RawSender | undefined;

/**
 * The transport's far side and the raw baseline's far side run in two worker threads. In one
 * thread, each side's runs paid for the other's garbage: the raw receiver allocates nothing on the
 * JavaScript heap, so the chunks it read were collected only when the next run (the transport's,
 * whose receiver does allocate) set off a collection, or by full collections that external memory
 * forced; each in its own thread, each side collects what it received during its own runs.
 */
async function setup(): Promise<{ bus: Bus; raw: RawSender }> {
  if (bus && raw) return { bus, raw };
  const channel = new MessageChannel();
  const busChannel = new MessageChannel();
  workers = [
    startTsWorker(PEER_ENTRY, {
      workerData: { id: PEER, busPort: busChannel.port2 },
      transferList: [busChannel.port2],
    }),
    startTsWorker(PEER_ENTRY, { workerData: { rawPort: channel.port2 }, transferList: [channel.port2] }),
  ];
  bus = createBus({ id: 'bench-main' });
  await bus.connect(nodeEndpoint(busChannel.port1));
  rawPort = channel.port1;
  raw = rawSender(nodeRawPort(rawPort));
  return { bus, raw };
}

// ---------------------------------------------------------------- the transport

/** The other way: ask the worker for `total` bytes in `chunk`s and read every byte. */
async function receiveTransport(b: Bus, total: number, chunk: number): Promise<void> {
  const stream = await open(b, PEER, 'bench-source');
  await stream.write(new TextEncoder().encode(JSON.stringify({ total, chunk })));
  await stream.end();
  let got = 0;
  let sum = 0;
  for await (const part of stream) {
    sum = (sum + readEveryByte(part)) | 0;
    got += part.byteLength;
  }
  checkAnswer({ total: got, sum }, total, chunk);
}

// ---------------------------------------------------------------- the runs

interface Case {
  id: string;
  label: string;
  /** Which way the bytes go (main thread -> worker unless told). */
  toMain?: boolean;
  /** Timed runs, when not derived from the size. */
  iterations?: number;
  chunk: number;
  total: number;
  streams: number;
  window: number;
  goal?: { mbps?: number; ratio?: number; reference?: string };
}

const cases: Case[] = [
  {
    id: 'transport.worker.64k',
    label: '64 KiB chunks',
    chunk: 64 * KiB,
    total: sized(256 * MiB, 4 * MiB),
    streams: 1,
    window: MiB,
    goal: { mbps: 2000, ratio: 0.8 },
  },
  {
    id: 'transport.worker.1m',
    label: '1 MiB chunks',
    chunk: MiB,
    total: sized(512 * MiB, 8 * MiB),
    streams: 1,
    window: 4 * MiB,
    goal: { ratio: 0.8 },
  },
  {
    id: 'transport.worker-to-main.64k',
    label: '64 KiB chunks, worker thread -> main thread',
    toMain: true,
    chunk: 64 * KiB,
    total: sized(256 * MiB, 4 * MiB),
    streams: 1,
    window: MiB,
    goal: { ratio: 0.8 },
  },
  {
    // pkt-line-sized writes: the transport coalesces them, the raw sender posts each one.
    id: 'transport.worker.256b',
    label: '256 B writes',
    chunk: 256,
    total: sized(4 * MiB, 256 * KiB),
    streams: 1,
    window: MiB,
    iterations: 5,
  },
  {
    id: 'transport.10mb-64kb',
    label: '10 MB in 64 KB chunks',
    chunk: 64 * KiB,
    total: 160 * 64 * KiB,
    streams: 1,
    window: MiB,
    goal: { mbps: 630, reference: 'reference report 004: 630 MB/s' },
  },
  {
    id: 'transport.concurrent.10x10mb',
    label: '10 concurrent transfers of 10 MB',
    chunk: 64 * KiB,
    total: 160 * 64 * KiB,
    streams: 10,
    window: MiB,
    goal: { mbps: 767, reference: 'reference report 004: 767 MB/s combined' },
  },
  {
    id: 'transport.concurrent.10x128k',
    label: '10 concurrent transfers of 128 KB',
    chunk: 64 * KiB,
    total: 128 * KiB,
    streams: 10,
    window: MiB,
    goal: { mbps: 767, reference: 'reference report 004: 767 MB/s combined (10 x 128 KB)' },
  },
];

const times = new Map<string, { transport: number[]; raw: number[] }>();
const timesOf = (id: string) => {
  let t = times.get(id);
  if (t === undefined) {
    t = { transport: [], raw: [] };
    times.set(id, t);
  }
  return t;
};

for (const c of cases) {
  const name = benchSinkFor(c.window);
  describe(c.toMain ? c.label : `${c.label}, main thread -> worker thread`, () => {
    // One bench runs both, alternating (and which goes first alternates too), so a change of
    // load on the machine hits both alike.
    let round = 0;
    bench(
      '@gitport/transport and raw MessagePort with a credit window, alternating',
      async () => {
        const { bus: b, raw: peer } = await setup();
        const runTransport = async () => {
          const start = performance.now();
          await Promise.all(
            Array.from({ length: c.streams }, () =>
              c.toMain ? receiveTransport(b, c.total, c.chunk) : sendToSink(b, PEER, name, c.total, c.chunk),
            ),
          );
          timesOf(c.id).transport.push(performance.now() - start);
        };
        const runRaw = async () => {
          const start = performance.now();
          await Promise.all(
            Array.from({ length: c.streams }, () =>
              c.toMain ? peer.receive(c.total, c.chunk, c.window) : peer.send(c.total, c.chunk, c.window),
            ),
          );
          timesOf(c.id).raw.push(performance.now() - start);
        };
        if (round++ % 2 === 0) {
          await runTransport();
          await runRaw();
        } else {
          await runRaw();
          await runTransport();
        }
      },
      {
        iterations: c.iterations === undefined ? iterationsFor(c.total * c.streams) : sized(c.iterations, 1),
        warmupIterations: WARMUP,
        time: 0,
        warmupTime: 0,
      },
    );
  });
}

afterAll(async () => {
  for (const c of cases) {
    const t = times.get(c.id);
    if (t === undefined || t.transport.length <= WARMUP) continue;
    const bytes = c.total * c.streams;
    const messages = bytes / c.chunk;
    // The first runs are vitest's warmup.
    const ms = median(t.transport.slice(WARMUP));
    const rawMs = median(t.raw.slice(WARMUP));
    const note = `${c.label}, ${c.streams} stream(s), window ${c.window / KiB} KiB${c.goal?.reference ? `; ${c.goal.reference}` : ''}`;
    record({
      id: `${c.id}.mbps`,
      value: mbps(bytes, ms),
      unit: 'MB/s',
      peer: 'raw MessagePort + credit window',
      peerValue: mbps(bytes, rawMs),
      better: 'higher',
      ...(c.goal?.mbps ? { goal: { min: c.goal.mbps, source: 'issue 4' } } : {}),
      note,
    });
    record({
      id: `${c.id}.msgs`,
      value: messages / (ms / 1000),
      unit: 'messages/s',
      peer: 'raw MessagePort + credit window',
      peerValue: messages / (rawMs / 1000),
      better: 'higher',
      ...(c.goal?.ratio ? { goal: { min: c.goal.ratio, on: 'ratio' as const, source: 'issue 4' } } : {}),
      note: `chunks per second, ${note}`,
    });
  }
  bus?.close();
  rawPort?.close();
  await Promise.all(workers.map((w) => w.terminate()));
});
