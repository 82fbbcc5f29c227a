/**
 * SSE ref events end to end: real git pushes through the gateway, subscribers over real HTTP
 * connections.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startServer, type TestServer } from './server.js';
import { connectSse, type SseConnection } from './sse-client.js';

const TOKEN = 'tok';

describe.each(backends)('SSE ref events over HTTP, %s backend', (backend) => {
  let sandbox: GitSandbox;
  let server: TestServer;
  let work: string;
  let counter = 0;
  const open: SseConnection[] = [];

  const push = async (ref = 'main') => {
    counter++;
    await writeFile(join(work, `f${counter}.txt`), `${counter}\n`);
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', `c${counter}`]);
    await sandbox.git([
      '-C',
      work,
      'push',
      '--quiet',
      `http://u:${TOKEN}@${server.host}:${server.port}/a.git`,
      `HEAD:refs/heads/${ref}`,
    ]);
    return sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
  };
  const subscribe = async (path: string, headers?: Record<string, string>) => {
    const c = await connectSse(server, path, headers);
    open.push(c);
    await c.waitFor((f) => f.comment === true);
    return c;
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    server = await startServer({
      root: sandbox.path('root'),
      backend,
      token: TOKEN,
      sse: { replayCap: 5, heartbeatMs: 50 },
    });
    for (const name of ['a', 'b']) await sandbox.git(['init', '--quiet', '--bare', join(server.root, `${name}.git`)]);
    work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
  });

  afterAll(async () => {
    for (const c of open) c.close();
    await server?.close();
    await sandbox?.cleanup();
  });

  it('answers with anti-buffering headers and a subscriber sees the ref-update of a push', async () => {
    const repoStream = await subscribe('/a.git/events');
    const allStream = await subscribe('/events');
    const otherStream = await subscribe('/b.git/events');
    expect(repoStream.status).toBe(200);
    expect(repoStream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(repoStream.headers['cache-control']).toMatch(/no-cache/);
    expect(repoStream.headers['x-accel-buffering']).toBe('no');
    const oid = await push();
    for (const c of [repoStream, allStream]) {
      const frame = await c.waitFor((f) => f.event === 'ref-update');
      expect(JSON.parse(frame.data!)).toEqual({ repo: 'a', ref: 'refs/heads/main', old: '0'.repeat(40), new: oid });
      expect(frame.id).toMatch(new RegExp(`^${server.gateway.hub.epoch}-\\d+$`));
    }
    expect(otherStream.frames.some((f) => f.event === 'ref-update')).toBe(false);
  });

  it('replays exactly the missed events with Last-Event-ID', async () => {
    const c = await subscribe('/a.git/events');
    const old = await push();
    const seen = await c.waitFor((f) => f.event === 'ref-update' && JSON.parse(f.data!).new === old);
    c.close();
    const missed = [await push(), await push('side')];
    const back = await subscribe('/a.git/events', { 'last-event-id': seen.id! });
    const replayed = back.frames.filter((f) => f.event === 'ref-update').map((f) => JSON.parse(f.data!).new);
    expect(replayed).toEqual(missed);
    // the query parameter works too (EventSource cannot set headers on the first request)
    const viaQuery = await subscribe(`/a.git/events?lastEventId=${encodeURIComponent(seen.id!)}`);
    expect(viaQuery.frames.filter((f) => f.event === 'ref-update').map((f) => JSON.parse(f.data!).new)).toEqual(missed);
  });

  it('sends reset past the replay cap and for an id of another epoch', async () => {
    const first = await subscribe('/a.git/events');
    await push();
    const seen = await first.waitFor((f) => f.event === 'ref-update');
    for (let i = 0; i < 6; i++) await push();
    const late = await subscribe('/a.git/events', { 'last-event-id': seen.id! });
    expect(late.frames.filter((f) => f.event !== undefined).map((f) => f.event)).toEqual(['reset']);
    const foreign = await subscribe('/a.git/events', { 'last-event-id': 'zzzz-1' });
    expect(foreign.frames.filter((f) => f.event !== undefined).map((f) => f.event)).toEqual(['reset']);
  });

  it('sends heartbeats', async () => {
    const c = await subscribe('/events');
    const before = c.frames.length;
    await c.waitFor((f, all) => f.comment === true && all.length > before);
  });

  it('cleans up subscriptions when clients leave', async () => {
    for (const c of open.splice(0)) c.close();
    const hub = server.gateway.hub;
    const extra = await Promise.all(Array.from({ length: 20 }, () => subscribe('/a.git/events')));
    expect(hub.size).toBeGreaterThanOrEqual(20);
    for (const c of extra) c.close();
    // the server notices each close; wait for it by polling the count (arrival, not timing)
    while (hub.size > 0) await new Promise((r) => setTimeout(r, 10));
    expect(hub.size).toBe(0);
  });

  it('404s unknown repositories and bad names', async () => {
    for (const path of ['/nope.git/events', '/events?repo=nope', '/events?repo=..%2Fa']) {
      const c = await connectSse(server, path);
      expect(c.status, path).toBe(404);
      c.close();
    }
  });
});

describe('SSE with private reads', () => {
  it('accepts the token as a query parameter or cookie, and 404s without it', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), token: 'secret', private: true });
    await sandbox.git(['init', '--quiet', '--bare', join(server.root, 'p.git')]);
    const denied = await connectSse(server, '/p.git/events');
    expect(denied.status).toBe(404);
    denied.close();
    for (const [path, headers] of [
      ['/p.git/events?token=secret', {}],
      ['/p.git/events', { cookie: 'theme=dark; gitport_token=secret' }],
      ['/events?token=secret', {}],
      ['/p.git/events', { authorization: 'Bearer secret' }],
    ] as const) {
      const c = await connectSse(server, path, headers);
      expect(c.status, path).toBe(200);
      c.close();
    }
  });
});

describe('SSE subscriber limit', () => {
  it('answers 503 past maxSubscribers and takes new subscribers once one leaves', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), sse: { maxSubscribers: 2 } });
    await sandbox.git(['init', '--quiet', '--bare', join(server.root, 'a.git')]);
    const first = await connectSse(server, '/a.git/events');
    const second = await connectSse(server, '/events');
    const third = await connectSse(server, '/a.git/events');
    expect([first.status, second.status, third.status]).toEqual([200, 200, 503]);
    third.close();
    first.close();
    while (server.gateway.hub.size > 1) await new Promise((r) => setTimeout(r, 10));
    const fourth = await connectSse(server, '/a.git/events');
    expect(fourth.status).toBe(200);
    fourth.close();
    second.close();
  });
});
