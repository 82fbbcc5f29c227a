/**
 * In-browser transport benchmark, the page side (issue 9): @gitport/transport from this page to a
 * Web Worker next to a minimal raw MessagePort sender with a credit window, under the rules of
 * benchmarks/transport.bench.ts: each chunk is allocated, filled and transferred; the receiver
 * reads every byte and answers a checksum that is checked; both use the same window (1 MiB for
 * 64 KiB chunks, 4 MiB for 1 MiB chunks), granted back in quarter-window batches; both travel over
 * a MessageChannel port of their own; each timed transfer includes opening the stream and
 * waiting for the answer; the two alternate (and which goes first alternates too).
 */
import { type Bus, createBus, messagePortEndpoint } from '@gitport/bus';
import { open } from '@gitport/transport';
import { benchSinkFor, fillByte, readEveryByte } from '../../src/transport/bench-shared.js';

export interface TransportCase {
  id: string;
  chunk: number;
  total: number;
  window: number;
  iterations: number;
  warmup: number;
}

/** Case id -> milliseconds of every timed transfer, per side. */
export type TransportBenchResult = Record<string, { transport: number[]; raw: number[] }>;

const PEER = 'bench-peer';
const decoder = new TextDecoder();

const checksums = new Map<string, number>();
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

function check(answer: { total: number; sum: number }, total: number, chunk: number): void {
  if (answer.total !== total || answer.sum !== expectedSum(chunk, total / chunk)) {
    throw new Error(`the receiver got ${answer.total} bytes (checksum ${answer.sum}), expected ${total}`);
  }
}

async function sendTransport(bus: Bus, total: number, chunk: number, name: string): Promise<void> {
  const stream = await open(bus, PEER, name);
  const count = total / chunk;
  for (let i = 0; i < count; i++) {
    await stream.write(new Uint8Array(chunk).fill(fillByte(i)), { transfer: true });
  }
  await stream.end();
  let text = '';
  for await (const part of stream) text += decoder.decode(part, { stream: true });
  check(JSON.parse(text) as { total: number; sum: number }, total, chunk);
}

interface RawState {
  credit: number;
  wake?: () => void;
  done?: (answer: { total: number; sum: number }) => void;
}

/** The minimal raw sender: a credit window per transfer, chunks allocated, filled, transferred. */
function rawSender(port: MessagePort) {
  const streams = new Map<number, RawState>();
  let ids = 0;
  port.addEventListener('message', (event: MessageEvent) => {
    const m = event.data as { s: number; credit?: number; total?: number; sum?: number };
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
  port.start();
  return async (total: number, chunk: number, window: number): Promise<void> => {
    const s = ++ids;
    const state: RawState = { credit: window };
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
  };
}

export async function runTransportBench(cases: TransportCase[]): Promise<TransportBenchResult> {
  const worker = new Worker(new URL('./transport.worker.ts', import.meta.url), { type: 'module' });
  const busChannel = new MessageChannel();
  const rawChannel = new MessageChannel();
  const bus = createBus({ id: 'bench-main' });
  try {
    const connected = new Promise<void>((resolve, reject) => {
      worker.addEventListener('message', (event: MessageEvent) => {
        if ((event.data as { type?: string })?.type === 'connected') resolve();
      });
      worker.addEventListener('error', (event) => reject(new Error(`transport worker: ${event.message}`)));
    });
    worker.postMessage({ type: 'ports', bus: busChannel.port2, raw: rawChannel.port2 }, [
      busChannel.port2,
      rawChannel.port2,
    ]);
    await bus.connect(messagePortEndpoint(busChannel.port1));
    await connected;
    const raw = rawSender(rawChannel.port1);
    const out: TransportBenchResult = {};
    for (const c of cases) {
      const name = benchSinkFor(c.window);
      const times = { transport: [] as number[], raw: [] as number[] };
      const runTransport = async () => {
        const start = performance.now();
        await sendTransport(bus, c.total, c.chunk, name);
        return performance.now() - start;
      };
      const runRaw = async () => {
        const start = performance.now();
        await raw(c.total, c.chunk, c.window);
        return performance.now() - start;
      };
      for (let i = 0; i < c.warmup + c.iterations; i++) {
        let t: number;
        let r: number;
        if (i % 2 === 0) {
          t = await runTransport();
          r = await runRaw();
        } else {
          r = await runRaw();
          t = await runTransport();
        }
        if (i >= c.warmup) {
          times.transport.push(t);
          times.raw.push(r);
        }
      }
      out[c.id] = times;
    }
    return out;
  } finally {
    bus.close();
    busChannel.port1.close();
    rawChannel.port1.close();
    worker.terminate();
  }
}
