/**
 * gitport between Node worker threads: a host in one worker, clients in others, each with its own
 * bus joined over MessageChannels. Clone, commit with isomorphic-git, push, fetch back;
 * concurrent pushes to one ref; a worker killed in the middle of a push.
 */
import { cp, readdir } from 'node:fs/promises';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';

interface Reply {
  id?: number;
  event?: string;
  result?: unknown;
  error?: { code: string; message: string };
  [key: string]: unknown;
}

class TestWorker {
  readonly worker: Worker;
  readonly events: Reply[] = [];
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  readonly #waiters: { match(r: Reply): boolean; resolve(r: Reply): void }[] = [];
  #next = 1;
  readonly exited: Promise<number>;

  constructor(id: string, ports: MessagePort[]) {
    this.worker = startTsWorker(new URL('./worker.ts', import.meta.url), {
      workerData: { id, ports },
      transferList: ports,
    });
    this.worker.on('message', (reply: Reply) => {
      if (reply.id !== undefined) {
        const pending = this.#pending.get(reply.id);
        this.#pending.delete(reply.id);
        if (reply.error) pending?.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
        else pending?.resolve(reply.result);
        return;
      }
      this.events.push(reply);
      for (const waiter of [...this.#waiters]) {
        if (waiter.match(reply)) {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          waiter.resolve(reply);
        }
      }
    });
    this.exited = new Promise((resolve) => this.worker.on('exit', resolve));
  }

  call<T = unknown>(command: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, command, args });
    });
  }

  event(name: string, match: (r: Reply) => boolean = () => true): Promise<Reply> {
    const found = this.events.find((r) => r.event === name && match(r));
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.#waiters.push({ match: (r) => r.event === name && match(r), resolve }));
  }

  async kill(): Promise<void> {
    await this.worker.terminate();
  }
}

