/**
 * The bus moving events (issue 3), side by side with raw `postMessage` in the same run:
 *
 * - broadcast: `bus.signal(event, payload)` from one bus to 1, 10 and 100 peers (each a bus on its
 *   own MessageChannel, same thread), against posting the same payload on each of the N raw ports.
 *   A run sends K signals and ends when every peer has received all K, so the figure is delivered
 *   signals per second (and per-peer deliveries per second). CrossBus's report
 *   (../shared/reference/000_*.txt: 1.46M / 506K / 68K ops/s for 1 / 10 / 100 peers, Bun on Apple
 *   Silicon, send side only into a stub) is quoted in the notes, not compared as a ratio.
 * - a 10 KB Uint8Array sent (copied, not transferred) to a worker thread: `bus.send` against a raw
 *   `port.postMessage`, K messages, ended by a round trip that returns the worker's count.
 *
 * Rounds alternate between gitport and raw; the figure is the median round.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { type Bus, createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { afterAll, bench, describe } from 'vitest';
import { record, sized } from './report.js';

const ROUNDS = sized(7, 2);
const SIGNALS = sized(2000, 50);
const SENDS = sized(5000, 50);
// Distinct buffers: structured clone sends an object reached twice in one message only once, so
// reusing one buffer would flatter batching.
const PAYLOADS = Array.from({ length: SENDS }, (_, i) => new Uint8Array(10 * 1024).fill(i & 0xff));
const CROSSBUS: Record<number, string> = { 1: '1.46M', 10: '506K', 100: '68K' };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

interface Fanout {
  hub: Bus;
  peers: Bus[];
  rawSenders: MessagePort[];
  /** Resolves when every peer (bus or raw) has received `count` more messages. */
  waitAll(kind: 'bus' | 'raw', count: number): Promise<void>;
  close(): void;
}

async function fanout(n: number): Promise<Fanout> {
  const hub = createBus({ id: 'center', maxPeers: n + 1 });
  const peers: Bus[] = [];
  const rawSenders: MessagePort[] = [];
  const ports: MessagePort[] = [];
  const received = { bus: new Array<number>(n).fill(0), raw: new Array<number>(n).fill(0) };
  let wake: (() => void) | undefined;
  for (let i = 0; i < n; i++) {
    const channel = new MessageChannel();
    const peer = createBus({ id: `peer-${i}` });
    peer.on('tick', () => {
      received.bus[i]!++;
      wake?.();
    });
    peers.push(peer);
    await Promise.all([hub.connect(nodeEndpoint(channel.port1)), peer.connect(nodeEndpoint(channel.port2))]);
    const raw = new MessageChannel();
    raw.port2.on('message', () => {
      received.raw[i]!++;
      wake?.();
    });
    rawSenders.push(raw.port1);
    ports.push(channel.port1, channel.port2, raw.port1, raw.port2);
  }
  return {
    hub,
    peers,
    rawSenders,
    async waitAll(kind, count) {
      const counts = received[kind];
      const target = counts.map((c) => c + count);
      while (!counts.every((c, i) => c >= target[i]!)) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    },
    close() {
      hub.close();
      for (const peer of peers) peer.close();
      for (const port of ports) port.close();
    },
  };
}

const broadcast = new Map<number, { bus: number[]; raw: number[] }>();
for (const n of [1, 10, 100]) {
  const f = await fanout(n);
  const rates = { bus: [] as number[], raw: [] as number[] };
  for (let round = -1; round < ROUNDS; round++) {
    let start = performance.now();
    for (let k = 0; k < SIGNALS; k++) f.hub.signal('tick', { seq: k, text: 'ref-update refs/heads/main' });
    await f.waitAll('bus', SIGNALS);
    const busMs = performance.now() - start;
    start = performance.now();
    for (let k = 0; k < SIGNALS; k++) {
      const payload = { seq: k, text: 'ref-update refs/heads/main' };
      for (const port of f.rawSenders) port.postMessage({ e: 'tick', p: payload });
    }
    await f.waitAll('raw', SIGNALS);
    const rawMs = performance.now() - start;
    if (round < 0) continue; // warm-up
    rates.bus.push(SIGNALS / (busMs / 1000));
    rates.raw.push(SIGNALS / (rawMs / 1000));
  }
  broadcast.set(n, rates);
  f.close();
}

