/**
 * RPC between the main thread and a worker thread, side by side in one run (issue 3):
 *
 * - gitport: `bus.request('worker', 'echo', value)` over `nodeEndpoint` ports;
 * - comlink 4 over the same kind of port (its own Node adapter), `await api.echo(value)`;
 * - a raw MessagePort ping-pong (post, wait for the echo): the floor for any RPC layer.
 *
 * Figures: per-call latency one call at a time (p50, p99 over every call of every round; goal:
 * within 10% of the raw round trip), and calls per second one at a time and with 32 calls in flight
 * (goal: at least 1.5x comlink). Rounds alternate between the three, in a rotating order, so
 * background load hits all of them alike; the one-at-a-time rounds are short (200 calls), since
 * this machine's speed changes over seconds, and rounds of seconds let a slow spell fall on one
 * side only. Every call's answer is checked.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import * as Comlink from 'comlink';
import { afterAll, bench, describe } from 'vitest';
import { record, sized } from './report.js';

const ROUNDS = sized(9, 2);
/** One-at-a-time calls are measured in short rounds, the three callers taking turns. */
const SEQUENTIAL_ROUNDS = sized(135, 2);
const SEQUENTIAL_CALLS = sized(200, 100);
const PARALLEL_CALLS = sized(30_000, 640);
const IN_FLIGHT = 32;

type Call = (value: number) => Promise<unknown>;

// comlink's own Node adapter (it ships no declarations for the .mjs path, hence the typed dynamic import).
const adapterPath: string = 'comlink/dist/esm/node-adapter.mjs';
const nodeAdapter = ((await import(adapterPath)) as { default: (port: unknown) => Comlink.Endpoint }).default;

const raw = new MessageChannel();
const comlinkPorts = new MessageChannel();
const busPorts = new MessageChannel();
const worker: Worker = startTsWorker(new URL('../packages/bus/src/test-bench-peer.ts', import.meta.url), {
  workerData: { raw: raw.port2, comlink: comlinkPorts.port2, bus: busPorts.port2 },
  transferList: [raw.port2, comlinkPorts.port2, busPorts.port2],
});

/** Raw ping-pong: answers come back in order, so a FIFO of resolvers correlates them. */
function rawCaller(port: MessagePort): Call {
  const waiting: ((value: unknown) => void)[] = [];
  let head = 0;
  port.on('message', (value: unknown) => {
    const resolve = waiting[head]!;
    waiting[head++] = undefined as never;
    if (head === waiting.length) {
      waiting.length = 0;
      head = 0;
    }
    resolve(value);
  });
  return (value) =>
    new Promise((resolve) => {
      waiting.push(resolve);
      port.postMessage({ n: value });
    });
}

const callRaw = rawCaller(raw.port1);
const api = Comlink.wrap<{ echo(value: unknown): unknown }>(nodeAdapter(comlinkPorts.port1));
const callComlink: Call = (value) => api.echo({ n: value }) as Promise<unknown>;
const bus = createBus({ id: 'main', maxMessageSize: 64 * 1024 * 1024 });
await bus.connect(nodeEndpoint(busPorts.port1));
const callBus: Call = (value) => bus.request('worker', 'echo', { n: value });

const callers: [string, Call][] = [
  ['raw', callRaw],
  ['comlink', callComlink],
  ['gitport', callBus],
];

function check(answer: unknown, value: number): void {
  if ((answer as { n?: unknown } | undefined)?.n !== value) {
    throw new Error(`wrong answer: ${JSON.stringify(answer)} for ${value}`);
  }
}

async function sequential(call: Call, count: number, samples: number[]): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    check(await call(i), i);
    samples.push(performance.now() - t);
  }
  return performance.now() - start;
}

async function parallel(call: Call, count: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        const i = next++;
        check(await call(i), i);
      }
    }),
  );
  return performance.now() - start;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

