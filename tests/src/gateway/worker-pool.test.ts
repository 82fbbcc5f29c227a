/**
 * The worker pool itself: repositories pinned to workers by name, a replaced worker serving the
 * same repositories again (fetch, push, ref-update signals), /healthz following the pool.
 */
import { join } from 'node:path';
import type { WorkerPoolBackend } from '@gitport/gateway';
import { describe, expect, it } from 'vitest';
import { createGitSandbox } from '../git.js';
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
});
