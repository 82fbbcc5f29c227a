/**
 * Three `gitport serve` processes on one root and one real Redis behave as one server: to git
 * (a push through one is advertised by all, concurrent pushes of one ref have one winner, an
 * event of another instance drops an instance's cached advertisement) and to event-stream
 * clients (events of every instance, `Last-Event-ID` honoured by any instance, a reset when Redis
 * comes back after going away).
 */
import { readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SseHub } from '@gitport/gateway';
import { createDemoRepository, RedisEventLog } from '@gitport/gateway/node';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { health, type ServeProcess, startServe, untilHealth, untilHealthy } from '../gateway/serve-process.js';
import { connectSse, type SseConnection, type SseFrame } from '../gateway/sse-client.js';
import { type RedisServer, startRedis } from './redis-server.js';

const TOKEN = 't0k';
const STREAM_ID = /^\d+-\d+$/;

interface RefData {
  repo: string;
  ref: string;
  old: string;
  new: string;
}

const data = (frame: SseFrame): RefData => JSON.parse(frame.data!) as RefData;
const updates = (connection: SseConnection): SseFrame[] => connection.frames.filter((f) => f.event === 'ref-update');

describe('gitport serve --redis: three instances, one root, one Redis', () => {
  let sandbox: GitSandbox;
  let redis: RedisServer;
  let root: string;
  let work: string;
  const instances: ServeProcess[] = [];
  const open: SseConnection[] = [];
  let sequence = 0;

  const remote = (server: ServeProcess, repo = 'demo') => `http://u:${TOKEN}@${server.host}:${server.port}/${repo}.git`;

  /** A new commit on top of `parent` (HEAD of the work clone by default), without moving HEAD. */
  const commit = async (parent?: string): Promise<string> => {
    const base = parent ?? (await sandbox.git(['-C', work, 'rev-parse', 'HEAD']));
    return sandbox.git(['-C', work, 'commit-tree', `${base}^{tree}`, '-p', base, '-m', `change ${++sequence}`]);
  };

  const push = (server: ServeProcess, refspec: string, repo = 'demo') =>
    sandbox.run(['-C', work, 'push', '--quiet', remote(server, repo), refspec], { allowFailure: true });

  const subscribe = async (server: ServeProcess, path: string, headers: Record<string, string> = {}) => {
    const connection = await connectSse(server, path, headers);
    open.push(connection);
    expect(connection.status).toBe(200);
    // the preamble: from here on the instance delivers every event to this connection
    await connection.waitFor((f) => f.comment === true);
    return connection;
  };

  /** The ref's value in the v0 advertisement (the one an instance caches), after checking v2 agrees. */
  const advertised = async (server: ServeProcess, ref: string): Promise<string> => {
    const v0 = (await sandbox.git(['-c', 'protocol.version=0', 'ls-remote', remote(server), ref])).split('\t')[0];
    const v2 = (await sandbox.git(['-c', 'protocol.version=2', 'ls-remote', remote(server), ref])).split('\t')[0];
    expect(v2).toBe(v0);
    return v0 ?? '';
  };

  const advertisedV0 = async (server: ServeProcess, ref: string): Promise<string> =>
    (await sandbox.git(['-c', 'protocol.version=0', 'ls-remote', remote(server), ref])).split('\t')[0] ?? '';

  /** Dates HEAD, packed-refs and every directory under refs/ an hour back (their ctime moves to now). */
  const backdateRefs = async (gitDir: string) => {
    const past = Date.now() / 1000 - 3600;
    const all = [join(gitDir, 'HEAD'), join(gitDir, 'packed-refs')];
    const walk = async (dir: string): Promise<void> => {
      all.push(dir);
      for (const e of await readdir(dir, { withFileTypes: true })) if (e.isDirectory()) await walk(join(dir, e.name));
    };
    await walk(join(gitDir, 'refs'));
    for (const path of all) await utimes(path, past, past).catch(() => {});
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox('gitport-redis-');
    redis = await startRedis();
    root = sandbox.path('root');
    await createDemoRepository(root, 'demo');
    await sandbox.git(['init', '--quiet', '--bare', join(root, 'other.git')]);
    const args = ['--root', root, '--port', '0', '--workers', '1', '--token', TOKEN, '--redis', redis.url];
    instances.push(...(await Promise.all([startServe(args), startServe(args), startServe(args)])));
    work = sandbox.path('work');
    await sandbox.git(['clone', '--quiet', remote(instances[0]!), work]);
  });

  afterAll(async () => {
    for (const connection of open) connection.close();
    for (const server of instances) server.child.kill('SIGTERM');
    const codes = await Promise.all(instances.map((server) => server.exit));
    await redis?.stop();
    await sandbox?.cleanup();
    expect(codes).toEqual(instances.map(() => 0));
  });

  it('reports ok on /healthz once connected to Redis', async () => {
    for (const server of instances) expect(await health(server)).toEqual({ status: 200, body: 'ok' });
  });

  it('delivers a push through A to the subscribers of B and C, under one stream id', async () => {
    const [a, b, c] = instances as [ServeProcess, ServeProcess, ServeProcess];
    const onB = await subscribe(b, '/demo.git/events');
    const onC = await subscribe(c, '/events');
    const tip = await commit();
    expect((await push(a, `${tip}:refs/heads/main`)).code).toBe(0);
    const seenB = await onB.waitFor((f) => f.event === 'ref-update');
    const seenC = await onC.waitFor((f) => f.event === 'ref-update');
    expect(data(seenB)).toMatchObject({ repo: 'demo', ref: 'refs/heads/main', new: tip });
    expect(seenC).toEqual(seenB);
    expect(seenB.id).toMatch(STREAM_ID);
    await sandbox.git(['-C', work, 'reset', '--quiet', '--hard', tip]);
    // the advertisement of every instance shows the new tip, including ones that had it cached
    for (const server of instances) expect(await advertised(server, 'refs/heads/main')).toBe(tip);
  });

  it("drops an instance's cached advertisement on another instance's event the disk check misses", async () => {
    const [a, b] = instances as [ServeProcess, ServeProcess, ServeProcess];
    const onB = await subscribe(b, '/demo.git/events');
    const ref = 'refs/heads/cached';
    const first = await commit();
    const second = await commit(first);
    expect((await push(a, `${second}:${ref}`)).code).toBe(0);
    await onB.waitFor((f) => f.event === 'ref-update' && data(f).ref === ref);
    // refs whose files look long settled: B trusts its cached advertisement while they stay unchanged
    const gitDir = join(root, 'demo.git');
    await backdateRefs(gitDir);
    expect(await advertisedV0(b, ref)).toBe(second);
    // the ref's file rewritten in place leaves every time B checks as it was (as a lagging NFS
    // attribute cache would): B's cached advertisement still shows the old tip
    await writeFile(join(gitDir, ref), `${first}\n`);
    expect(await advertisedV0(b, ref)).toBe(second);
    // the event of the gateway that made the change, through Redis, drops B's cached advertisement
    const hub = new SseHub({ heartbeatMs: 0 });
    const writer = new RedisEventLog(redis.url).attach(hub);
    try {
      await writer.ready();
      writer.publish({ repo: 'demo', ref, old: second, new: first });
      await onB.waitFor((f) => f.event === 'ref-update' && data(f).ref === ref && data(f).new === first);
      expect(await advertisedV0(b, ref)).toBe(first);
    } finally {
      await writer.close();
      hub.close();
    }
  });

  it('replays exactly the missed events to a subscriber that moves from B to C with Last-Event-ID', async () => {
    const [a, b, c] = instances as [ServeProcess, ServeProcess, ServeProcess];
    const path = '/events?repo=demo&repo=other';
    const onB = await subscribe(b, path);
    const first = await commit();
    expect((await push(a, `${first}:refs/heads/moving-1`)).code).toBe(0);
    const seen = await onB.waitFor((f) => f.event === 'ref-update' && data(f).ref === 'refs/heads/moving-1');
    onB.close();

    // missed while away: pushes through every instance, to both repositories
    const missed: string[] = [];
    for (const [i, server] of [a, b, c, a].entries()) {
      const repo = i % 2 === 0 ? 'other' : 'demo';
      const ref = `refs/heads/missed-${i}`;
      expect((await push(server, `${await commit()}:${ref}`, repo)).code).toBe(0);
      missed.push(`${repo}:${ref}`);
    }
    const onC = await subscribe(c, path, { 'last-event-id': seen.id! });
    const live = await commit();
    expect((await push(b, `${live}:refs/heads/after-return`)).code).toBe(0);
    await onC.waitFor((f) => f.event === 'ref-update' && data(f).ref === 'refs/heads/after-return');
    const got = updates(onC).map((f) => `${data(f).repo}:${data(f).ref}`);
    expect(got).toEqual([...missed, 'demo:refs/heads/after-return']);
    expect(onC.frames.some((f) => f.event === 'reset')).toBe(false);
    const ids = updates(onC).map((f) => f.id!);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('has exactly one winner among 20 concurrent pushes of one ref through three instances', async () => {
    const watcher = await subscribe(instances[1]!, '/demo.git/events');
    for (let round = 0; round < 2; round++) {
      const base = await advertised(instances[0]!, 'refs/heads/main');
      // every instance has the current advertisement cached before the race
      for (const server of instances) expect(await advertised(server, 'refs/heads/main')).toBe(base);
      const candidates = await Promise.all(Array.from({ length: 20 }, () => commit(base)));
      const results = await Promise.all(
        candidates.map((candidate, i) => push(instances[i % 3]!, `${candidate}:refs/heads/main`)),
      );
      const winners = candidates.filter((_, i) => results[i]!.code === 0);
      expect(winners).toHaveLength(1);
      for (const server of instances) expect(await advertised(server, 'refs/heads/main')).toBe(winners[0]);
      // one event for the winner: a marker pushed after the race arrives after every event of it
      const marker = `refs/heads/race-${round}`;
      expect((await push(instances[2]!, `${winners[0]}:${marker}`)).code).toBe(0);
      await watcher.waitFor((f) => f.event === 'ref-update' && data(f).ref === marker);
      const moved = updates(watcher).filter((f) => data(f).ref === 'refs/heads/main' && data(f).old === base);
      expect(moved.map((f) => data(f).new)).toEqual([winners[0]]);
    }
    await sandbox.git(['--git-dir', join(root, 'demo.git'), 'fsck', '--strict', '--no-progress']);
  });

  it('keeps serving when Redis is killed and restarted: no push lost, reset, healthz degraded then ok', async () => {
    const [a, b, c] = instances as [ServeProcess, ServeProcess, ServeProcess];
    const subscribers = await Promise.all(instances.map((server) => subscribe(server, '/demo.git/events')));
    const before = await commit();
    expect((await push(a, `${before}:refs/heads/pre-outage`)).code).toBe(0);
    const lastSeen = await subscribers[1]!.waitFor(
      (f) => f.event === 'ref-update' && data(f).ref === 'refs/heads/pre-outage',
    );
    const during = Array.from({ length: 7 }, (_, i) => `refs/heads/outage-${i}`);
    // pushes in flight while Redis dies
    const inFlight = Promise.all(during.slice(0, 3).map((ref, i) => push(instances[i]!, `${before}:${ref}`)));
    await redis.kill();
    for (const result of await inFlight) expect(result.code).toBe(0);
    for (const server of instances) {
      const state = await untilHealth(server, (reply) => reply.body !== 'ok');
      expect(state.status).toBe(200);
      expect(state.body).toMatch(/^degraded: redis unreachable/);
    }
    // subscriptions while Redis is away: one coming back with Last-Event-ID, one new
    const comingBack = await subscribe(c, '/demo.git/events', { 'last-event-id': lastSeen.id! });
    const arriving = await subscribe(b, '/demo.git/events');
    // pushes while Redis is away
    for (const [i, ref] of during.slice(3, 6).entries()) {
      expect((await push(instances[i]!, `${before}:${ref}`)).code).toBe(0);
    }
    // and one while it starts again
    const [, whileRestarting] = await Promise.all([redis.restart(), push(b, `${before}:${during[6]}`)]);
    expect(whileRestarting.code).toBe(0);
    for (const server of instances) await untilHealthy(server);
    const listening = [...subscribers, comingBack, arriving];
    const resets = await Promise.all(listening.map((s) => s.waitFor((f) => f.event === 'reset')));
    for (const reset of resets) {
      expect(reset.id).toMatch(STREAM_ID);
      expect(JSON.parse(reset.data!)).toEqual({ reason: 'log' });
    }
    // the client that came back was not replayed a partial history: a reset before any event
    const kinds = comingBack.frames.filter((f) => f.event !== undefined).map((f) => f.event);
    expect(kinds[0]).toBe('reset');
    // every push landed, and every instance advertises it (v0 from its cache, v2 from the disk)
    for (const server of instances) {
      for (const version of ['0', '2']) {
        const refs = await sandbox.git([
          '-c',
          `protocol.version=${version}`,
          'ls-remote',
          remote(server),
          'refs/heads/outage-*',
        ]);
        for (const ref of during) expect(refs).toContain(`${before}\t${ref}`);
      }
    }
    // the events of the pushes made while Redis was away are appended once it is back
    let stream = await redis.cli(['XRANGE', 'gitport:{events}:all', '-', '+']);
    while (!during.slice(3, 6).every((ref) => stream.includes(ref))) {
      stream = await redis.cli(['XRANGE', 'gitport:{events}:all', '-', '+']);
    }
    // and live events flow to every instance again
    const after = await commit();
    expect((await push(instances[0]!, `${after}:refs/heads/after-outage`)).code).toBe(0);
    for (const s of listening) {
      await s.waitFor((f) => f.event === 'ref-update' && data(f).ref === 'refs/heads/after-outage');
    }
    for (const server of instances) expect(server.child.exitCode).toBe(null);
  });
});
