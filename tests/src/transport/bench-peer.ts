/**
 * Worker-thread entry for the transport benchmark (benchmarks/transport.bench.ts): the far side
 * of the transport (a bus peer named `id` listening on `bench-sink`, `bench-sink-4m` and
 * `bench-source` on `busPort`) or of the raw MessagePort baseline (a bare port with a credit
 * window, `rawPort`): workerData carries one of the two ports. Each side's bench process
 * (bench-process.ts) starts one. Receiving, both read every byte of every chunk with the same
 * function; sending, both allocate, fill and transfer each chunk the same way.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { type DuplexStream, listen } from '@gitport/transport';
import { fillByte, listenBenchSinks, nodeRawPort, serveRaw } from './bench-shared.js';

const { id, rawPort, busPort } = workerData as { id?: string; rawPort?: MessagePort; busPort?: MessagePort };

if (rawPort !== undefined && busPort === undefined) {
  // The raw baseline, on a bare port of its own (bench-shared.ts).
  serveRaw(nodeRawPort(rawPort));
} else if (busPort !== undefined && rawPort === undefined && id !== undefined) {
  await serveTransport(id, busPort);
} else {
  throw new Error('bench-peer takes either a rawPort, or an id and a busPort');
}

async function serveTransport(id: string, port: MessagePort): Promise<void> {
  const bus = createBus({ id });
  listenBenchSinks(bus);
  listen(bus, 'bench-source', (stream) => {
    source(stream).catch((error) => stream.abort(error));
  });
  await bus.connect(nodeEndpoint(port));
}

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
