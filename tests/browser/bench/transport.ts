/**
 * In-browser transport benchmark, the page side (issue 9): @gitport/transport from this page to a
 * Web Worker next to a minimal raw MessagePort sender with a credit window, under the rules of
 * benchmarks/transport.bench.ts: each chunk is allocated, filled and transferred; the receiver
 * reads every byte and answers a checksum that is checked; both use the same window (1 MiB for
 * 64 KiB chunks, 4 MiB for 1 MiB chunks), granted back in half-window batches by the transport
 * and quarter-window batches by the raw receiver (as in the Node bench); both travel over
 * a MessageChannel port of their own, each to a Web Worker of its own (so each side's received
 * chunks are collected in its own thread, as in the Node bench); each timed transfer includes
 * opening the stream and waiting for the answer; the two alternate (and which goes first
 * alternates too). The raw sender and receiver are those of the Node bench
 * (tests/src/transport/bench-shared.ts).
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { benchSinkFor, domRawPort, rawSender, sendToSink } from '../../src/transport/bench-shared.js';

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
export async function runTransportBench(cases: TransportCase[]): Promise<TransportBenchResult> {
  const busChannel = new MessageChannel();
  const rawChannel = new MessageChannel();
  const workers = [
    startWorker({ type: 'ports', bus: busChannel.port2 }, busChannel.port2),
    startWorker({ type: 'ports', raw: rawChannel.port2 }, rawChannel.port2),
  ];
  const bus = createBus({ id: 'bench-main' });
  try {
    await bus.connect(messagePortEndpoint(busChannel.port1));
    await Promise.all(workers.map((w) => w.connected));
    const raw = rawSender(domRawPort(rawChannel.port1));
    const out: TransportBenchResult = {};
    for (const c of cases) {
      const name = benchSinkFor(c.window);
      const times = { transport: [] as number[], raw: [] as number[] };
      const runTransport = async () => {
        const start = performance.now();
        await sendToSink(bus, PEER, name, c.total, c.chunk);
        return performance.now() - start;
      };
      const runRaw = async () => {
        const start = performance.now();
        await raw.send(c.total, c.chunk, c.window);
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
    for (const w of workers) w.worker.terminate();
  }
}

/** Starts a bench worker and hands it its port; `connected` settles once it serves it. */
function startWorker(message: unknown, port: MessagePort): { worker: Worker; connected: Promise<void> } {
  const worker = new Worker(new URL('./transport.worker.ts', import.meta.url), { type: 'module' });
  const connected = new Promise<void>((resolve, reject) => {
    worker.addEventListener('message', (event: MessageEvent) => {
      if ((event.data as { type?: string })?.type === 'connected') resolve();
    });
    worker.addEventListener('error', (event) => reject(new Error(`transport worker: ${event.message}`)));
  });
  worker.postMessage(message, [port]);
  return { worker, connected };
}
