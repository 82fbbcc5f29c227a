/**
 * Recording benchmark figures.
 *
 * Every bench file measures gitport and its peer (git, isomorphic-git, comlink, an emitter
 * library, ...) side by side in the same run and calls `record()` once per figure. Rows are
 * appended as JSON lines to `benchmarks/.cache/rows/<bench file>.jsonl`; `benchmarks/run.mjs`
 * collects them into `results.json`, `RESULTS.md` and `chart.svg`.
 *
 *   row   = { id, value, unit, peer, peerValue, ratio, better, goal?, note?, file, at }
 *   ratio = value / peerValue (null when there is no peer figure)
 *
 * `better` says which direction wins for this figure; a ratio above 1 is a win when
 * `better` is 'higher', below 1 when it is 'lower'. A peer that cannot run is recorded with
 * `peerValue: null` and a `note` saying why, never with a made-up figure.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import topics from './topics.json' with { type: 'json' };

/**
 * Topics a row id may start with (issue 9, plus `bus.` for the bus's send and broadcast rows), in
 * the order the report lists them; `run.mjs` reads the same file.
 */
export const TOPICS: readonly string[] = topics;

/** A goal stated by an issue: the figure (or the ratio) must be at least `min` / at most `max`. */
export interface Goal {
  min?: number;
  max?: number;
  /** What the goal is about: the figure itself (default) or the ratio to the peer. */
  on?: 'value' | 'ratio';
  /** Where the goal comes from, e.g. 'issue 2'. */
  source?: string;
}

export interface RecordInput {
  /** Stable id starting with a topic, e.g. `pktline.decode.mbps`. */
  id: string;
  value: number;
  /** e.g. 'MB/s', 'ms', 'ops/s', 'MB', '%'. */
  unit: string;
  /** The peer measured in the same run, e.g. 'git pack-objects'; null when there is none. */
  peer: string | null;
  peerValue: number | null;
  better: 'higher' | 'lower';
  goal?: Goal;
  /** Free text shown in RESULTS.md (sizes, why a peer could not run, ...). */
  note?: string;
}

export interface Row extends RecordInput {
  ratio: number | null;
  /** The bench file that recorded the row (basename). */
  file: string;
  /** ISO time of recording. */
  at: string;
}

export class BenchReportError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BenchReportError';
    this.code = code;
  }
}

/** True for `pnpm bench --quick` (CI smoke run): tiny sizes, few iterations. */
export const QUICK = process.env.GITPORT_BENCH_QUICK === '1';

/** Picks the full-run or the quick-run value. */
export function sized<T>(full: T, quick: T): T {
  return QUICK ? quick : full;
}

/** The directory rows are written to (overridable for tests of the machinery itself). */
export function rowsDir(): string {
  return process.env.GITPORT_BENCH_ROWS ?? join(dirname(fileURLToPath(import.meta.url)), '.cache', 'rows');
}

const ID = /^[a-z0-9]+(?:[.-][a-z0-9-]+)+$/;

/** Validates and appends one row; returns it. */
export function record(input: RecordInput): Row {
  if (!ID.test(input.id) || !TOPICS.some((t) => input.id.startsWith(`${t}.`))) {
    throw new BenchReportError('BENCH_BAD_ID', `row id ${JSON.stringify(input.id)} must start with one of ${TOPICS}`);
  }
  if (!Number.isFinite(input.value)) {
    throw new BenchReportError('BENCH_BAD_VALUE', `${input.id}: value ${input.value} is not a finite number`);
  }
  if (input.peerValue !== null && !Number.isFinite(input.peerValue)) {
    throw new BenchReportError('BENCH_BAD_VALUE', `${input.id}: peerValue ${input.peerValue} is not finite`);
  }
  if (input.peer === null && input.peerValue !== null) {
    throw new BenchReportError('BENCH_BAD_PEER', `${input.id}: a peerValue needs a peer name`);
  }
  if (input.better !== 'higher' && input.better !== 'lower') {
    throw new BenchReportError('BENCH_BAD_BETTER', `${input.id}: better must be 'higher' or 'lower'`);
  }
  const ratio = input.peerValue === null || input.peerValue === 0 ? null : input.value / input.peerValue;
  const file = benchFile();
  const row: Row = { ...input, ratio, file, at: new Date().toISOString() };
  const dir = rowsDir();
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, `${file}.jsonl`), `${JSON.stringify(row)}\n`);
  const peerText = input.peerValue === null ? '' : `  (${input.peer}: ${fmt(input.peerValue)}, ratio ${fmt(ratio)})`;
  console.log(`[bench] ${input.id} = ${fmt(input.value)} ${input.unit}${peerText}`);
  return row;
}

function fmt(n: number | null): string {
  if (n === null) return '—';
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

/** The bench file being run: vitest's worker state, else the first *.bench.ts on the stack. */
function benchFile(): string {
  const state = (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__;
  if (state?.filepath) return basename(state.filepath);
  const match = /([\w.-]+\.bench\.[cm]?[jt]s)/.exec(new Error().stack ?? '');
  return match?.[1] ?? 'unknown';
}

/** MB/s (1 MB = 10^6 bytes) for `bytes` moved in `ms` milliseconds. */
export function mbps(bytes: number, ms: number): number {
  return bytes / 1e6 / (ms / 1000);
}

/** The median of `values` (the upper middle one of an even count); `what` names them in the error when there are none. */
export function median(values: readonly number[], what = 'the figure'): number {
  if (values.length === 0) throw new BenchReportError('BENCH_NO_RUNS', `no runs for ${what}`);
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Runs `fn` `runs` times after `warmup` untimed runs and returns the median duration in ms.
 * For figures that vitest bench's own ops/s do not express (MB/s, side by side with a peer).
 */
export async function medianMs(fn: () => unknown, options: { runs?: number; warmup?: number } = {}): Promise<number> {
  const runs = options.runs ?? sized(5, 1);
  const warmup = options.warmup ?? sized(1, 0);
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

/** heapUsed + arrayBuffers + external, in bytes (the memory figure issue 9 asks for). */
export function memoryBytes(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers + m.external;
}
