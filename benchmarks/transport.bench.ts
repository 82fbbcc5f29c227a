/**
 * @gitport/transport throughput, main thread -> worker thread (issue 4), side by side with a
 * minimal raw MessagePort sender on the same kind of port in the same run.
 *
 * Both senders allocate and fill each chunk and transfer its buffer; both receivers (one worker,
 * tests/src/transport/bench-peer.ts) read every byte of every chunk with the same function and
 * answer a checksum that is checked, so a sender that drops or corrupts data fails the bench.
 * Both use the same credit window (1 MiB for 64 KiB chunks, 4 MiB for 1 MiB chunks), granted
 * back in quarter-window batches. The transport goes through the bus (createBus + nodeEndpoint
 * on the Worker); the raw sender posts `{s, b}` on a bare MessageChannel port.
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
import { benchSinkFor, fillByte, readEveryByte } from '../tests/src/transport/bench-shared.js';
import { startTsWorker } from '../tests/src/ts-worker.js';
import { mbps, record, sized } from './report.js';

const KiB = 1024;
const MiB = 1024 * 1024;
const WARMUP = sized(2, 1);
/** Timed runs of a case: at least 10, more for small transfers (about 1 GB per side), at most 50. */
const iterationsFor = (bytes: number) => sized(Math.max(10, Math.min(50, Math.floor(1e9 / bytes))), 1);

const checksums = new Map<string, number>();
/** The checksum the receiver must answer for `count` chunks of `size` bytes. */
function expectedSum(size: number, count: number): number {
  let sum = 0;
  for (let i = 0; i < count; i++) {
    const key = `${size}:${fillByte(i)}`;
    let s = checksums.get(key);
    if (s === undefined) {
      s = readEveryByte(new Uint8Array(size).fill(fillByte(i)));
      checksums.set(key, s);
    }
    sum = (sum + s) | 0;
  }
  return sum;
}

// ---------------------------------------------------------------- the worker

const PEER = 'bench-peer';
let worker: Worker | undefined;
let bus: Bus | undefined;
let rawPort: MessagePort | undefined;

async function setup(): Promise<{ bus: Bus; raw: RawSender }> {
  if (bus && rawPort) return { bus, raw: rawSender(rawPort) };
  const channel = new MessageChannel();
  const busChannel = new MessageChannel();
  worker = startTsWorker(new URL('../tests/src/transport/bench-peer.ts', import.meta.url), {
    workerData: { id: PEER, rawPort: channel.port2, busPort: busChannel.port2 },
    transferList: [channel.port2, busChannel.port2],
  });
  bus = createBus({ id: 'bench-main' });
  await bus.connect(nodeEndpoint(busChannel.port1));
  rawPort = channel.port1;
  return { bus, raw: rawSender(rawPort) };
}

// ---------------------------------------------------------------- the raw baseline

interface RawSender {
  send(total: number, chunk: number, window: number): Promise<void>;
  /** The other way: the worker sends, this thread reads every byte and grants credit. */
  receive(total: number, chunk: number, window: number): Promise<void>;
}

let rawSenderCache: RawSender | undefined;
let rawIds = 0;

/** The minimal raw sender: a credit window per transfer, chunks allocated, filled, transferred. */
function rawSender(port: MessagePort): RawSender {
  if (rawSenderCache) return rawSenderCache;
  const streams = new Map<
    number,
    { credit: number; wake?: () => void; done?: (answer: { total: number; sum: number }) => void }
  >();
  const incoming = new Map<
    number,
    { window: number; ungranted: number; total: number; sum: number; done: (a: { total: number; sum: number }) => void }
  >();
  port.on('message', (m: { s: number; credit?: number; total?: number; sum?: number; b?: Uint8Array; fin?: true }) => {
    const inbound = incoming.get(m.s);
    if (inbound !== undefined) {
      if (m.b !== undefined) {
        inbound.sum = (inbound.sum + readEveryByte(m.b)) | 0;
        inbound.total += m.b.byteLength;
        inbound.ungranted += m.b.byteLength;
        if (inbound.ungranted >= inbound.window / 4) {
          port.postMessage({ s: m.s, credit: inbound.ungranted });
          inbound.ungranted = 0;
        }
      } else {
        incoming.delete(m.s);
        inbound.done({ total: inbound.total, sum: inbound.sum });
      }
      return;
    }
    const state = streams.get(m.s);
    if (state === undefined) return;
    if (m.credit !== undefined) {
      state.credit += m.credit;
      const wake = state.wake;
      state.wake = undefined;
      wake?.();
    } else {
      streams.delete(m.s);
      state.done?.({ total: m.total!, sum: m.sum! });
    }
  });
  rawSenderCache = {
    async send(total, chunk, window) {
      const s = ++rawIds;
      const state: { credit: number; wake?: () => void; done?: (a: { total: number; sum: number }) => void } = {
        credit: window,
      };
      streams.set(s, state);
      const answer = new Promise<{ total: number; sum: number }>((resolve) => {
        state.done = resolve;
      });
      port.postMessage({ s, open: window });
      const count = total / chunk;
      for (let i = 0; i < count; i++) {
        while (state.credit < chunk) {
          await new Promise<void>((resolve) => {
            state.wake = resolve;
          });
        }
        const b = new Uint8Array(chunk).fill(fillByte(i));
        state.credit -= chunk;
        port.postMessage({ s, b }, [b.buffer]);
      }
      port.postMessage({ s, end: true });
      check(await answer, total, chunk);
    },
    async receive(total, chunk, window) {
      const s = ++rawIds;
      const answer = new Promise<{ total: number; sum: number }>((done) => {
        incoming.set(s, { window, ungranted: 0, total: 0, sum: 0, done });
      });
      port.postMessage({ s, pull: { total, chunk, window } });
      check(await answer, total, chunk);
    },
  };
  return rawSenderCache;
}

function check(answer: { total: number; sum: number }, total: number, chunk: number): void {
  if (answer.total !== total || answer.sum !== expectedSum(chunk, total / chunk)) {
    throw new Error(`the receiver got ${answer.total} bytes (checksum ${answer.sum}), expected ${total}`);
  }
}

// ---------------------------------------------------------------- the transport

const decoder = new TextDecoder();

async function sendTransport(b: Bus, total: number, chunk: number, name: string): Promise<void> {
  const stream = await open(b, PEER, name);
  const count = total / chunk;
  for (let i = 0; i < count; i++) {
    await stream.write(new Uint8Array(chunk).fill(fillByte(i)), { transfer: true });
  }
  await stream.end();
  let text = '';
  for await (const part of stream) text += decoder.decode(part, { stream: true });
  check(JSON.parse(text) as { total: number; sum: number }, total, chunk);
}

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
  check({ total: got, sum }, total, chunk);
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

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
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
        const { bus: b, raw } = await setup();
        const runTransport = async () => {
          const start = performance.now();
          await Promise.all(
            Array.from({ length: c.streams }, () =>
              c.toMain ? receiveTransport(b, c.total, c.chunk) : sendTransport(b, c.total, c.chunk, name),
            ),
          );
          timesOf(c.id).transport.push(performance.now() - start);
        };
        const runRaw = async () => {
          const start = performance.now();
          await Promise.all(
            Array.from({ length: c.streams }, () =>
              c.toMain ? raw.receive(c.total, c.chunk, c.window) : raw.send(c.total, c.chunk, c.window),
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
  await worker?.terminate();
});
