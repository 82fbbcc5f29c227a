/**
 * A real `redis-server` (the Debian package) for one test file, on a free local port, without
 * persistence: `kill` stops it at once (SIGKILL, its data gone), `restart` starts a new one on the
 * same port, `stop` ends it for good.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** The running server's process id (undefined while it is stopped). */
  readonly pid: number | undefined;
  /** Runs `redis-cli` against it and returns its output. */
  cli(args: readonly string[]): Promise<string>;
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function launch(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes('Ready to accept connections')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
  });
}

function ended(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(port);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child?.pid;
    },
    async cli(args) {
      const { stdout } = await promisify(execFile)('redis-cli', ['-p', String(port), ...args]);
      return stdout;
    },
    async kill() {
      if (child !== undefined) await ended(child, 'SIGKILL');
      child = undefined;
    },
    async restart() {
      if (child !== undefined) await ended(child, 'SIGKILL');
      child = await launch(port);
    },
    async stop() {
      if (child !== undefined) await ended(child, 'SIGTERM');
      child = undefined;
    },
  };
}
