/**
 * Worker-thread entry for benchmarks/transport.bench.ts: the receiving side of both the
 * transport (a bus peer listening on `bench-sink` and `bench-sink-4m`) and the raw MessagePort
 * baseline (a bare port with a credit window, `rawPort` in workerData). Both read every byte
 * of every chunk with the same function.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { type NodeMessagePortLike, nodeEndpoint } from '@gitport/bus/node';
import { type DuplexStream, listen } from '@gitport/transport';
import { readEveryByte } from './bench-shared.js';

const { id, rawPort, busPort } = workerData as { id: string; rawPort: MessagePort; busPort?: MessagePort };
const bus = createBus({ id });
const encoder = new TextEncoder();

async function sink(stream: DuplexStream): Promise<void> {
  let total = 0;
  let sum = 0;
  for await (const chunk of stream) {
    sum = (sum + readEveryByte(chunk)) | 0;
    total += chunk.byteLength;
  }
  await stream.write(encoder.encode(JSON.stringify({ total, sum })));
  await stream.end();
}
const onStream = (stream: DuplexStream) => {
  sink(stream).catch((error) => stream.abort(error));
};
listen(bus, 'bench-sink', onStream);
listen(bus, 'bench-sink-4m', onStream, { window: 4 * 1024 * 1024 });

// The raw baseline: {s, open: window} | {s, b: Uint8Array} | {s, end: true}; answers
// {s, credit: n} as it reads (in batches of a quarter window) and {s, total, sum} at the end.
const raw = new Map<number, { window: number; ungranted: number; total: number; sum: number }>();
rawPort.on('message', (m: { s: number; open?: number; b?: Uint8Array; end?: boolean }) => {
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
});

await bus.connect(nodeEndpoint((busPort ?? parentPort) as unknown as NodeMessagePortLike));
