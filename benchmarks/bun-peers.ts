/**
 * Run by Bun for bun.bench.ts: the emitter and RPC rows of emitter.bench.ts and rpc.bench.ts
 * measured inside Bun, against the same peers, and printed as one JSON line.
 *
 * - emitter: emit with 1 and with 10 listeners, gitport's `createEmitter` next to nanoevents,
 *   mitt and eventemitter3; each library's best round in ops/s (rounds alternate, as in
 *   emitter.bench.ts). Listener calls are counted and checked.
 * - RPC to a Bun worker thread (packages/bus/src/test-bench-peer.ts, run by Bun from its
 *   TypeScript): gitport `bus.request` next to comlink and a raw MessagePort ping-pong; calls/s
 *   with 32 calls in flight and p50 latency one call at a time (median of rounds). Every answer
 *   is checked.
 *
 *   bun benchmarks/bun-peers.ts [--quick]
 */
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { createBus, createEmitter } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import * as Comlink from 'comlink';
import * as eventemitter3 from 'eventemitter3';
import * as mittModule from 'mitt';
import { createNanoEvents } from 'nanoevents';

const quick = process.argv.includes('--quick');
const sized = <T>(full: T, small: T): T => (quick ? small : full);

interface EE3 {
  on(event: string, fn: (p: number) => void): unknown;
  emit(event: string, p: number): boolean;
}
const EventEmitter3 = (eventemitter3 as unknown as { EventEmitter: new () => EE3 }).EventEmitter;
const mitt = (
  mittModule as unknown as {
    default: () => { on(e: 'e', fn: (p: number) => void): void; emit(e: 'e', p: number): void };
  }
).default;

const OPS = sized(200_000, 5_000);
const ROUNDS = sized(25, 3);
let calls = 0;
const listener = () => (payload: number) => {
  calls += payload & 1;
};

/** One loop per library, written out, so each call site stays monomorphic. */
const emitters: Record<string, (count: number) => () => void> = {
  gitport: (count) => {
    const e = createEmitter();
    for (let i = 0; i < count; i++) e.on('e', listener() as (p: unknown) => void);
    return () => {
      for (let i = 0; i < OPS; i++) e.emit('e', 1);
    };
  },
  nanoevents: (count) => {
    const e = createNanoEvents<{ e: (p: number) => void }>();
    for (let i = 0; i < count; i++) e.on('e', listener());
    return () => {
      for (let i = 0; i < OPS; i++) e.emit('e', 1);
    };
  },
  mitt: (count) => {
    const e = mitt();
    for (let i = 0; i < count; i++) e.on('e', listener());
    return () => {
      for (let i = 0; i < OPS; i++) e.emit('e', 1);
    };
  },
  eventemitter3: (count) => {
    const e = new EventEmitter3();
    for (let i = 0; i < count; i++) e.on('e', listener());
    return () => {
      for (let i = 0; i < OPS; i++) e.emit('e', 1);
    };
  },
};

const emitter: Record<string, Record<string, number>> = {};
for (const count of [1, 10]) {
  const runs = Object.entries(emitters).map(([name, make]) => [name, make(count)] as const);
  const best = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < runs.length; i++) {
      const [name, run] = runs[(i + round) % runs.length]!;
      calls = 0;
      const start = performance.now();
      run();
      const ms = performance.now() - start;
      if (calls !== OPS * count) throw new Error(`${name}: ${calls} listener calls, expected ${OPS * count}`);
      best.set(name, Math.max(best.get(name) ?? 0, OPS / (ms / 1000)));
    }
  }
  emitter[`emit-${count}`] = Object.fromEntries(best);
}

type Call = (value: number) => Promise<unknown>;
const raw = new MessageChannel();
const comlinkPorts = new MessageChannel();
const busPorts = new MessageChannel();
const worker = new Worker(new URL('../packages/bus/src/test-bench-peer.ts', import.meta.url), {
  workerData: { raw: raw.port2, comlink: comlinkPorts.port2, bus: busPorts.port2 },
  transferList: [raw.port2, comlinkPorts.port2, busPorts.port2],
});

function rawCaller(port: MessagePort): Call {
  const waiting: ((value: unknown) => void)[] = [];
  port.on('message', (value: unknown) => waiting.shift()!(value));
  return (value) =>
    new Promise((resolve) => {
      waiting.push(resolve);
      port.postMessage({ n: value });
    });
}
const adapterPath: string = 'comlink/dist/esm/node-adapter.mjs';
const nodeAdapter = ((await import(adapterPath)) as { default: (port: unknown) => Comlink.Endpoint }).default;
const api = Comlink.wrap<{ echo(value: unknown): unknown }>(nodeAdapter(comlinkPorts.port1));
const bus = createBus({ id: 'main', maxMessageSize: 64 * 1024 * 1024 });
await bus.connect(nodeEndpoint(busPorts.port1));
const callers: [string, Call][] = [
  ['raw', rawCaller(raw.port1)],
  ['comlink', (value) => api.echo({ n: value }) as Promise<unknown>],
  ['gitport', (value) => bus.request('worker', 'echo', { n: value })],
];
const check = (answer: unknown, value: number) => {
  if ((answer as { n?: unknown } | undefined)?.n !== value) throw new Error(`wrong answer for ${value}`);
};
async function sequential(call: Call, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    check(await call(i), i);
    samples.push(performance.now() - t);
  }
  return samples;
}
async function parallel(call: Call, count: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        check(await call(i), i);
      }
    }),
  );
  return count / ((performance.now() - start) / 1000);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const [, call] of callers) {
  await sequential(call, sized(500, 20));
  await parallel(call, sized(2000, 64));
}
const latency = new Map<string, number[]>(callers.map(([name]) => [name, []]));
const rates = new Map<string, number[]>(callers.map(([name]) => [name, []]));
for (let round = 0; round < sized(60, 2); round++) {
  for (let i = 0; i < callers.length; i++) {
    const [name, call] = callers[(i + round) % callers.length]!;
    latency.get(name)!.push(...(await sequential(call, sized(200, 50))));
  }
}
for (let round = 0; round < sized(9, 2); round++) {
  for (let i = 0; i < callers.length; i++) {
    const [name, call] = callers[(i + round) % callers.length]!;
    rates.get(name)!.push(await parallel(call, sized(30_000, 640)));
  }
}
const rpc = Object.fromEntries(
  callers.map(([name]) => [name, { p50us: median(latency.get(name)!) * 1000, callsPerS: median(rates.get(name)!) }]),
);
bus.close();
await worker.terminate();
process.stdout.write(`${JSON.stringify({ bun: process.versions.bun, ops: OPS, emitter, rpc })}\n`);
process.exit(0);
