/**
 * gitport on Bun, side by side with the same peers on Bun and with gitport on Node, in one run.
 * The Bun side runs as real Bun child processes (the `bun` dev dependency) and reports back here.
 *
 * - `info/refs` (advertisement cache hit) through the gateway on `Bun.serve` next to a raw
 *   `Bun.serve` handler answering the same bytes from memory and to Hono on `Bun.serve`, all
 *   three in one Bun process (bun-servers.ts); autocannon in a separate process, 50 connections.
 *   Goal: at least 0.8x raw `Bun.serve`. The note gives each server's CPU-seconds per 10 000
 *   requests.
 * - The emitter and RPC rows measured inside Bun (bun-peers.ts) against the same peers as
 *   emitter.bench.ts and rpc.bench.ts.
 * - clone: `git clone --bare` of a seeded history through `bun gitport serve` next to
 *   `node gitport serve`, same corpus, same worker count: wall time, server CPU and peak private
 *   memory (process-tree.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { ensureHistory } from '@gitport/tests/history';
import { afterAll, bench, describe } from 'vitest';
import { bunBinary, startBunServe } from '../tests/src/bun/bun-process.js';
import { startServe } from '../tests/src/gateway/serve-process.js';
import { type Load, load } from './autocannon.js';
import { cpuMs, measureServer } from './process-tree.js';
import { median, QUICK, record, sized } from './report.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
const path = '/bench.git/info/refs?service=git-upload-pack';
const COMMITS = sized(1500, 100);

/** Runs a Bun script and resolves with the first JSON line it prints (the child keeps running). */
function bunScript(script: string, args: string[]): Promise<{ child: ChildProcess; report: Record<string, unknown> }> {
  const child = spawn(bunBinary, [fileURLToPath(new URL(script, import.meta.url)), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const end = out.indexOf('\n');
      if (end >= 0) resolve({ child, report: JSON.parse(out.slice(0, end)) });
    });
    child.on('exit', (code) => reject(new Error(`bun ${script} exited ${code}: ${err}`)));
  });
}

