/**
 * `gitport serve --replay-cap N`: a client that reconnects with `Last-Event-ID` is replayed up to
 * N missed events and gets `event: reset` past them, from Redis across instances (`--redis`) and
 * from the ring in memory of one instance without it.
 */
import { createDemoRepository } from '@gitport/gateway/node';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServe, untilHealthy } from '../gateway/serve-process.js';
import { connectSse, type SseConnection, type SseFrame } from '../gateway/sse-client.js';
import { type RedisServer, startRedis } from './redis-server.js';

const TOKEN = 't0k';
const CAP = 4;

const refOf = (frame: SseFrame): string => (JSON.parse(frame.data!) as { ref: string }).ref;

describe('gitport serve --replay-cap', () => {
  let sandbox: GitSandbox;
  let redis: RedisServer;
  let work: string;
  let tip: string;
  const instances: ServeProcess[] = [];
  const open: SseConnection[] = [];

  const remote = (server: ServeProcess) => `http://u:${TOKEN}@${server.host}:${server.port}/demo.git`;

  const subscribe = async (server: ServeProcess, lastEventId?: string) => {
    const headers: Record<string, string> = lastEventId === undefined ? {} : { 'last-event-id': lastEventId };
    const connection = await connectSse(server, '/demo.git/events', headers);
    open.push(connection);
    expect(connection.status).toBe(200);
    await connection.waitFor((f) => f.comment === true);
    return connection;
  };

  /** Pushes `refs/heads/<prefix>-<i>` for each i < count in one push: one event per ref. */
  const pushRefs = async (server: ServeProcess, prefix: string, count: number) => {
    const specs = Array.from({ length: count }, (_, i) => `${tip}:refs/heads/${prefix}-${i}`);
    await sandbox.git(['-C', work, 'push', '--quiet', remote(server), ...specs]);
    return specs.map((_, i) => `refs/heads/${prefix}-${i}`);
  };

  const seen = (connection: SseConnection, ref: string) =>
    connection.waitFor((f) => f.event === 'ref-update' && refOf(f) === ref);

  /** Through `a` and `b` (one instance or two): replayed within the cap, reset past it. */
  const checkCap = async (a: ServeProcess, b: ServeProcess, name: string) => {
    const watcher = await subscribe(a);
    const [start] = await pushRefs(a, `${name}-start`, 1);
    const from = (await seen(watcher, start!)).id!;

    // exactly the cap missed: all of it is replayed, by the other instance
    const within = await pushRefs(a, `${name}-within`, CAP);
    await seen(watcher, within.at(-1)!);
    const back = await subscribe(b, from);
    await seen(back, within.at(-1)!);
    expect(back.frames.filter((f) => f.event === 'ref-update').map(refOf)).toEqual(within);
    expect(back.frames.some((f) => f.event === 'reset')).toBe(false);

    // one more than the cap missed since the last id seen: reset, no partial replay
    const lastWithin = back.frames.filter((f) => f.event === 'ref-update').at(-1)!.id!;
    const past = await pushRefs(a, `${name}-past`, CAP + 1);
    await seen(watcher, past.at(-1)!);
    for (const [i, id] of [lastWithin, from].entries()) {
      const late = await subscribe(b, id);
      const reset = await late.waitFor((f) => f.event === 'reset');
      expect(JSON.parse(reset.data!)).toEqual({ reason: 'cap' });
      expect(late.frames.some((f) => f.event === 'ref-update')).toBe(false);
      // and it goes on live from there
      const [next] = await pushRefs(a, `${name}-next-${i}`, 1);
      await seen(late, next!);
      await seen(watcher, next!);
    }
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox('gitport-replay-cap-');
    redis = await startRedis();
    const shared = sandbox.path('shared');
    const alone = sandbox.path('alone');
    await createDemoRepository(shared, 'demo');
    await createDemoRepository(alone, 'demo');
    const common = ['--port', '0', '--workers', '1', '--token', TOKEN, '--replay-cap', String(CAP)];
    instances.push(
      ...(await Promise.all([
        startServe(['--root', shared, '--redis', redis.url, ...common]),
        startServe(['--root', shared, '--redis', redis.url, ...common]),
        startServe(['--root', alone, ...common]),
      ])),
    );
    // an instance that did not reach Redis within its startup wait (a busy machine) listens
    // degraded, and its subscribers get a reset once it connects: the replay is checked once both
    // instances are on Redis
    for (const server of instances.slice(0, 2)) await untilHealthy(server);
    work = sandbox.path('work');
    await sandbox.git(['clone', '--quiet', remote(instances[0]!), work]);
    tip = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
  });

  afterAll(async () => {
    for (const connection of open) connection.close();
    for (const server of instances) server.child.kill('SIGTERM');
    const codes = await Promise.all(instances.map((server) => server.exit));
    await redis?.stop();
    await sandbox?.cleanup();
    expect(codes).toEqual(instances.map(() => 0));
  });

  it('replays up to the cap from Redis through another instance, resets past it', async () => {
    await checkCap(instances[0]!, instances[1]!, 'redis');
  });

  it('replays up to the cap from memory without Redis, resets past it', async () => {
    await checkCap(instances[2]!, instances[2]!, 'memory');
  });
});