// Warm up every path (JIT, port setup), then measure in alternating rounds.
for (const [, call] of callers) {
  await sequential(call, sized(500, 20), []);
  await parallel(call, sized(2000, 64));
}
const samples = new Map<string, number[]>(callers.map(([name]) => [name, []]));
const sequentialRates = new Map<string, number[]>(callers.map(([name]) => [name, []]));
const parallelRates = new Map<string, number[]>(callers.map(([name]) => [name, []]));
// Latency one call at a time: short rounds in turn (a few tens of milliseconds each), so that the
// machine's slower and faster spells fall on the three alike; who goes first rotates, so garbage
// one leaves behind does not always land on the same next one.
for (let round = 0; round < SEQUENTIAL_ROUNDS; round++) {
  const order = callers.map((_, i) => callers[(i + round) % callers.length]!);
  for (const [name, call] of order) {
    const ms = await sequential(call, SEQUENTIAL_CALLS, samples.get(name)!);
    sequentialRates.get(name)!.push(SEQUENTIAL_CALLS / (ms / 1000));
  }
}
// Throughput with calls in flight, in rounds the same way.
for (let round = 0; round < ROUNDS; round++) {
  const order = callers.map((_, i) => callers[(i + round) % callers.length]!);
  for (const [name, call] of order) {
    const pms = await parallel(call, PARALLEL_CALLS);
    parallelRates.get(name)!.push(PARALLEL_CALLS / (pms / 1000));
  }
}

const figures = new Map(
  callers.map(([name]) => {
    const sorted = samples.get(name)!.sort((a, b) => a - b);
    return [
      name,
      {
        p50: percentile(sorted, 0.5) * 1000,
        p99: percentile(sorted, 0.99) * 1000,
        sequential: median(sequentialRates.get(name)!),
        parallel: median(parallelRates.get(name)!),
      },
    ];
  }),
);

describe('RPC main thread <-> worker thread, one call at a time', () => {
  const options = { time: sized(500, 50), warmupTime: sized(100, 10) };
  bench('gitport bus.request', async () => check(await callBus(7), 7), options);
  bench('comlink', async () => check(await callComlink(7), 7), options);
  bench('raw MessagePort ping-pong', async () => check(await callRaw(7), 7), options);
});

afterAll(() => {
  const ours = figures.get('gitport')!;
  const comlink = figures.get('comlink')!;
  const rawFigures = figures.get('raw')!;
  const note = `${SEQUENTIAL_ROUNDS} rounds x ${SEQUENTIAL_CALLS} sequential calls, the three in turn; payload { n }`;
  record({
    id: 'rpc.call.p50.us',
    value: ours.p50,
    unit: 'us',
    peer: 'comlink',
    peerValue: comlink.p50,
    better: 'lower',
    note,
  });
  record({
    id: 'rpc.call.p99.us',
    value: ours.p99,
    unit: 'us',
    peer: 'comlink',
    peerValue: comlink.p99,
    better: 'lower',
    note,
  });
  record({
    id: 'rpc.call.p50-vs-raw.us',
    value: ours.p50,
    unit: 'us',
    peer: 'raw MessagePort round trip',
    peerValue: rawFigures.p50,
    better: 'lower',
    goal: { max: 1.1, on: 'ratio', source: 'issue 3' },
    note,
  });
  record({
    id: 'rpc.call.p99-vs-raw.us',
    value: ours.p99,
    unit: 'us',
    peer: 'raw MessagePort round trip',
    peerValue: rawFigures.p99,
    better: 'lower',
    goal: { max: 1.1, on: 'ratio', source: 'issue 3' },
    note,
  });
  record({
    id: 'rpc.calls-per-s.sequential',
    value: ours.sequential,
    unit: 'calls/s',
    peer: 'comlink',
    peerValue: comlink.sequential,
    better: 'higher',
    note: `raw MessagePort: ${rawFigures.sequential.toFixed(0)} calls/s`,
  });
  record({
    id: 'rpc.calls-per-s.32-in-flight',
    value: ours.parallel,
    unit: 'calls/s',
    peer: 'comlink',
    peerValue: comlink.parallel,
    better: 'higher',
    goal: { min: 1.5, on: 'ratio', source: 'issue 3' },
    note: `${PARALLEL_CALLS} calls, ${IN_FLIGHT} in flight; raw MessagePort: ${rawFigures.parallel.toFixed(0)} calls/s`,
  });
  bus.close();
  api[Comlink.releaseProxy]();
  raw.port1.close();
  void worker.terminate();
});
