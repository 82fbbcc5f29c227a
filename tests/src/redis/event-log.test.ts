/**
 * The Redis event log against a real redis-server, in process: replay past the cap and a
 * malformed `Last-Event-ID` get `event: reset`, a replay within the cap gets exactly the events.
 */
import { SseHub, type SseSink } from '@gitport/gateway';
import { RedisEventLog } from '@gitport/gateway/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from './redis-server.js';

const ZERO = '0'.repeat(40);
const ONE = '1'.repeat(40);

function collect(): { sink: SseSink; text: () => string } {
  const chunks: string[] = [];
  const decoder = new TextDecoder();
  const write = (bytes: Uint8Array) => {
    chunks.push(decoder.decode(bytes));
    return true;
  };
  return { sink: { write, close() {} }, text: () => chunks.join('') };
}

describe('RedisEventLog', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('replays within the cap, resets past it and for an id that is not a stream id', async () => {
    const hub = new SseHub({ heartbeatMs: 0 });
    const log = new RedisEventLog(redis.url, { replayCap: 4, prefix: 'caps' }).attach(hub);
    hub.replayFrom = log;
    await log.ready();
    const live = collect();
    hub.subscribe(live.sink, { repos: ['r'] });
    for (let i = 0; i < 3; i++) log.publish({ repo: 'r', ref: `refs/heads/b${i}`, old: ZERO, new: ONE });
    while ((live.text().match(/event: ref-update/g) ?? []).length < 3) await new Promise((r) => setImmediate(r));
    const ids = [...live.text().matchAll(/^id: (\S+)\nevent: ref-update/gm)].map((m) => m[1]!);
    expect(ids).toHaveLength(3);

    const back = collect();
    hub.subscribe(back.sink, { repos: ['r'], lastEventId: ids[0]! });
    while (!back.text().includes('refs/heads/b2')) await new Promise((r) => setImmediate(r));
    expect([...back.text().matchAll(/^id: (\S+)\nevent: ref-update/gm)].map((m) => m[1])).toEqual(ids.slice(1));

    const bad = collect();
    hub.subscribe(bad.sink, { repos: ['r'], lastEventId: 'not-an-id' });
    while (!bad.text().includes('event: reset')) await new Promise((r) => setImmediate(r));
    expect(bad.text()).toContain('"reason":"epoch"');

    // many more than the cap: the stream is trimmed (MAXLEN ~ keeps whole nodes, so push well past it)
    for (let i = 0; i < 500; i++) log.publish({ repo: 'r', ref: `refs/heads/c${i}`, old: ZERO, new: ONE });
    while (!live.text().includes('refs/heads/c499')) await new Promise((r) => setImmediate(r));
    const far = collect();
    hub.subscribe(far.sink, { repos: ['r'], lastEventId: ids[0]! });
    while (!far.text().includes('event: reset')) await new Promise((r) => setImmediate(r));
    expect(far.text()).toContain('"reason":"cap"');
    expect(far.text()).not.toContain('event: ref-update');
    await log.close();
    hub.close();
  });

  it('serves clients coming back at once with one id from one replay, each exactly its events', async () => {
    const hub = new SseHub({ heartbeatMs: 0 });
    const log = new RedisEventLog(redis.url, { prefix: 'storm' }).attach(hub);
    hub.replayFrom = log;
    await log.ready();
    const live = collect();
    hub.subscribe(live.sink, { repos: ['r'] });
    for (let i = 0; i < 4; i++) log.publish({ repo: 'r', ref: `refs/heads/s${i}`, old: ZERO, new: ONE });
    while (!live.text().includes('refs/heads/s3')) await new Promise((r) => setImmediate(r));
    const ids = [...live.text().matchAll(/^id: (\S+)\nevent: ref-update/gm)].map((m) => m[1]!);
    const calls = async () => {
      const stats = await redis.cli(['INFO', 'commandstats']);
      return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const before = await calls();
    const storm = Array.from({ length: 50 }, () => collect());
    for (const client of storm) hub.subscribe(client.sink, { repos: ['r'], lastEventId: ids[0]! });
    // one with other repositories gets a replay of its own
    const other = collect();
    hub.subscribe(other.sink, { repos: ['r', 'q'], lastEventId: ids[0]! });
    for (const client of [...storm, other]) {
      while (!client.text().includes('refs/heads/s3')) await new Promise((r) => setImmediate(r));
      expect([...client.text().matchAll(/^id: (\S+)\nevent: ref-update/gm)].map((m) => m[1])).toEqual(ids.slice(1));
    }
    // the storm's replay read one stream; the other client's read two
    expect((await calls()) - before).toBe(3);
    await log.close();
    hub.close();
  });
});