// 10 KB to a worker thread.
const busPorts = new MessageChannel();
const countPorts = new MessageChannel();
const rawPorts = new MessageChannel();
const comlinkPorts = new MessageChannel();
const worker: Worker = startTsWorker(new URL('../packages/bus/src/test-bench-peer.ts', import.meta.url), {
  workerData: { raw: rawPorts.port2, comlink: comlinkPorts.port2, bus: busPorts.port2, count: countPorts.port2 },
  transferList: [rawPorts.port2, comlinkPorts.port2, busPorts.port2, countPorts.port2],
});
const bus = createBus({ id: 'main' });
await bus.connect(nodeEndpoint(busPorts.port1));
let busSent = 0;
let rawSent = 0;
function rawCount(): Promise<number> {
  return new Promise((resolve) => {
    countPorts.port1.once('message', (value: number) => resolve(value));
    countPorts.port1.postMessage('sync');
  });
}
async function sendBus(count: number): Promise<void> {
  for (let i = 0; i < count; i++) bus.send('worker', 'payload', PAYLOADS[i]);
  busSent += count;
  const got = await bus.request<number>('worker', 'received', null);
  if (got !== busSent) throw new Error(`worker received ${got} bus messages, expected ${busSent}`);
}
async function sendRaw(count: number): Promise<void> {
  for (let i = 0; i < count; i++) countPorts.port1.postMessage(PAYLOADS[i]);
  rawSent += count;
  const got = await rawCount();
  if (got !== rawSent) throw new Error(`worker received ${got} raw messages, expected ${rawSent}`);
}
const sendRates = { bus: [] as number[], raw: [] as number[] };
for (let round = -1; round < ROUNDS; round++) {
  let start = performance.now();
  await sendBus(SENDS);
  const busMs = performance.now() - start;
  start = performance.now();
  await sendRaw(SENDS);
  const rawMs = performance.now() - start;
  if (round < 0) continue;
  sendRates.bus.push(SENDS / (busMs / 1000));
  sendRates.raw.push(SENDS / (rawMs / 1000));
}

describe('10 KB payload to a worker thread (copied), 100 messages per run', () => {
  const options = { time: sized(500, 50), warmupTime: sized(100, 10) };
  bench('gitport bus.send', () => sendBus(100), options);
  bench('raw port.postMessage', () => sendRaw(100), options);
});

afterAll(() => {
  for (const [n, rates] of broadcast) {
    const ours = median(rates.bus);
    const raw = median(rates.raw);
    record({
      id: `bus.broadcast.${n}-peer${n === 1 ? '' : 's'}`,
      value: ours,
      unit: 'signals/s',
      peer: `raw postMessage to ${n} port${n === 1 ? '' : 's'}`,
      peerValue: raw,
      better: 'higher',
      note: `delivered to every peer (same thread); per peer ${(ours * n).toFixed(0)} deliveries/s, ${(1e9 / (ours * n)) | 0} ns each; CrossBus reference: ${CROSSBUS[n]} ops/s send side only`,
    });
  }
  const ours = median(sendRates.bus);
  const raw = median(sendRates.raw);
  record({
    id: 'bus.send-10kb.msgs-per-s',
    value: ours,
    unit: 'msgs/s',
    peer: 'raw port.postMessage',
    peerValue: raw,
    better: 'higher',
    note: `${SENDS} x 10 KB Uint8Array, copied, to a worker thread; ${((ours * 10 * 1024) / 1e6).toFixed(0)} MB/s`,
  });
  bus.close();
  void worker.terminate();
});
