/**
 * What a process and its descendants cost, read from /proc (Linux): CPU time and private memory,
 * for servers and commands run as child processes so that gitport and git are measured the same way.
 *
 * - CPU: utime + stime + cutime + cstime of the root process (/proc/<pid>/stat). Worker threads
 *   count in the process's own times; child processes (git http-backend, upload-pack,
 *   pack-objects) count in cutime/cstime once reaped, so a figure is read after the tree's
 *   children have exited (`settle`).
 * - Memory: the sum of RssAnon (anonymous resident pages: heaps, buffers, not the mapped pack
 *   files) over the root and every descendant (/proc/<pid>/task/<tid>/children), sampled on a
 *   timer; the peak of the samples.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The root and every live descendant. */
export function processTree(root: number): number[] {
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    out.push(pid);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      const children = read(`/proc/${pid}/task/${tid}/children`);
      if (!children) continue;
      for (const child of children.trim().split(' ')) if (child) stack.push(Number(child));
    }
  }
  return out;
}

/** RssAnon of one process in bytes (0 once it has exited). */
export function rssAnon(pid: number): number {
  const status = read(`/proc/${pid}/status`);
  const m = status && /^RssAnon:\s+(\d+) kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

/** RssAnon summed over the tree but `skip`, in bytes. */
export function treeRssAnon(root: number, skip: ReadonlySet<number> = new Set()): number {
  let total = 0;
  for (const pid of processTree(root)) if (!skip.has(pid)) total += rssAnon(pid);
  return total;
}

/** CPU ms of the root process and its reaped children. */
export function cpuMs(pid: number): number {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) throw new Error(`process ${pid} is gone`);
  // fields after the command name (which may hold spaces), from field 3 on
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/**
 * Waits until the root has no descendants left but `keep` (helpers that live as long as the
 * server, such as tsx's esbuild service): the others have exited and been reaped.
 */
export async function settle(root: number, keep: ReadonlySet<number> = new Set(), timeoutMs = 30_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (processTree(root).some((pid) => pid !== root && !keep.has(pid))) {
    if (performance.now() > until) throw new Error(`process ${root} still has children after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Samples a tree's RssAnon (but `skip`'s) every `intervalMs` until stopped; returns the peak in bytes. */
export function sampleMemory(root: number, skip: ReadonlySet<number> = new Set(), intervalMs = 10): { stop(): number } {
  let peak = treeRssAnon(root, skip);
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRssAnon(root, skip));
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, treeRssAnon(root, skip));
      return peak;
    },
  };
}

/** What a span of work cost a long-running process tree (a server). */
export interface Cost {
  wallMs: number;
  cpuMs: number;
  /**
   * Peak RssAnon of the tree during the span, bytes: the root and the processes it started for
   * the work, not helpers that were already there (tsx's esbuild service of a server run from
   * sources).
   */
  peakBytes: number;
  /** RssAnon of the root just before the span, bytes. */
  baseBytes: number;
}

/** Runs `work` while measuring the tree under `root`: wall (of `work`), CPU and memory. */
export async function measureServer<T>(root: number, work: () => Promise<T>): Promise<Cost & { result: T }> {
  const keep = new Set(processTree(root));
  await settle(root, keep);
  const helpers = new Set([...keep].filter((pid) => pid !== root));
  const baseBytes = treeRssAnon(root, helpers);
  const cpu0 = cpuMs(root);
  const sampler = sampleMemory(root, helpers);
  const start = performance.now();
  let peakBytes = 0;
  let result: T;
  try {
    result = await work();
  } finally {
    peakBytes = sampler.stop();
  }
  const wallMs = performance.now() - start;
  await settle(root, keep);
  return { result, wallMs, cpuMs: cpuMs(root) - cpu0, peakBytes, baseBytes };
}

/** What one command cost: wall, CPU (user + system, its children included), peak RssAnon. */
export interface CommandCost {
  wallMs: number;
  cpuMs: number;
  peakBytes: number;
  /** Bytes the command wrote to stdout. */
  stdoutBytes: number;
  /** stdout itself when `keepStdout` (else empty). */
  stdout: Uint8Array;
}

/**
 * Runs a command under bash's `time` (for its CPU) while sampling its tree's RssAnon; stdin from
 * a file or bytes, stdout counted (and kept if asked). Throws unless it exits 0.
 */
export function runCommand(
  argv: readonly string[],
  options: { stdinFile?: string; stdin?: Uint8Array; keepStdout?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<CommandCost> {
  return new Promise((resolve, reject) => {
    const fd = options.stdinFile === undefined ? undefined : openSync(options.stdinFile, 'r');
    const start = performance.now();
    const child = spawn('bash', ['-c', 'TIMEFORMAT="GITPORT_TIME %3U %3S"; time "$@"', 'bash', ...argv], {
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', ...options.env },
      stdio: [fd ?? 'pipe', 'pipe', 'pipe'],
    });
    if (fd !== undefined) closeSync(fd);
    const sampler = sampleMemory(child.pid as number);
    const out: Buffer[] = [];
    let stdoutBytes = 0;
    let err = '';
    child.stdout?.on('data', (b: Buffer) => {
      stdoutBytes += b.length;
      if (options.keepStdout) out.push(b);
    });
    child.stderr?.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-4000);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const peakBytes = sampler.stop();
      const wallMs = performance.now() - start;
      const m = /GITPORT_TIME ([\d.]+) ([\d.]+)/.exec(err);
      if (code !== 0 || !m) return reject(new Error(`${argv.join(' ')} exited ${code}: ${err}`));
      const stdout = Buffer.concat(out);
      resolve({
        wallMs,
        cpuMs: (Number(m[1]) + Number(m[2])) * 1000,
        peakBytes,
        stdoutBytes,
        stdout: new Uint8Array(stdout.buffer, stdout.byteOffset, stdout.length),
      });
    });
    if (child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(options.stdin ?? new Uint8Array(0));
    }
  });
}
