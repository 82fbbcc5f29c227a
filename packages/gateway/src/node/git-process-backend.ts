/**
 * A GitBackend that runs git's own `upload-pack` / `receive-pack --stateless-rpc` in child
 * processes (what `git http-backend` runs). It is the reference the gateway is measured and
 * tested against, and the fallback when the gitport protocol handlers are not wired: the heavy
 * work runs outside the gateway's event loop either way.
 *
 * Pushes to one repository are serialized; the refs are listed before and after each push and the
 * difference is published as ref updates. Advertisements are cached per (repository, service,
 * protocol), dropped on our own ref updates and revalidated against the refs on disk (real git
 * may change the repository directly).
 */
import { spawn } from 'node:child_process';
import type { GitBackend, GitService, RpcOptions } from '../backend.js';
import { GatewayError } from '../errors.js';
import type { RefUpdateEvent } from '../sse-hub.js';
import { ZERO_ID } from '../sse-hub.js';
import { AdvertisementCache, adKey } from './advertisement-cache.js';
import { RepositoryRoot } from './repository-root.js';

export interface GitProcessBackendOptions {
  root: string;
  /** Trust a cached advertisement or repository lookup this long before checking the disk (ms, default 1000). */
  revalidateMs?: number;
  /** The git executable (default `git`). */
  git?: string;
}

