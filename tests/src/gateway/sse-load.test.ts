/**
 * SSE fan-out under load, over real HTTP: a few hundred subscribers (most never read), bursts of
 * thousands of ref updates plus one real push. What the hub holds stays under its bound, readers
 * that read get every event or a reset, and the connection cap refuses the next subscriber with
 * 503, Retry-After and a text body (also through `gitport serve --max-sse-connections`).
 * Assertions on counters and contents, never on durations.
 */
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it, vi } from 'vitest';
import { startServe } from './serve-process.js';
import { rawRequest, startServer, text } from './server.js';
import { connectSse, type SseConnection, type SseFrame } from './sse-client.js';

const TOKEN = 'sse';
const READERS = 60;
const IDLE = 240;
const BOUND = 256 * 1024;

/** Checks a reader's frames: ids in order, and every gap in the updates covered by a reset. */
function everyEventOrReset(frames: readonly SseFrame[], firstSeq: number, lastSeq: number, epoch: string): void {
  let expected = firstSeq;
  for (const frame of frames) {
    if (frame.event === 'reset') {
      const seq = Number(frame.id!.slice(epoch.length + 1));
      expect(seq).toBeGreaterThanOrEqual(expected - 1);
      expected = seq + 1;
    } else if (frame.event === 'ref-update') {
      expect(frame.id).toBe(`${epoch}-${expected}`);
      expected++;
    }
  }
  expect(expected).toBe(lastSeq + 1);
}

describe('SSE fan-out under load', () => {
  it('bounds what each subscriber holds, gives readers every event or a reset, and refuses past the cap', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({
      root: sandbox.path('root'),
      token: TOKEN,
      backend: 'worker-pool',
      sse: { maxSubscribers: READERS + IDLE, maxBufferedBytes: BOUND, heartbeatMs: 0 },
    });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'r.git')]);
    const hub = server.gateway.hub;
    const rss = process.memoryUsage().rss;

    const connections: SseConnection[] = [];
    try {
      for (let i = 0; i < READERS + IDLE; i++) {
        const connection = await connectSse(server, i % 2 === 0 ? '/r.git/events' : '/events');
        connections.push(connection);
        if (i >= READERS) connection.res.pause();
      }
      await vi.waitFor(() => expect(hub.size).toBe(READERS + IDLE));
      const readers = connections.slice(0, READERS);

      // the cap refuses the next subscriber, clearly
      const refused = await rawRequest(server, 'GET', '/r.git/events');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBeDefined();
      expect(text(refused.body)).toMatch(/too many event subscribers/);

      // bursts of thousands of ref updates (long ref names: megabytes in all), the last one
      // alone larger than the bound, so every subscriber gets a reset for it ...
      const firstSeq = Number(hub.lastId.split('-')[1]) + 1;
      const ref = (n: number) => `refs/heads/${'load/'.repeat(30)}${n}`;
      const bursts = [...Array.from({ length: 10 }, () => 500), 2000];
      let published = 0;
      for (const size of bursts) {
        for (let i = 0; i < size; i++) {
          hub.publish({ repo: 'r', ref: ref(published++), old: '0'.repeat(40), new: '1'.repeat(40) });
        }
        await new Promise((resolve) => setImmediate(resolve));
        expect(hub.stats().maxQueuedBytes).toBeLessThanOrEqual(BOUND);
      }
      expect(hub.stats().resets).toBeGreaterThanOrEqual(READERS + IDLE);
      // ... and one real push
      await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'two']);
      await sandbox.git([
        '-C',
        work,
        'push',
        '--quiet',
        `http://u:${TOKEN}@${server.host}:${server.port}/r.git`,
        'HEAD:main',
      ]);
      const pushed = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
      const lastSeq = firstSeq + published;
      for (const reader of readers) {
        await reader.waitFor((f) => f.event === 'ref-update' && JSON.parse(f.data!).new === pushed);
      }
      expect(hub.lastId).toBe(`${hub.epoch}-${lastSeq}`);

      const stats = hub.stats();
      expect(stats.maxQueuedBytes).toBeLessThanOrEqual(BOUND);
      expect(stats.queuedBytes).toBeLessThanOrEqual(stats.subscribers * BOUND);
      // every reader is still there, with every event or a reset
      for (const reader of readers) {
        expect(reader.frames.some((f) => f.event === 'reset')).toBe(true);
        everyEventOrReset(reader.frames, firstSeq, lastSeq, hub.epoch);
      }
      expect(hub.size).toBeGreaterThanOrEqual(READERS);
      // a loose sanity check on the process: far below what unbounded queues took
      expect(process.memoryUsage().rss - rss).toBeLessThan(1 << 30);
    } finally {
      for (const connection of connections) connection.close();
    }
  }, 180_000);

  it('caps SSE connections through `gitport serve --max-sse-connections`', async () => {
    await using sandbox = await createGitSandbox();
    const server = await startServe([
      '--root',
      sandbox.path('root'),
      '--port',
      '0',
      '--workers',
      '1',
      '--max-sse-connections',
      '2',
    ]);
    try {
      const open = [await connectSse(server, '/demo.git/events'), await connectSse(server, '/events')];
      const refused = await rawRequest(server, 'GET', '/demo.git/events');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBeDefined();
      expect(text(refused.body)).toMatch(/too many event subscribers/);
      open[0]!.close();
      await vi.waitFor(async () => expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200));
      const again = await connectSse(server, '/demo.git/events');
      expect(again.status).toBe(200);
      again.close();
      open[1]!.close();
    } finally {
      server.child.kill('SIGTERM');
      await server.exit;
    }
  }, 60_000);
});
