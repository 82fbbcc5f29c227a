/**
 * Several gateway instances sharing ref events through Redis Streams, side by side with one
 * instance alone, in one run, against a redis-server this file starts (and stops) itself:
 *
 * - SSE fan-out: 3,000 connections held by another process (a forked load client), spread over
 *   3 gateway processes with Redis, next to 1 gateway process holding all of them without Redis,
 *   next to better-sse in a process of its own; each publishes the same burst of ref updates where
 *   a push would (through one instance's event log, which every instance tails); deliveries/s and
 *   publish-to-receive p50/p99;
 * - clone throughput: many concurrent `git clone --bare` (processes of their own) through 3
 *   `gitport serve --redis` processes on one root, next to 1 `gitport serve` on the same root;
 *   the cores of the machine reported with it (one repository is pinned to one worker thread per
 *   instance, so instances are what spread its clones over cores);
 * - a reconnect storm: 1,000 clients with `Last-Event-ID` at once, spread over the 3 instances and
 *   replayed from Redis, next to the same storm on 1 instance replaying from its memory; time, and
 *   Redis commands per client (the delta of `INFO commandstats`).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDemoRepository } from '@gitport/gateway/node';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { ensureHistory } from '@gitport/tests/history';
import { afterAll, bench, describe } from 'vitest';
import { type ServeProcess, startServe } from '../tests/src/gateway/serve-process.js';
import { connectSse } from '../tests/src/gateway/sse-client.js';
import { type RedisServer, startRedis } from '../tests/src/redis/redis-server.js';
import { cpuMs } from './process-tree.js';
import { QUICK, record, sized } from './report.js';
import { LoadClient } from './sse-load-client.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
/** vitest may call a bench function more than once: measure and record on the first call only. */
const measured = new Set<string>();
function first(name: string): boolean {
  if (measured.has(name)) return false;
  measured.add(name);
  return true;
}

const instanceScript = new URL('./workers/sse-instance.ts', import.meta.url);

/** One SSE server process (benchmarks/workers/sse-instance.ts). */
class Instance {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static start(args: string[]): Promise<Instance> {
    const child = spawnTsNode(instanceScript, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /listening on (\S+)\n/.exec(out);
        if (m) resolve(new Instance(child, m[1]!));
      });
      child.once('exit', (code) => reject(new Error(`sse instance ${args[0]} exited ${code}`)));
    });
  }

  /**
   * Publishes `events` ref updates where a push through this instance would, in bursts (or one
   * every `intervalMs`); resolves once they are handed on.
   */
  publish(events: number, prefix?: string, intervalMs?: number): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('message', () => resolve());
      this.child.send({ type: 'publish', events, prefix, intervalMs });
    });
  }

  stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.kill('SIGTERM');
    });
  }
}

interface FanOut {
  /** Of a burst of events. */
  deliveriesPerSecond: number;
  /** CPU-seconds per second of the burst: of the servers (and Redis), of the load client. */
  serverCores: number;
  clientCores: number;
  burstP50: number;
  burstP99: number;
  /** Publish to receive of events published one at a time, `PACED_MS` apart. */
  p50: number;
  p99: number;
}

const PACED_MS = 50;

/**
 * `connections` held by a new load client, spread evenly over `urls`; `events` published by
 * `publisher` in one burst (deliveries/s), then `paced` more one every `PACED_MS` (latency).
 */
