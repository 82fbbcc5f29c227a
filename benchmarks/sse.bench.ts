/**
 * SSE ref events (issue 8), with the rows of ../shared/reference/002_7ec1b668942fa344.txt
 * reproduced (that report measured Bun with a mock broker; its figures are quoted in notes).
 *
 * - fan-out over the network: 1,000 real connections held by another process, the gateway next
 *   to better-sse doing the same fan-out in the same run (events/s delivered, publish-to-receive
 *   latency p50/p99);
 * - in-process fan-out to 1 / 10 / 100 / 1,000 subscribers (deliveries/s);
 * - event formatting by payload size (100 B / 1 KB / 10 KB);
 * - subscribe/unsubscribe churn; heap growth over 500 cycles and over 100 subscribers x 10,000
 *   events;
 * - a reconnect storm: 1,000 clients reconnecting with Last-Event-ID at once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, formatRefUpdate, SseHub } from '@gitport/gateway';
import { createDemoRepository, createGitProcessBackend, listen } from '@gitport/gateway/node';
import { createChannel, createSession } from 'better-sse';
import { bench, describe } from 'vitest';
import { memoryBytes, QUICK, record, sized } from './report.js';
import { LoadClient } from './sse-load-client.js';

/** Bytes of the frames of events `from`..`to` (ids `<epoch>-<seq>`) of one ref update, as the hub formats them. */
function frameBytes(hub: SseHub, from: number, to: number, event: Parameters<typeof formatRefUpdate>[1]): number {
  const fixed = formatRefUpdate(`${hub.epoch}-`, event).byteLength;
  let bytes = 0;
  for (let seq = from; seq <= to; seq++) bytes += fixed + String(seq).length;
  return bytes;
}

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
/** vitest may call a bench function more than once: measure and record on the first call only. */
const measured = new Set<string>();
function first(name: string): boolean {
  if (measured.has(name)) return false;
  measured.add(name);
  return true;
}
const ZERO = '0'.repeat(40);
const ONE = '1'.repeat(40);

function stamp(): string {
  return `refs/heads/t/${performance.timeOrigin + performance.now()}`;
}

const pause = () => new Promise((r) => setImmediate(r));

async function fanOut(
  url: string,
  connections: number,
  events: number,
  publish: (ref: string) => void,
): Promise<{ eventsPerSecond: number; deliveriesPerSecond: number; p50: number; p99: number }> {
  const client = new LoadClient();
  try {
    await client.ask({ type: 'connect', url, connections }, 'connected');
    const received = new Promise<Record<string, number>>((resolve) => client.on('received', resolve));
    await client.ask({ type: 'expect', events }, 'armed');
    const done = received;
    const start = performance.now();
    for (let i = 0; i < events; i++) {
      publish(stamp());
      if (i % 10 === 9) await pause();
    }
    const result = await done;
    const seconds = (performance.now() - start) / 1000;
    if (result.deliveries !== connections * events) throw new Error(`delivered ${result.deliveries}`);
    return {
      eventsPerSecond: events / seconds,
      deliveriesPerSecond: result.deliveries / seconds,
      p50: result.p50 ?? Number.NaN,
      p99: result.p99 ?? Number.NaN,
    };
  } finally {
    client.close();
  }
}

