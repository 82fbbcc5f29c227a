/**
 * Worker-thread side of benchmarks/rpc.bench.ts and bus.bench.ts: the same echo service three
 * ways, each on its own MessagePort handed over in workerData: a raw MessagePort echo, comlink
 * (its own Node adapter) and a gitport bus handler; plus counters of one-way messages (a bare
 * port's and the bus's `payload` events) for the send benchmarks.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import * as Comlink from 'comlink';
import { createBus } from './index.js';
import { nodeEndpoint } from './node.js';

// comlink's own Node adapter (it ships no declarations for the .mjs path, hence the typed dynamic import).
const adapterPath: string = 'comlink/dist/esm/node-adapter.mjs';
const nodeAdapter = ((await import(adapterPath)) as { default: (port: unknown) => Comlink.Endpoint }).default;

const { raw, comlink, bus, count } = workerData as {
  raw: MessagePort;
  comlink: MessagePort;
  bus: MessagePort;
  count?: MessagePort;
};

raw.on('message', (message: unknown) => raw.postMessage(message));

// Counts what arrives on a bare port; a 'sync' message asks for the count so far.
let counted = 0;
count?.on('message', (message: unknown) => {
  if (message === 'sync') count.postMessage(counted);
  else counted++;
});

Comlink.expose({ echo: (value: unknown) => value }, nodeAdapter(comlink));

const peer = createBus({ id: 'worker', maxMessageSize: 64 * 1024 * 1024 });
peer.handle('echo', (value) => value);
let received = 0;
peer.on('payload', () => {
  received++;
});
peer.handle('received', () => received);
await peer.connect(nodeEndpoint(bus));
