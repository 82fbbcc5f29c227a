/**
 * @gitport/transport throughput between a main thread and a worker thread (issue 4), side by
 * side with a minimal raw MessagePort sender on the same kind of port in the same run.
 *
 * Each side runs in a child process of its own (tests/src/transport/bench-process.ts), its main
 * thread talking to a worker thread it started (tests/src/transport/bench-peer.ts); this file
 * only asks each for its runs, in turn, and collects their times. Both senders allocate and fill
 * each chunk and transfer its buffer; both receivers read every byte of every chunk with the
 * same function and answer a checksum that is checked, so a sender that drops or corrupts data
 * fails the bench.
 * Both use the same credit window (1 MiB for 64 KiB chunks, 4 MiB for 1 MiB chunks). The
 * transport's reader grants it back in half-window batches (its protocol); the raw receiver in
 * quarter-window batches, which measured no slower for it than halves. The transport goes
 * through the bus (createBus + nodeEndpoint on a MessageChannel port); the raw sender posts
 * `{s, b}` on a bare MessageChannel port. The raw sender and receiver are the ones the
 * in-browser rows use (tests/src/transport/bench-shared.ts).
 *
 * Figures are medians of the timed runs: MB/s (10^6 bytes per second) and messages (chunks)
 * per second; each timed transfer includes opening the stream and waiting for the answer (the
 * warm-up runs open the same names, so timed opens are optimistic: data follows the open frame
 * without waiting for the accept, as for any opener that used a name before). The two sides
 * run alternately within each iteration, so a change of load on the (shared, 2-core) machine
 * hits both alike.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { afterAll, bench, describe } from 'vitest';
import type { BenchRun, BenchRunResult, BenchSide } from '../tests/src/transport/bench-process.js';
import { mbps, median, record, sized } from './report.js';

const KiB = 1024;
const MiB = 1024 * 1024;
const WARMUP = sized(2, 1);
/** Timed runs of a case: at least 10, more for small transfers (about 1 GB per side), at most 50. */
const iterationsFor = (bytes: number) => sized(Math.max(10, Math.min(50, Math.floor(1e9 / bytes))), 1);

// ---------------------------------------------------------------- the two sides

const SIDE_ENTRY = new URL('../tests/src/transport/bench-process.ts', import.meta.url);

/** A side's process: it runs what it is asked and answers each run's time. */
interface Side {
  child: ChildProcess;
  waiting: Map<number, (result: BenchRunResult) => void>;
}

let sides: Promise<Record<BenchSide, Side>> | undefined;
let runs = 0;

