/**
 * `bun packages/cli/bin/gitport.js serve` as a user runs it, on `Bun.serve` (the default under
 * Bun) and on Bun's node:http (`--node-http`): real git clones, fetches and pushes through it in
 * protocol v0 and v2, and an event stream that stays quiet past Bun.serve's default 10 s idle
 * timeout and still delivers the next ref update.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it } from 'vitest';
import { connectSse } from '../gateway/sse-client.js';
import { startBunServe } from './bun-process.js';

/** Longer than Bun.serve's default idle timeout (10 s), shorter than the hub's heartbeat (15 s). */
const QUIET_MS = 11_500;

describe.each([
  { adapter: 'Bun.serve', args: [] as string[] },
  { adapter: 'node:http', args: ['--node-http'] },
])('gitport serve under Bun on $adapter', ({ adapter, args }) => {
  it('serves real git (v0 and v2 clone, fetch, push) and an event stream idle past 10 s', async () => {
    await using sandbox = await createGitSandbox();
    const root = sandbox.path('repos');
    const server = await startBunServe(['--root', root, '--port', '0', '--workers', '1', '--token', 't0k', ...args]);
    try {
      expect(server.adapter).toBe(adapter);
      const v2 = sandbox.path('v2');
      const v0 = sandbox.path('v0');
      await sandbox.git(['-c', 'protocol.version=2', 'clone', '--quiet', `${server.url}/demo.git`, v2]);
      await sandbox.git(['-c', 'protocol.version=0', 'clone', '--quiet', `${server.url}/demo.git`, v0]);
      const head = await sandbox.git(['-C', v2, 'rev-parse', 'HEAD']);
      expect(await sandbox.git(['-C', v0, 'rev-parse', 'HEAD'])).toBe(head);
      expect(Number(await sandbox.git(['-C', v2, 'rev-list', '--count', 'HEAD']))).toBeGreaterThanOrEqual(3);
      await sandbox.git(['-C', v0, 'fsck', '--strict']);

      const events = await connectSse(server, '/demo.git/events');
      expect(events.status).toBe(200);
      await events.waitFor((f) => f.comment === true);
      await sleep(QUIET_MS);
      const before = events.frames.length;

      await sandbox.git(['-C', v2, 'commit', '--quiet', '--allow-empty', '-m', 'pushed through Bun']);
      const pushed = await sandbox.git(['-C', v2, 'rev-parse', 'HEAD']);
      await sandbox.git([
        '-C',
        v2,
        'push',
        '--quiet',
        `http://u:t0k@${server.host}:${server.port}/demo.git`,
        'HEAD:main',
      ]);
      const update = await events.waitFor((f) => f.event === 'ref-update');
      expect(events.frames.indexOf(update)).toBeGreaterThanOrEqual(before);
      expect(JSON.parse(update.data!)).toEqual({ repo: 'demo', ref: 'refs/heads/main', old: head, new: pushed });

      await sandbox.git(['-C', v0, '-c', 'protocol.version=0', 'fetch', '--quiet', 'origin']);
      expect(await sandbox.git(['-C', v0, 'rev-parse', 'origin/main'])).toBe(pushed);
      await sandbox.git(['-C', v2, '-c', 'protocol.version=2', 'fetch', '--quiet', 'origin']);
      expect(await sandbox.git(['-C', v2, 'rev-parse', 'origin/main'])).toBe(pushed);
      await sandbox.git(['--git-dir', sandbox.path('repos', 'demo.git'), 'fsck', '--strict']);

      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
      await events.ended;
      expect(server.stdout()).toBe(`gitport listening on ${server.url}\n`);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});

describe('bunx --bun gitport serve', () => {
  it('runs the workspace bin on Bun.serve and serves a clone', async () => {
    await using sandbox = await createGitSandbox();
    const server = await startBunServe(['--root', sandbox.path('repos'), '--port', '0', '--workers', '1'], 'bunx');
    try {
      expect(server.adapter).toBe('Bun.serve');
      await sandbox.git(['clone', '--quiet', `${server.url}/demo.git`, sandbox.path('demo')]);
      expect(
        Number(await sandbox.git(['-C', sandbox.path('demo'), 'rev-list', '--count', 'HEAD'])),
      ).toBeGreaterThanOrEqual(3);
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});