describe('gitport on Bun', () => {
  let sandbox: GitSandbox;
  let root: string;
  let ready: Promise<void> | undefined;
  const setup = () => (ready ??= start());
  async function start(): Promise<void> {
    sandbox = await createGitSandbox();
    root = await mkdtemp(join(tmpdir(), 'gitport-bench-bun-'));
    const history = await ensureHistory({ commits: COMMITS, seed: 21 });
    await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, join(root, 'bench.git')]);
  }

  afterAll(async () => {
    await sandbox?.cleanup();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  bench(
    'info/refs: gateway on Bun.serve vs raw Bun.serve vs Hono on Bun',
    async () => {
      await setup();
      const { child, report } = await bunScript('./bun-servers.ts', [root]);
      try {
        const urls = report as { pid: number; bun: string; gateway: string; raw: string; hono: string; bytes: number };
        const seconds = sized(4, 1);
        const rounds = sized(2, 1);
        const names = ['raw', 'hono', 'gateway'] as const;
        const loads = { raw: [] as Load[], hono: [] as Load[], gateway: [] as Load[] };
        const cpu = { raw: 0, hono: 0, gateway: 0 };
        for (const name of names) await load(`${urls[name]}${path}`, 1);
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? [...names] : [...names].reverse();
          for (const name of order) {
            const before = cpuMs(urls.pid);
            loads[name].push(await load(`${urls[name]}${path}`, seconds));
            cpu[name] += cpuMs(urls.pid) - before;
          }
        }
        const rps = (name: keyof typeof loads) => loads[name].reduce((n, l) => n + l.rps, 0) / loads[name].length;
        const cpuPer10k = (name: keyof typeof loads) =>
          (cpu[name] / 1000 / loads[name].reduce((n, l) => n + l.requests, 0)) * 10_000;
        const note = `Bun ${urls.bun}; ${urls.bytes} B advertisement, 50 connections, autocannon in a separate process, ${seconds}s x ${rounds}; CPU-seconds per 10 000 requests: gateway ${cpuPer10k('gateway').toFixed(3)}, raw Bun.serve ${cpuPer10k('raw').toFixed(3)}, Hono ${cpuPer10k('hono').toFixed(3)}`;
        record({
          id: 'gateway.bun.info-refs.rps',
          value: rps('gateway'),
          unit: 'req/s',
          peer: 'raw Bun.serve',
          peerValue: rps('raw'),
          better: 'higher',
          goal: { min: 0.8, on: 'ratio', source: 'issue 32' },
          note,
        });
        record({
          id: 'gateway.bun.info-refs.vs-hono.rps',
          value: rps('gateway'),
          unit: 'req/s',
          peer: 'Hono on Bun.serve',
          peerValue: rps('hono'),
          better: 'higher',
          note,
        });
        record({
          id: 'gateway.bun.info-refs.cpu-s-per-10k',
          value: cpuPer10k('gateway'),
          unit: 'CPU-s',
          peer: 'raw Bun.serve',
          peerValue: cpuPer10k('raw'),
          better: 'lower',
          note,
        });
      } finally {
        child.kill('SIGTERM');
      }
    },
    once,
  );

  bench(
    'emitter and RPC inside Bun',
    async () => {
      const { report } = await bunScript('./bun-peers.ts', QUICK ? ['--quick'] : []);
      const { bun, ops, emitter, rpc } = report as {
        bun: string;
        ops: number;
        emitter: Record<string, Record<string, number>>;
        rpc: Record<string, { p50us: number; callsPerS: number }>;
      };
      for (const [kase, figures] of Object.entries(emitter)) {
        for (const peer of ['nanoevents', 'mitt', 'eventemitter3']) {
          record({
            id: `emitter.bun.${kase}.${peer}`,
            value: figures.gitport!,
            unit: 'ops/s',
            peer: `${peer} on Bun`,
            peerValue: figures[peer]!,
            better: 'higher',
            note: `Bun ${bun}; best round of ${ops} emits, rounds alternating between the libraries`,
          });
        }
      }
      const note = `Bun ${bun}; main thread <-> Bun worker thread, every answer checked`;
      record({
        id: 'rpc.bun.calls-per-s.32-in-flight',
        value: rpc.gitport!.callsPerS,
        unit: 'calls/s',
        peer: 'comlink on Bun',
        peerValue: rpc.comlink!.callsPerS,
        better: 'higher',
        goal: { min: 1.5, on: 'ratio', source: 'issue 3' },
        note,
      });
      record({
        id: 'rpc.bun.call.p50-vs-raw.us',
        value: rpc.gitport!.p50us,
        unit: 'µs',
        peer: 'raw MessagePort on Bun',
        peerValue: rpc.raw!.p50us,
        better: 'lower',
        note,
      });
      record({
        id: 'rpc.bun.call.p50.us',
        value: rpc.gitport!.p50us,
        unit: 'µs',
        peer: 'comlink on Bun',
        peerValue: rpc.comlink!.p50us,
        better: 'lower',
        note,
      });
    },
    once,
  );

  bench(
    'clone through gitport serve: Bun vs Node',
    async () => {
      await setup();
      const args = ['--root', root, '--port', '0', '--workers', '2'];
      const onBun = await startBunServe(args);
      const onNode = await startServe(args, true);
      try {
        let n = 0;
        const clone = async (url: string) => {
          const dest = sandbox.path(`clone-${n++}`);
          await sandbox.git(['clone', '--bare', '--quiet', `${url}/bench.git`, dest]);
          const count = await sandbox.git(['--git-dir', dest, 'rev-list', '--all', '--count']);
          if (Number(count) < COMMITS) throw new Error(`clone incomplete: ${count} commits`);
          await rm(dest, { recursive: true, force: true });
        };
        const runs = sized(5, 1);
        await clone(onBun.url);
        await clone(onNode.url);
        type Sample = { wallMs: number; cpuMs: number; peakBytes: number };
        const costs: Record<'bun' | 'node', Sample[]> = { bun: [], node: [] };
        for (let i = 0; i < runs; i++) {
          costs.bun.push(await measureServer(onBun.child.pid!, () => clone(onBun.url)));
          costs.node.push(await measureServer(onNode.child.pid!, () => clone(onNode.url)));
        }
        const of = (side: 'bun' | 'node', key: 'wallMs' | 'cpuMs' | 'peakBytes') =>
          median(costs[side].map((c) => c[key]));
        const note = `git clone --bare (protocol v2) of a ${COMMITS}-commit seeded history, median of ${runs}${QUICK ? ' (quick)' : ''}; gitport serve --workers 2, Bun ${/Bun (\S+),/.exec(onBun.stderr())?.[1]} on Bun.serve vs Node ${process.versions.node}`;
        record({
          id: 'gateway.bun.clone.ms',
          value: of('bun', 'wallMs'),
          unit: 'ms',
          peer: 'gitport serve on Node',
          peerValue: of('node', 'wallMs'),
          better: 'lower',
          note,
        });
        record({
          id: 'gateway.bun.clone.cpu-ms',
          value: of('bun', 'cpuMs'),
          unit: 'CPU-ms',
          peer: 'gitport serve on Node',
          peerValue: of('node', 'cpuMs'),
          better: 'lower',
          note,
        });
        record({
          id: 'gateway.bun.clone.peak-mb',
          value: of('bun', 'peakBytes') / 1e6,
          unit: 'MB',
          peer: 'gitport serve on Node',
          peerValue: of('node', 'peakBytes') / 1e6,
          better: 'lower',
          note: `${note}; peak private memory (RssAnon) of the server process`,
        });
      } finally {
        onBun.child.kill('SIGTERM');
        onNode.child.kill('SIGTERM');
        await Promise.all([onBun.exit, onNode.exit]);
      }
    },
    once,
  );
});