describe('gitport between worker threads', () => {
  let sandbox: GitSandbox;
  let workers: TestWorker[];
  let hostWorker: TestWorker;
  let clientA: TestWorker;
  let clientB: TestWorker;
  let bare: string;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-workers-');
    const history = await ensureHistory({ commits: 50, seed: 3 });
    bare = sandbox.path('root', 'demo.git');
    await cp(history.gitDir, bare, { recursive: true });
    const toA = new MessageChannel();
    const toB = new MessageChannel();
    hostWorker = new TestWorker('host', [toA.port1, toB.port1]);
    clientA = new TestWorker('client-a', [toA.port2]);
    clientB = new TestWorker('client-b', [toB.port2]);
    workers = [hostWorker, clientA, clientB];
    await hostWorker.call('host', { root: sandbox.path('root') });
  });
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await sandbox.cleanup();
  });

  const expectClean = async () => {
    await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare });
    const locks = await sandbox.exec('sh', ['-c', `find ${bare} -name '*.lock'`]);
    expect(new TextDecoder().decode(locks.stdout)).toBe('');
  };

  it('nodeFs() makes synchronous calls in a worker thread (no thread-pool round trip per call)', async () => {
    expect(await clientA.call('fsCallsDone', { path: sandbox.path('written-at-once') })).toBe(true);
  });

  it('clones, commits with isomorphic-git, pushes, and fetches back in another worker', async () => {
    const base = await sandbox.git(['rev-parse', 'main'], { cwd: bare });
    expect(await clientA.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('a') })).toBe(base);
    expect(await clientB.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('b') })).toBe(base);

    const commit = await clientA.call<string>('commit', {
      dir: sandbox.path('a'),
      path: 'from-a.txt',
      content: 'written in worker a\n',
      message: 'from worker a',
    });
    const pushed = await clientA.call<{ ok: boolean }>('push', {
      dir: sandbox.path('a'),
      peer: 'host',
      name: 'demo',
      ref: 'refs/heads/main',
    });
    expect(pushed.ok).toBe(true);
    expect(await hostWorker.event('ref-update')).toMatchObject({
      repo: 'demo',
      ref: 'refs/heads/main',
      old: base,
      new: commit,
    });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(commit);
    await expectClean();

    await clientB.call('fetch', { dir: sandbox.path('b'), peer: 'host', name: 'demo' });
    expect(await sandbox.git(['rev-parse', 'refs/remotes/origin/main'], { cwd: sandbox.path('b') })).toBe(commit);
    expect(await sandbox.git(['show', 'refs/remotes/origin/main:from-a.txt'], { cwd: sandbox.path('b') })).toBe(
      'written in worker a',
    );
    const listed = await clientB.call<{ refs: { name: string; oid: string }[] }>('lsRefs', {
      peer: 'host',
      name: 'demo',
    });
    expect(listed.refs.find((r) => r.name === 'refs/heads/main')?.oid).toBe(commit);
  });

  it('concurrent pushes to the same ref: exactly one wins, the other is refused, the repository stays consistent', async () => {
    await clientA.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('a') });
    await clientB.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('b') });
    const commits = await Promise.all(
      [clientA, clientB].map((w, i) =>
        w.call<string>('commit', {
          dir: sandbox.path(i === 0 ? 'a' : 'b'),
          path: `c${i}.txt`,
          content: `${i}\n`,
          message: `c${i}`,
        }),
      ),
    );
    const results = await Promise.all(
      [clientA, clientB].map((w, i) =>
        w.call<{ ok: boolean }>('push', {
          dir: sandbox.path(i === 0 ? 'a' : 'b'),
          peer: 'host',
          name: 'demo',
          ref: 'refs/heads/main',
        }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    const winner = commits[results.findIndex((r) => r.ok)];
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(winner);
    await expectClean();
  });

  it('a client worker killed in the middle of a push: no ref moves, nothing is corrupted, the host gets a typed error', async () => {
    const base = await sandbox.git(['rev-parse', 'main'], { cwd: bare });
    await clientA.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('a') });
    const commit = await clientA.call<string>('commit', {
      dir: sandbox.path('a'),
      path: 'big.txt',
      content: 'x'.repeat(3_000_000),
      message: 'big',
    });
    const { stdout: pack } = await sandbox.exec(
      'sh',
      ['-c', `git rev-list --objects ${base}..${commit} | git pack-objects --stdout --no-reuse-delta -q`],
      { cwd: sandbox.path('a') },
    );
    const packsBefore = (await readdir(`${bare}/objects/pack`)).sort();
    void clientA.call('rawPushHalf', {
      peer: 'host',
      name: 'demo',
      ref: 'refs/heads/main',
      old: base,
      new: commit,
      pack,
    });
    await clientA.event('stalled');
    await clientA.kill();
    const error = await hostWorker.event('host-error');
    expect(error.code).toBe('TRANSPORT_PEER_LOST');
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(base);
    expect((await readdir(`${bare}/objects/pack`)).sort()).toEqual(packsBefore);
    const missing = await sandbox.run(['cat-file', '-e', commit], { cwd: bare, allowFailure: true });
    expect(missing.code).not.toBe(0);
    await expectClean();
    // The host still serves the others.
    expect(await clientB.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('b') })).toBe(base);
  });

  it('the host worker killed in the middle of a push: the client gets a typed error and no ref moves', async () => {
    const base = await sandbox.git(['rev-parse', 'main'], { cwd: bare });
    await clientA.call('clone', { peer: 'host', name: 'demo', dir: sandbox.path('a') });
    const commit = await clientA.call<string>('commit', {
      dir: sandbox.path('a'),
      path: 'big.txt',
      content: 'y'.repeat(2_000_000),
      message: 'big',
    });
    const { stdout: pack } = await sandbox.exec(
      'sh',
      ['-c', `git rev-list --objects ${base}..${commit} | git pack-objects --stdout -q`],
      { cwd: sandbox.path('a') },
    );
    const outcome = clientA.call('rawPushHalf', {
      peer: 'host',
      name: 'demo',
      ref: 'refs/heads/main',
      old: base,
      new: commit,
      pack,
    });
    await clientA.event('stalled');
    await hostWorker.kill();
    expect(await outcome).toEqual({ failed: 'TRANSPORT_PEER_LOST' });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(base);
    await expectClean();
  });
});