async function fanOut(
  urls: readonly string[],
  connections: number,
  events: number,
  paced: number,
  publisher: Instance,
  servers: readonly number[],
): Promise<FanOut> {
  const client = new LoadClient();
  try {
    for (const [i, url] of urls.entries()) {
      const share = Math.floor(connections / urls.length) + (i < connections % urls.length ? 1 : 0);
      await client.ask({ type: 'connect', url, connections: share }, 'connected');
    }
    const received = new Promise<Record<string, number>>((resolve) => client.on('received', resolve));
    await client.ask({ type: 'expect', events }, 'armed');
    const cpu = (pids: readonly number[]) => pids.reduce((ms, pid) => ms + cpuMs(pid), 0);
    const serverCpu = cpu(servers);
    const clientCpu = cpu([client.child.pid!]);
    const start = performance.now();
    await publisher.publish(events);
    const burst = await received;
    const seconds = (performance.now() - start) / 1000;
    const serverCores = (cpu(servers) - serverCpu) / 1000 / seconds;
    const clientCores = (cpu([client.child.pid!]) - clientCpu) / 1000 / seconds;
    if (burst.deliveries !== connections * events) throw new Error(`delivered ${burst.deliveries}`);
    const receivedPaced = new Promise<Record<string, number>>((resolve) => client.on('received', resolve));
    await client.ask({ type: 'expect', events: paced }, 'armed');
    await publisher.publish(paced, undefined, PACED_MS);
    const latency = await receivedPaced;
    if (latency.deliveries !== connections * paced) throw new Error(`delivered ${latency.deliveries}`);
    return {
      deliveriesPerSecond: burst.deliveries / seconds,
      serverCores,
      clientCores,
      burstP50: burst.p50!,
      burstP99: burst.p99!,
      p50: latency.p50!,
      p99: latency.p99!,
    };
  } finally {
    client.close();
  }
}

/**
 * Publishes an anchor event through `publisher`, then `missed` more, and waits until they all reached
 * `watch`; returns the anchor's id (what a client that saw it and then went away would send).
 */
async function missedSince(publisher: Instance, watch: Instance, missed: number, prefix: string): Promise<string> {
  const url = new URL(watch.url);
  const connection = await connectSse({ host: url.hostname, port: Number(url.port) }, url.pathname);
  try {
    await connection.waitFor((f) => f.comment === true);
    await publisher.publish(1, `${prefix}-anchor`);
    const anchor = await connection.waitFor((f) => f.event === 'ref-update');
    await publisher.publish(missed, prefix);
    const last = `"refs/heads/${prefix}-${missed - 1}"`;
    await connection.waitFor((f) => f.event === 'ref-update' && f.data!.includes(last));
    return anchor.id!;
  } finally {
    connection.close();
  }
}

/** `clients` reconnecting at once with `lastEventId`, spread over `instances`; each must get `missed` events. */
async function storm(instances: readonly Instance[], clients: number, lastEventId: string, missed: number) {
  const client = new LoadClient();
  try {
    const urls = instances.map((i) => i.url);
    return await client.ask({ type: 'storm', urls, connections: clients, lastEventId, expect: missed }, 'stormed');
  } finally {
    client.close();
  }
}

