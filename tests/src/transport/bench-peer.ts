/**
 * Worker-thread entry for benchmarks/transport.bench.ts: the far side of both the transport (a
 * bus peer listening on `bench-sink`, `bench-sink-4m` and `bench-source`) and the raw
 * MessagePort baseline (a bare port with a credit window, `rawPort` in workerData). Receiving,
 * both read every byte of every chunk with the same function; sending, both allocate, fill
 * and transfer each chunk the same way.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { type DuplexStream, listen } from '@gitport/transport';
import { fillByte, listenBenchSinks, readEveryByte } from './bench-shared.js';

const { id, rawPort, busPort } = workerData as { id: string; rawPort: MessagePort; busPort?: MessagePort };
const bus = createBus({ id });

listenBenchSinks(bus);

/** `bench-source`: the request is `{total, chunk}` (JSON, then end); the answer is the bytes. */
async function source(stream: DuplexStream): Promise<void> {
  let text = '';
  const decoder = new TextDecoder();
  for await (const part of stream) text += decoder.decode(part, { stream: true });
  const { total, chunk } = JSON.parse(text) as { total: number; chunk: number };
  for (let i = 0; i < total / chunk; i++) {
    await stream.write(new Uint8Array(chunk).fill(fillByte(i)), { transfer: true });
  }
  await stream.end();
}
listen(bus, 'bench-source', (stream) => {
  source(stream).catch((error) => stream.abort(error));
});

// The raw baseline: {s, open: window} | {s, b: Uint8Array} | {s, end: true}; answers
// {s, credit: n} as it reads (in batches of a quarter window) and {s, total, sum} at the end.
// The other way: {s, pull: {total, chunk, window}} asks for chunks, sent as {s, b} within the
// credit the main thread grants ({s, credit}), then {s, fin: true}.
const raw = new Map<number, { window: number; ungranted: number; total: number; sum: number }>();
const sources = new Map<number, { credit: number; wake?: () => void }>();
async function rawSource(s: number, total: number, chunk: number, window: number): Promise<void> {
  const state: { credit: number; wake?: () => void } = { credit: window };
  sources.set(s, state);
  for (let i = 0; i < total / chunk; i++) {
    while (state.credit < chunk) {
      await new Promise<void>((resolve) => {
        state.wake = resolve;
      });
    }
    const b = new Uint8Array(chunk).fill(fillByte(i));
    state.credit -= chunk;
    rawPort.postMessage({ s, b }, [b.buffer]);
  }
  sources.delete(s);
  rawPort.postMessage({ s, fin: true });
}
rawPort.on(
  'message',
  (m: {
    s: number;
    open?: number;
    b?: Uint8Array;
    end?: boolean;
    credit?: number;
    pull?: { total: number; chunk: number; window: number };
  }) => {
    if (m.pull !== undefined) {
      void rawSource(m.s, m.pull.total, m.pull.chunk, m.pull.window);
      return;
    }
    if (m.credit !== undefined) {
      const state = sources.get(m.s);
      if (state === undefined) return;
      state.credit += m.credit;
      const wake = state.wake;
      state.wake = undefined;
      wake?.();
      return;
    }
    if (m.open !== undefined) {
      raw.set(m.s, { window: m.open, ungranted: 0, total: 0, sum: 0 });
      return;
    }
    const state = raw.get(m.s)!;
    if (m.b !== undefined) {
      state.sum = (state.sum + readEveryByte(m.b)) | 0;
      state.total += m.b.byteLength;
      state.ungranted += m.b.byteLength;
      if (state.ungranted >= state.window / 4) {
        rawPort.postMessage({ s: m.s, credit: state.ungranted });
        state.ungranted = 0;
      }
      return;
    }
    raw.delete(m.s);
    rawPort.postMessage({ s: m.s, total: state.total, sum: state.sum });
  },
);

const busTarget = busPort ?? parentPort;
if (!busTarget) throw new Error('bench-peer must run in a worker thread');
await bus.connect(nodeEndpoint(busTarget));
