/**
 * `gitport serve` in a child process, as a user runs it: resolves once it printed its one
 * `gitport listening on ...` line. From the sources through tsx, or from the built bin.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { rawRequest, text } from './server.js';

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  host: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

const entry = new URL('./serve-entry.ts', import.meta.url);
/** The `gitport` bin of @gitport/cli, found through the package (it loads the built dist). */
const builtBin = fileURLToPath(new URL('bin/gitport.js', import.meta.resolve('@gitport/cli/package.json')));

export function startServe(args: string[], built = false): Promise<ServeProcess> {
  const child = built
    ? spawn(process.execPath, [builtBin, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawnTsNode(entry, ['serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /^gitport listening on (http:\/\/([\d.]+):(\d+))\n/.exec(out);
      if (m) {
        resolve({ child, url: m[1]!, host: m[2]!, port: Number(m[3]), stdout: () => out, stderr: () => err, exit });
      }
    });
    void exit.then((code) => reject(new Error(`gitport serve exited ${code}: ${err}`)));
  });
}

/** The instance's `/healthz` reply, its body trimmed. */
export interface HealthReply {
  status: number;
  body: string;
}

/** Asks the instance's `/healthz` once. */
export async function health(server: ServeProcess): Promise<HealthReply> {
  const reply = await rawRequest(server, 'GET', '/healthz');
  return { status: reply.status, body: text(reply.body).trim() };
}

/**
 * Polls the instance's `/healthz` every 100 ms until `wanted` holds for its reply, and returns
 * that reply; fails after `polls` of them.
 */
export async function untilHealth(
  server: ServeProcess,
  wanted: (reply: HealthReply) => boolean,
  polls = 300,
): Promise<HealthReply> {
  for (let i = 0; ; i++) {
    const reply = await health(server);
    if (wanted(reply)) return reply;
    if (i >= polls) throw new Error(`instance on port ${server.port}: /healthz still answers ${reply.body}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the instance's `/healthz` says ok (with `--redis`: once it is on Redis). */
export async function untilHealthy(server: ServeProcess, polls = 300): Promise<void> {
  await untilHealth(server, (reply) => reply.status === 200 && reply.body === 'ok', polls);
}
