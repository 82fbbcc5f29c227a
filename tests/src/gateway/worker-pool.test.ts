/**
 * The worker pool itself: repositories pinned to workers by name, a replaced worker serving the
 * same repositories again (fetch, push, ref-update signals), /healthz following the pool, a worker
 * started only by the first request pinned to it, and one that crashes before it ever connects
 * started again with backoff.
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { createGateway } from '@gitport/gateway';
import { createWorkerPoolBackend, listen, type WorkerPoolBackend } from '@gitport/gateway/node';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { describe, expect, it, vi } from 'vitest';
import { rawRequest, startServer } from './server.js';
import { connectSse } from './sse-client.js';

const TOKEN = 'pool';

describe('worker pool', () => {
  it('pins repositories by name and keeps serving after a worker is replaced', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), token: TOKEN, backend: 'worker-pool' });
    const pool = server.gateway.backend as WorkerPoolBackend;
    expect(pool.size).toBe(2);
    const names = Array.from({ length: 24 }, (_, i) => `repo${i}`);
    const pins = names.map((n) => pool.workerOf(n));
    expect(names.map((n) => pool.workerOf(n))).toEqual(pins);
    expect(new Set(pins)).toEqual(new Set([0, 1]));

    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'repo0.git')]);
    await sandbox.git(['clone', '--quiet', `${server.url}/repo0.git`, sandbox.path('c1')]);

    await pool.restart(pool.workerOf('repo0'));
    expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);

    const events = await connectSse(server, '/repo0.git/events');
    await events.waitFor((f) => f.comment === true);
    await sandbox.git(['clone', '--quiet', `${server.url}/repo0.git`, sandbox.path('c2')]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'two']);
    await sandbox.git([
      '-C',
      work,
      'push',
      '--quiet',
      `http://u:${TOKEN}@${server.host}:${server.port}/repo0.git`,
      'HEAD:main',
    ]);
    const update = await events.waitFor((f) => f.event === 'ref-update');
    expect(JSON.parse(update.data!).new).toBe(await sandbox.git(['-C', work, 'rev-parse', 'HEAD']));
    events.close();
    await sandbox.git(['--git-dir', join(server.root, 'repo0.git'), 'fsck', '--strict', '--no-dangling']);
  });

  it('keeps discovery fresh after a push while the cache is trusted', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({
      root: sandbox.path('root'),
      token: TOKEN,
      backend: 'worker-pool',
      revalidateMs: 3_600_000,
    });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'fresh.git')]);
    const url = `${server.url}/fresh.git`;
    const refs = async () => (await sandbox.git(['ls-remote', url])).split('\n').filter((l) => !l.endsWith('HEAD'));
    expect(await refs()).toHaveLength(1);
    // a push through the gateway drops the cached advertisements of its repository
    await sandbox.git([
      '-C',
      work,
      'push',
      '--quiet',
      `http://u:${TOKEN}@${server.host}:${server.port}/fresh.git`,
      'HEAD:refs/heads/topic',
    ]);
    const after = await refs();
    expect(after).toHaveLength(2);
    expect(after.some((l) => l.endsWith('\trefs/heads/topic'))).toBe(true);
  });

  it('starts a worker with the first request pinned to it; retries one that crashes before its first connect, unhealthy until it is up', async () => {
    await using sandbox = await createGitSandbox();
    const root = sandbox.path('root');
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
    // worker 0 is a real worker thread that throws while loading, until the test lets it start
    let healed = false;
    const crashes: number[] = [];
    const spawned: string[] = [];
    let crashed: () => void = () => {};
    const backend = await createWorkerPoolBackend({
      root,
      workers: 2,
      revalidateMs: 0,
      restartBackoff: { initialMs: 20, maxMs: 80 },
      spawn: (entry, options) => {
        const id = (options.workerData as { id: string }).id;
        spawned.push(id);
        if (id.startsWith('gateway-worker-0-') && !healed) {
          const worker = new Worker('throw new Error("worker crashed while loading")', { eval: true });
          worker.once('exit', (code) => {
            crashes.push(code);
            crashed();
          });
          return worker;
        }
        return startTsWorker(entry, options);
      },
    });
    const server = await listen(createGateway({ backend }), { port: 0, host: '127.0.0.1' });
    try {
      const name = Array.from({ length: 100 }, (_, i) => `pinned${i}`).find((n) => backend.workerOf(n) === 0)!;
      await sandbox.git(['clone', '--quiet', '--bare', work, join(root, `${name}.git`)]);
      // no request yet: no worker, and a pool with no worker it needs down is healthy
      expect(spawned).toEqual([]);
      expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);
      // the first request pinned to worker 0 starts it (worker 1 stays unstarted); it crashes
      const first = await rawRequest(server, 'GET', `/${name}.git/info/refs?service=git-upload-pack`);
      expect(first.status).toBe(503);
      expect(spawned[0]).toMatch(/^gateway-worker-0-/);
      // it keeps being started again while it keeps crashing, and the pool says so
      while (crashes.length < 4) await new Promise<void>((resolve) => (crashed = resolve));
      expect(crashes.every((code) => code !== 0)).toBe(true);
      expect(backend.healthy()).toBe(false);
      expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(503);
      const refused = await rawRequest(server, 'GET', `/${name}.git/info/refs?service=git-upload-pack`);
      expect(refused.status).toBe(503);

      healed = true;
      await vi.waitFor(
        async () => {
          expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);
        },
        { timeout: 30_000, interval: 50 },
      );
      await sandbox.git(['clone', '--quiet', `${server.url}/${name}.git`, sandbox.path('clone')]);
      expect(await sandbox.git(['-C', sandbox.path('clone'), 'rev-parse', 'HEAD'])).toBe(
        await sandbox.git(['-C', work, 'rev-parse', 'HEAD']),
      );
      expect(spawned.every((id) => id.startsWith('gateway-worker-0-'))).toBe(true);
    } finally {
      await server.close();
    }
  });
});