export function createGitProcessBackend(options: GitProcessBackendOptions): GitBackend & { root: RepositoryRoot } {
  const revalidateMs = options.revalidateMs ?? 1000;
  const root = new RepositoryRoot(options.root, revalidateMs);
  const git = options.git ?? 'git';
  const listeners = new Set<(event: RefUpdateEvent) => void>();
  const cache = new AdvertisementCache(revalidateMs);
  const pushLocks = new Map<string, Promise<void>>();
  const children = new Set<import('node:child_process').ChildProcess>();
  let closed = false;

  const dirOf = async (repo: string): Promise<string> => {
    const dir = await root.resolve(repo);
    if (dir === undefined) throw new GatewayError('GATEWAY_NOT_FOUND', 'repository not found', { status: 404 });
    return dir;
  };

  const env = (protocol: string | null): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_PROTOCOL']) delete e[k];
    if (protocol !== null) e.GIT_PROTOCOL = protocol;
    return e;
  };

  function run(
    args: string[],
    protocol: string | null,
    signal: AbortSignal,
    input?: AsyncIterable<Uint8Array>,
  ): { output: AsyncIterable<Uint8Array>; done: Promise<{ code: number | null; stderr: string }> } {
    const child = spawn(git, args, { env: env(protocol), stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(child);
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      if (stderr.length < 8192) stderr += b.toString('utf8');
    });
    const kill = () => child.kill('SIGKILL');
    if (signal.aborted) kill();
    else signal.addEventListener('abort', kill, { once: true });
    const done = new Promise<{ code: number | null; stderr: string }>((resolve) => {
      child.on('error', (error) => {
        stderr += String(error);
      });
      child.on('close', (code) => {
        children.delete(child);
        signal.removeEventListener('abort', kill);
        resolve({ code, stderr });
      });
    });
    child.stdin.on('error', () => {
      // the process may stop reading early (bad request); its exit status tells
    });
    if (input === undefined) child.stdin.end();
    else {
      void (async () => {
        try {
          for await (const chunk of input) {
            if (!child.stdin.write(chunk)) {
              await new Promise<void>((resolve) => {
                const go = () => {
                  child.stdin.off('drain', go);
                  child.stdin.off('close', go);
                  resolve();
                };
                child.stdin.on('drain', go);
                child.stdin.on('close', go);
              });
            }
            if (child.stdin.destroyed) return;
          }
          child.stdin.end();
        } catch {
          // the body failed (too large, idle, client gone): the push must not complete
          kill();
        }
      })();
    }
    async function* output(): AsyncGenerator<Uint8Array> {
      let complete = false;
      let wrote = false;
      try {
        for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
          wrote = true;
          yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        }
        const result = await done;
        // after output, git has said what went wrong itself (ERR packets, report-status): end normally
        if (result.code !== 0 && !(wrote && !signal.aborted)) {
          // git refuses what it cannot parse: before any output, that is the request's fault
          throw new GatewayError('GATEWAY_BACKEND_FAILED', 'the git service refused the request', {
            status: 400,
            cause: new Error(result.stderr.trim()),
          });
        }
        complete = true;
      } finally {
        if (!complete) kill();
      }
    }
    return { output: output(), done };
  }

  async function listRefsIn(dir: string): Promise<Map<string, string>> {
    const controller = new AbortController();
    const { output } = run(['-C', dir, 'for-each-ref', '--format=%(objectname) %(refname)'], null, controller.signal);
    const chunks: Uint8Array[] = [];
    for await (const c of output) chunks.push(c);
    const text = Buffer.concat(chunks).toString('utf8');
    const refs = new Map<string, string>();
    for (const line of text.split('\n')) {
      const space = line.indexOf(' ');
      if (space === 40) refs.set(line.slice(41), line.slice(0, 40));
    }
    return refs;
  }

  function emit(event: RefUpdateEvent): void {
    for (const l of listeners) {
      try {
        l(event);
      } catch (error) {
        console.error('gitport: ref-update listener failed', error);
      }
    }
  }

  const dropCache = (repo: string) => cache.drop(repo);

  return {
    root,
    async exists(repo) {
      return (await root.resolve(repo)) !== undefined;
    },

    async advertise(repo: string, service: GitService, { protocol }: RpcOptions) {
      return cache.get(
        repo,
        adKey(service, protocol),
        () => dirOf(repo),
        async () => {
          const dir = await dirOf(repo);
          const { output } = run(
            [service.slice(4), '--stateless-rpc', '--advertise-refs', dir],
            protocol,
            AbortSignal.timeout(60_000),
          );
          const chunks: Uint8Array[] = [];
          for await (const c of output) chunks.push(c);
          return new Uint8Array(Buffer.concat(chunks));
        },
      );
    },

    async rpc(repo, service, body, { protocol, signal }) {
      if (closed) throw new GatewayError('GATEWAY_CLOSED', 'shutting down', { status: 503 });
      const dir = await dirOf(repo);
      if (service === 'git-upload-pack') {
        return run(['upload-pack', '--stateless-rpc', dir], protocol, signal, body).output;
      }
      // serialize pushes per repository; publish what moved
      const previous = pushLocks.get(repo) ?? Promise.resolve();
      let unlock!: () => void;
      const mine = new Promise<void>((resolve) => (unlock = resolve));
      const chained = previous.then(() => mine);
      pushLocks.set(repo, chained);
      await previous;
      let before: Map<string, string>;
      try {
        before = await listRefsIn(dir);
      } catch (error) {
        unlock();
        throw error;
      }
      const proc = run(['-c', 'receive.fsckObjects=true', 'receive-pack', '--stateless-rpc', dir], null, signal, body);
      const finish = async () => {
        try {
          await proc.done;
          dropCache(repo);
          const after = await listRefsIn(dir);
          const changed: RefUpdateEvent[] = [];
          for (const [ref, oid] of after) {
            const old = before.get(ref) ?? ZERO_ID;
            if (old !== oid) changed.push({ repo, ref, old, new: oid });
          }
          for (const [ref, oid] of before) if (!after.has(ref)) changed.push({ repo, ref, old: oid, new: ZERO_ID });
          if (changed.length > 0) dropCache(repo);
          for (const event of changed) emit(event);
        } catch (error) {
          console.error('gitport: reading refs after a push failed', error);
        } finally {
          unlock();
          if (pushLocks.get(repo) === chained) pushLocks.delete(repo);
        }
      };
      void proc.done.then(finish);
      return proc.output;
    },

    cachedAdvertisement(repo, service, protocol) {
      return cache.peek(repo, adKey(service, protocol));
    },

    refsChanged(repo) {
      if (repo === undefined) cache.clear();
      else cache.drop(repo);
    },

    onRefUpdate(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    healthy: () => !closed,

    async close() {
      closed = true;
      // let pushes in flight finish (git itself rolls back an incomplete one)
      await Promise.all([...pushLocks.values()]);
      for (const child of children) child.kill('SIGTERM');
    },
  };
}