async function startSide(side: BenchSide): Promise<Side> {
  const child = spawnTsNode(SIDE_ENTRY, [side], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, (result: BenchRunResult) => void>();
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the ${side} bench process exited (${code})`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      if (message === 'ready') resolve();
      else reject(new Error(`the ${side} bench process said ${JSON.stringify(message)}`));
    });
  });
  child.on('message', (result: BenchRunResult) => {
    const done = waiting.get(result.run);
    waiting.delete(result.run);
    done?.(result);
  });
  child.on('exit', (code) => {
    for (const [run, done] of waiting) done({ run, error: `the ${side} bench process exited (${code})` });
    waiting.clear();
  });
  return { child, waiting };
}

/**
 * Each side runs in a child process of its own, main thread and worker thread
 * (tests/src/transport/bench-process.ts says why), started once for every case.
 */
function setup(): Promise<Record<BenchSide, Side>> {
  sides ??= Promise.all([startSide('transport'), startSide('raw')]).then(([transport, raw]) => ({ transport, raw }));
  return sides;
}

/** One run on `side`; resolves with its time in milliseconds. */
async function runOn(side: Side, run: Omit<BenchRun, 'run'>): Promise<number> {
  const id = ++runs;
  const result = await new Promise<BenchRunResult>((resolve) => {
    side.waiting.set(id, resolve);
    side.child.send({ ...run, run: id } satisfies BenchRun);
  });
  if ('error' in result) throw new Error(result.error);
  return result.ms;
}

// ---------------------------------------------------------------- the runs

interface Case {
  id: string;
  label: string;
  /** Which way the bytes go (main thread -> worker unless told). */
  toMain?: boolean;
  /** Timed runs, when not derived from the size. */
  iterations?: number;
  chunk: number;
  total: number;
  streams: number;
  window: number;
  goal?: { mbps?: number; ratio?: number; reference?: string };
}

const cases: Case[] = [
  {
    id: 'transport.worker.64k',
    label: '64 KiB chunks',
    chunk: 64 * KiB,
    total: sized(256 * MiB, 4 * MiB),
    streams: 1,
    window: MiB,
    goal: { mbps: 2000, ratio: 0.8 },
  },
  {
    id: 'transport.worker.1m',
    label: '1 MiB chunks',
    chunk: MiB,
    total: sized(512 * MiB, 8 * MiB),
    streams: 1,
    window: 4 * MiB,
    goal: { ratio: 0.8 },
  },
  {
    id: 'transport.worker-to-main.64k',
    label: '64 KiB chunks, worker thread -> main thread',
    toMain: true,
    chunk: 64 * KiB,
    total: sized(256 * MiB, 4 * MiB),
    streams: 1,
    window: MiB,
    goal: { ratio: 0.8 },
  },
  {
    // pkt-line-sized writes: the transport coalesces them, the raw sender posts each one.
    id: 'transport.worker.256b',
    label: '256 B writes',
    chunk: 256,
    total: sized(4 * MiB, 256 * KiB),
    streams: 1,
    window: MiB,
    iterations: 5,
  },
  {
    id: 'transport.10mb-64kb',
    label: '10 MB in 64 KB chunks',
    chunk: 64 * KiB,
    total: 160 * 64 * KiB,
    streams: 1,
    window: MiB,
    goal: { mbps: 630, reference: 'reference report 004: 630 MB/s' },
  },
  {
    id: 'transport.concurrent.10x10mb',
    label: '10 concurrent transfers of 10 MB',
    chunk: 64 * KiB,
    total: 160 * 64 * KiB,
    streams: 10,
    window: MiB,
    goal: { mbps: 767, reference: 'reference report 004: 767 MB/s combined' },
  },
  {
    id: 'transport.concurrent.10x128k',
    label: '10 concurrent transfers of 128 KB',
    chunk: 64 * KiB,
    total: 128 * KiB,
    streams: 10,
    window: MiB,
    goal: { mbps: 767, reference: 'reference report 004: 767 MB/s combined (10 x 128 KB)' },
  },
];

const times = new Map<string, { transport: number[]; raw: number[] }>();
const timesOf = (id: string) => {
  let t = times.get(id);
  if (t === undefined) {
    t = { transport: [], raw: [] };
    times.set(id, t);
  }
  return t;
};

for (const c of cases) {
  describe(c.toMain ? c.label : `${c.label}, main thread -> worker thread`, () => {
    // One bench runs both, alternating (and which goes first alternates too), so a change of
    // load on the machine hits both alike.
    let round = 0;
    bench(
      '@gitport/transport and raw MessagePort with a credit window, alternating',
      async () => {
        const { transport, raw } = await setup();
        const run = { toMain: c.toMain === true, total: c.total, chunk: c.chunk, window: c.window, streams: c.streams };
        const runTransport = async () => {
          timesOf(c.id).transport.push(await runOn(transport, run));
        };
        const runRaw = async () => {
          timesOf(c.id).raw.push(await runOn(raw, run));
        };
        if (round++ % 2 === 0) {
          await runTransport();
          await runRaw();
        } else {
          await runRaw();
          await runTransport();
        }
      },
      {
        iterations: c.iterations === undefined ? iterationsFor(c.total * c.streams) : sized(c.iterations, 1),
        warmupIterations: WARMUP,
        time: 0,
        warmupTime: 0,
      },
    );
  });
}

afterAll(async () => {
  for (const c of cases) {
    const t = times.get(c.id);
    if (t === undefined || t.transport.length <= WARMUP) continue;
    const bytes = c.total * c.streams;
    const messages = bytes / c.chunk;
    // The first runs are vitest's warmup.
    const ms = median(t.transport.slice(WARMUP));
    const rawMs = median(t.raw.slice(WARMUP));
    const note = `${c.label}, ${c.streams} stream(s), window ${c.window / KiB} KiB${c.goal?.reference ? `; ${c.goal.reference}` : ''}`;
    record({
      id: `${c.id}.mbps`,
      value: mbps(bytes, ms),
      unit: 'MB/s',
      peer: 'raw MessagePort + credit window',
      peerValue: mbps(bytes, rawMs),
      better: 'higher',
      ...(c.goal?.mbps ? { goal: { min: c.goal.mbps, source: 'issue 4' } } : {}),
      note,
    });
    record({
      id: `${c.id}.msgs`,
      value: messages / (ms / 1000),
      unit: 'messages/s',
      peer: 'raw MessagePort + credit window',
      peerValue: messages / (rawMs / 1000),
      better: 'higher',
      ...(c.goal?.ratio ? { goal: { min: c.goal.ratio, on: 'ratio' as const, source: 'issue 4' } } : {}),
      note: `chunks per second, ${note}`,
    });
  }
  if (sides === undefined) return;
  const both = await sides;
  await Promise.all(
    Object.values(both).map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.disconnect();
        }),
    ),
  );
});