describe('sse', () => {
  bench(
    'fan-out to 1,000 connections in another process: gateway vs better-sse',
    async () => {
      const connections = sized(1000, 50);
      const events = sized(200, 10);
      const root = await mkdtemp(join(tmpdir(), 'gitport-bench-sse-'));
      await createDemoRepository(root);
      const gateway = createGateway({
        backend: createGitProcessBackend({ root }),
        sse: { heartbeatMs: 15_000, maxSubscribers: 2_000 },
      });
      const running = await listen(gateway, { port: 0 });
      const channel = createChannel();
      const peer: Server = createServer(async (req, res) => {
        const session = await createSession(req, res, { keepAlive: 15_000 });
        channel.register(session);
      });
      await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
      const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/events`;
      try {
        const publishOurs = (ref: string) => gateway.hub.publish({ repo: 'demo', ref, old: ZERO, new: ONE });
        const publishTheirs = (ref: string) =>
          channel.broadcast({ repo: 'demo', ref, old: ZERO, new: ONE }, 'ref-update');
        // warm both servers up (JIT, first connections) so the one measured first is not penalised
        await fanOut(`${running.url}/demo.git/events`, Math.min(connections, 100), 20, publishOurs);
        await fanOut(peerUrl, Math.min(connections, 100), 20, publishTheirs);
        const ours = await fanOut(`${running.url}/demo.git/events`, connections, events, publishOurs);
        const theirs = await fanOut(peerUrl, connections, events, publishTheirs);
        const note = `${connections} connections held by another process, ${events} events${QUICK ? ' (quick)' : ''}`;
        record({
          id: 'sse.fanout.events-per-s',
          value: ours.eventsPerSecond,
          unit: 'events/s',
          peer: 'better-sse',
          peerValue: theirs.eventsPerSecond,
          better: 'higher',
          note: `${note}; deliveries/s: ${Math.round(ours.deliveriesPerSecond)} vs ${Math.round(theirs.deliveriesPerSecond)}`,
        });
        for (const p of ['p50', 'p99'] as const) {
          record({
            id: `sse.fanout.latency-${p}`,
            value: ours[p],
            unit: 'ms',
            peer: 'better-sse',
            peerValue: theirs[p],
            better: 'lower',
            note: `publish to receive, ${note}`,
          });
        }
      } finally {
        await running.close();
        peer.closeAllConnections();
        peer.close();
        await rm(root, { recursive: true, force: true });
      }
    },
    once,
  );

  bench(
    'in-process fan-out',
    () => {
      if (!first('in-process fan-out')) return;
      for (const subscribers of [1, 10, 100, 1000]) {
        const hub = new SseHub({ heartbeatMs: 0, replayCap: 16, maxSubscribers: 1000 });
        let deliveredBytes = 0;
        for (let i = 0; i < subscribers; i++) {
          hub.subscribe(
            {
              write(bytes) {
                deliveredBytes += bytes.byteLength;
                return true;
              },
              close() {},
            },
            { repos: ['r'] },
          );
        }
        const events = Math.max(sized(200, 20), Math.floor(sized(2_000_000, 50_000) / subscribers));
        deliveredBytes = 0;
        const event = { repo: 'r', ref: 'refs/heads/main', old: ZERO, new: ONE };
        const start = performance.now();
        // events reach subscribers a turn's burst at a time: a bus message carries up to about this many
        for (let i = 0; i < events; i++) {
          hub.publish(event);
          if (i % 1000 === 999) hub.flush();
        }
        hub.flush();
        const seconds = (performance.now() - start) / 1000;
        if (deliveredBytes !== frameBytes(hub, 1, events, event) * subscribers) {
          throw new Error(`delivered ${deliveredBytes} bytes`);
        }
        const delivered = events * subscribers;
        hub.close();
        record({
          id: `sse.inprocess.fanout-${subscribers}.deliveries-per-s`,
          value: delivered / seconds,
          unit: 'deliveries/s',
          peer: null,
          peerValue: null,
          better: 'higher',
          note: `${events} events, each formatted once (reference 002: 1.9M / 17.7M / 96.3M / 63.6M deliveries/s at 1 / 10 / 100 / 1,000 with a mock broker)`,
        });
      }
    },
    once,
  );

  bench(
    'formatting by payload size',
    () => {
      if (!first('formatting by payload size')) return;
      const reference: Record<number, string> = { 100: '4.6M', 1000: '2.7M', 10000: '0.58M' };
      for (const size of [100, 1000, 10000]) {
        const base = JSON.stringify({ repo: 'r', ref: '', old: ZERO, new: ONE }).length;
        const ref = `refs/heads/${'x'.repeat(Math.max(0, size - base - 11))}`;
        const event = { repo: 'r', ref, old: ZERO, new: ONE };
        const n = sized(200_000, 5_000);
        let bytes = 0;
        const start = performance.now();
        for (let i = 0; i < n; i++) bytes += formatRefUpdate(`e-${i}`, event).byteLength;
        const seconds = (performance.now() - start) / 1000;
        if (bytes < n * size) throw new Error('formatted too few bytes');
        record({
          id: `sse.format.${size === 100 ? '100b' : size === 1000 ? '1kb' : '10kb'}.events-per-s`,
          value: n / seconds,
          unit: 'events/s',
          peer: null,
          peerValue: null,
          better: 'higher',
          note: `JSON data of ${size} B (reference 002: ${reference[size]} events/s)`,
        });
      }
    },
    once,
  );

  bench(
    'subscribe/unsubscribe churn and heap growth',
    async () => {
      if (!first('subscribe/unsubscribe churn and heap growth')) return;
      const collect = async () => {
        // twice, with a turn of the event loop between: array buffers are released after the sweep
        const gc = (globalThis as { gc?: () => void }).gc;
        gc?.();
        await new Promise((r) => setImmediate(r));
        gc?.();
      };
      const gc = (globalThis as { gc?: () => void }).gc;
      const sink = { write: () => true, close() {} };
      const hub = new SseHub({ heartbeatMs: 15_000 });
      const cycles = sized(500_000, 10_000);
      const start = performance.now();
      for (let i = 0; i < cycles; i++) hub.subscribe(sink, { repos: ['r'] })();
      const seconds = (performance.now() - start) / 1000;
      if (hub.size !== 0) throw new Error('subscribers leaked');
      record({
        id: 'sse.churn.cycles-per-s',
        value: cycles / seconds,
        unit: 'cycles/s',
        peer: null,
        peerValue: null,
        better: 'higher',
        note: 'subscribe + unsubscribe of one subscriber (reference 002: 289K cycles/s)',
      });

      await collect();
      const before = memoryBytes();
      for (let i = 0; i < 500; i++) {
        const offs = Array.from({ length: 10 }, () => hub.subscribe(sink, i % 2 ? { repos: ['a', 'b'] } : {}));
        hub.publish({ repo: 'a', ref: 'refs/heads/main', old: ZERO, new: ONE });
        for (const off of offs) off();
      }
      await collect();
      const cycleGrowth = (memoryBytes() - before) / 1e6;
      record({
        id: 'sse.heap.cycles-500.mb',
        value: cycleGrowth,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `heap growth over 500 subscribe/publish/unsubscribe cycles of 10 subscribers, after gc${gc ? '' : ' (gc unavailable)'} (reference 002: 0.50 MB)`,
      });

      const fanHub = new SseHub({ heartbeatMs: 0, replayCap: 64 });
      let delivered = 0;
      const counting = {
        write(bytes: Uint8Array) {
          delivered += bytes.byteLength;
          return true;
        },
        close() {},
      };
      for (let i = 0; i < 100; i++) fanHub.subscribe(counting, { repos: ['r'] });
      delivered = 0; // the preambles
      const events = sized(10_000, 1_000);
      const event = { repo: 'r', ref: 'refs/heads/main', old: ZERO, new: ONE };
      for (let i = 0; i < 100; i++) fanHub.publish(event); // fill the ring first
      await collect();
      const start2 = memoryBytes();
      // flushed every 100 events, as a server's event loop does between bursts: one synchronous
      // burst of all of them would pass a subscriber's queue bound and end in a reset
      for (let i = 0; i < events; i++) {
        fanHub.publish(event);
        if (i % 100 === 99) fanHub.flush();
      }
      await collect();
      const fanGrowth = (memoryBytes() - start2) / 1e6;
      fanHub.flush();
      if (delivered !== frameBytes(fanHub, 1, events + 100, event) * 100) {
        throw new Error(`delivered ${delivered} bytes`);
      }
      fanHub.close();
      hub.close();
      record({
        id: 'sse.heap.100x10000.mb',
        value: fanGrowth,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `heap growth over 100 subscribers x ${events} events, replay ring of 64 full, after gc (reference 002: 0.06 MB)`,
      });
    },
    once,
  );

  bench(
    'reconnect storm with Last-Event-ID',
    async () => {
      const clients = sized(1000, 50);
      const missed = 100;
      const root = await mkdtemp(join(tmpdir(), 'gitport-bench-storm-'));
      await createDemoRepository(root);
      const gateway = createGateway({
        backend: createGitProcessBackend({ root }),
        sse: { replayCap: 1024, maxSubscribers: 2_000 },
      });
      const running = await listen(gateway, { port: 0 });
      const client = new LoadClient();
      try {
        const lastEventId = gateway.hub.lastId;
        for (let i = 0; i < missed; i++) {
          gateway.hub.publish({ repo: 'demo', ref: `refs/heads/b${i}`, old: ZERO, new: ONE });
        }
        const result = await client.ask(
          { type: 'storm', url: `${running.url}/demo.git/events`, connections: clients, lastEventId, expect: missed },
          'stormed',
        );
        record({
          id: 'sse.reconnect-storm.ms',
          value: result.ms!,
          unit: 'ms',
          peer: null,
          peerValue: null,
          better: 'lower',
          note: `${clients} clients reconnecting at once with Last-Event-ID, ${missed} missed events each replayed (cap 1,024 per repository); ${Math.round(result.bytes! / clients)} B per client`,
        });
      } finally {
        client.close();
        await running.close();
        await rm(root, { recursive: true, force: true });
      }
    },
    once,
  );
});