/** Total calls in an `INFO commandstats` reply, and per command. */
function commandCalls(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

interface Setup {
  redis: RedisServer;
  root: string;
  /** Three gateways with Redis on `root`. */
  shared: Instance[];
  /** One gateway without Redis. */
  alone: Instance;
  betterSse: Instance;
}

let ready: Promise<Setup> | undefined;
const setup = () => (ready ??= start());

async function start(): Promise<Setup> {
  const redis = await startRedis();
  const root = await mkdtemp(join(tmpdir(), 'gitport-bench-redis-'));
  await createDemoRepository(root, 'demo');
  const aloneRoot = join(root, 'alone');
  await createDemoRepository(aloneRoot, 'demo');
  const [a, b, c, alone, betterSse] = await Promise.all([
    Instance.start(['redis', root, redis.url]),
    Instance.start(['redis', root, redis.url]),
    Instance.start(['redis', root, redis.url]),
    Instance.start(['memory', aloneRoot]),
    Instance.start(['better-sse']),
  ]);
  return { redis, root, shared: [a!, b!, c!], alone: alone!, betterSse: betterSse! };
}

afterAll(async () => {
  if (ready === undefined) return;
  const s = await ready;
  await Promise.all([...s.shared, s.alone, s.betterSse].map((i) => i.stop()));
  await s.redis.stop();
  await rm(s.root, { recursive: true, force: true });
});

describe('redis', () => {
  bench(
    'SSE fan-out: 3 instances with Redis vs 1 instance vs better-sse',
    async () => {
      if (!first('fan-out')) return;
      const s = await setup();
      const connections = sized(3000, 100);
      const events = sized(100, 10);
      const paced = sized(40, 5);
      const urls = s.shared.map((i) => i.url);
      // warm every server up (JIT, first connections) so the one measured first is not penalised
      const threePids = [...s.shared.map((i) => i.child.pid!), s.redis.pid!];
      const onePids = [s.alone.child.pid!];
      const peerPids = [s.betterSse.child.pid!];
      await fanOut(urls, Math.min(connections, 150), 20, 2, s.shared[0]!, threePids);
      await fanOut([s.alone.url], Math.min(connections, 150), 20, 2, s.alone, onePids);
      await fanOut([s.betterSse.url], Math.min(connections, 150), 20, 2, s.betterSse, peerPids);
      const three = await fanOut(urls, connections, events, paced, s.shared[0]!, threePids);
      const one = await fanOut([s.alone.url], connections, events, paced, s.alone, onePids);
      const peer = await fanOut([s.betterSse.url], connections, events, paced, s.betterSse, peerPids);
      const cores = `${availableParallelism()} cores for every process${QUICK ? ' (quick)' : ''}`;
      const note = `${connections} connections held by another process, ${events} events published in one burst; ${cores}`;
      const latencyNote = `${connections} connections held by another process, ${paced} events published ${PACED_MS} ms apart; ${cores}`;
      const ms = (f: FanOut) =>
        `burst p50 ${f.burstP50.toFixed(0)} ms, p99 ${f.burstP99.toFixed(0)} ms, cores busy: servers ${f.serverCores.toFixed(2)}, load client ${f.clientCores.toFixed(2)}`;
      record({
        id: 'sse.scale-out.deliveries-per-s',
        value: three.deliveriesPerSecond,
        unit: 'deliveries/s',
        peer: '1 instance without Redis',
        peerValue: one.deliveriesPerSecond,
        better: 'higher',
        goal: { min: 2, on: 'ratio', source: 'issue 31' },
        note: `3 gateway processes with Redis (${ms(three)}) vs 1 holding every connection (${ms(one)}; better-sse ${ms(peer)}); ${note}`,
      });
      record({
        id: 'sse.scale-out.vs-better-sse.deliveries-per-s',
        value: three.deliveriesPerSecond,
        unit: 'deliveries/s',
        peer: 'better-sse',
        peerValue: peer.deliveriesPerSecond,
        better: 'higher',
        note: `3 gateway processes with Redis vs better-sse in one process; ${note}`,
      });
      for (const p of ['p50', 'p99'] as const) {
        record({
          id: `sse.scale-out.latency-${p}`,
          value: three[p],
          unit: 'ms',
          peer: 'better-sse',
          peerValue: peer[p],
          better: 'lower',
          ...(p === 'p99' ? { goal: { max: 100, source: 'issue 31' } } : {}),
          note: `publish to receive through Redis, 3 gateway processes (1 instance without Redis: ${one[p].toFixed(1)} ms); ${latencyNote}`,
        });
      }
    },
    once,
  );

  bench(
    'clone throughput: 3 instances vs 1 on one root',
    async () => {
      if (!first('clones')) return;
      const s = await setup();
      const clones = sized(24, 3);
      const history = await ensureHistory({ commits: sized(1500, 100), seed: 21 });
      const sandbox: GitSandbox = await createGitSandbox('gitport-bench-redis-clone-');
      const root = sandbox.path('root');
      await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, join(root, 'bench.git')]);
      const servers: ServeProcess[] = [];
      try {
        const args = ['--root', root, '--port', '0', '--no-demo-page'];
        servers.push(
          ...(await Promise.all([
            startServe([...args, '--redis', s.redis.url], true),
            startServe([...args, '--redis', s.redis.url], true),
            startServe([...args, '--redis', s.redis.url], true),
            startServe(args, true),
          ])),
        );
        const three = servers.slice(0, 3);
        const one = servers.slice(3);
        let n = 0;
        /** Clones per second, and the servers' CPU-seconds per second meanwhile (cores busy). */
        const run = async (through: ServeProcess[], count: number): Promise<{ perSecond: number; cores: number }> => {
          const cpu = () => through.reduce((ms, server) => ms + cpuMs(server.child.pid!), 0);
          const cpuBefore = cpu();
          const start = performance.now();
          await Promise.all(
            Array.from({ length: count }, (_, i) =>
              sandbox.git([
                'clone',
                '--bare',
                '--quiet',
                `${through[i % through.length]!.url}/bench.git`,
                sandbox.path(`c${n++}`),
              ]),
            ),
          );
          const seconds = (performance.now() - start) / 1000;
          const cores = (cpu() - cpuBefore) / 1000 / seconds;
          await Promise.all(
            Array.from({ length: n }, (_, i) => rm(sandbox.path(`c${i}`), { recursive: true, force: true })),
          );
          return { perSecond: count / seconds, cores };
        };
        // warm-up: every server has started its workers and read the repository once
        await run(three, 3);
        await run(one, 1);
        const threeRun = await run(three, clones);
        const oneRun = await run(one, clones);
        record({
          id: 'gateway.scale-out.clones-per-s',
          value: threeRun.perSecond,
          unit: 'clones/s',
          peer: '1 instance',
          peerValue: oneRun.perSecond,
          better: 'higher',
          note: `${clones} concurrent git clone --bare (processes of their own) of ensureHistory({ commits: ${history.options.commits}, seed: 21 }), through 3 gitport serve --redis on one root vs 1 gitport serve on the same root; ${availableParallelism()} cores (os.availableParallelism()), shared by the servers and the clones; cores busy in the servers: ${threeRun.cores.toFixed(2)} (3 instances) vs ${oneRun.cores.toFixed(2)} (1)${QUICK ? ' (quick)' : ''}`,
        });
      } finally {
        for (const server of servers) server.child.kill('SIGTERM');
        await Promise.all(servers.map((server) => server.exit));
        await sandbox.cleanup();
      }
    },
    once,
  );

  bench(
    'reconnect storm across instances, replayed from Redis',
    async () => {
      if (!first('storm')) return;
      const s = await setup();
      const clients = sized(1000, 50);
      const missed = 100;
      // every client saw the anchor event, then 100 events went by through one instance
      const from = await missedSince(s.shared[0]!, s.shared[1]!, missed, 'storm');
      const before = commandCalls(await s.redis.cli(['INFO', 'commandstats']));
      const stormed = await storm(s.shared, clients, from, missed);
      const after = commandCalls(await s.redis.cli(['INFO', 'commandstats']));
      const delta = new Map<string, number>();
      for (const [name, calls] of after) {
        const d = calls - (before.get(name) ?? 0);
        if (d > 0 && name !== 'info') delta.set(name, d);
      }
      const total = [...delta.values()].reduce((a, b) => a + b, 0);
      // the same storm on 1 instance, replayed from its memory
      const aloneFrom = await missedSince(s.alone, s.alone, missed, 'storm');
      const peerStormed = await storm([s.alone], clients, aloneFrom, missed);
      const breakdown = [...delta].map(([name, calls]) => `${name} ${(calls / clients).toFixed(2)}`).join(', ');
      record({
        id: 'sse.scale-out.reconnect-storm.ms',
        value: stormed.ms!,
        unit: 'ms',
        peer: '1 instance, replay from memory',
        peerValue: peerStormed.ms!,
        better: 'lower',
        note: `${clients} clients reconnecting at once with Last-Event-ID over 3 gateway processes, ${missed} missed events each replayed from Redis${QUICK ? ' (quick)' : ''}`,
      });
      record({
        id: 'sse.scale-out.reconnect-storm.redis-commands-per-client',
        value: total / clients,
        unit: 'commands',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `INFO commandstats delta over the storm, per client (commands run by scripts included): ${breakdown}`,
      });
    },
    once,
  );
});
