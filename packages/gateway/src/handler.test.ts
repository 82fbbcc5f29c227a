/**
 * The fetch handler through WHATWG Request/Response (the runtime-neutral path), over a real
 * backend on a temporary root: routing, auth, CORS, discovery bytes, probe, gzip and SSE.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from './handler.js';
import { createDemoRepository } from './node/demo-repository.js';
import { createGitProcessBackend } from './node/git-process-backend.js';
import { presentedToken } from './routes/auth.js';

const TOKEN = 'unit-token';
let root: string;
let open: Gateway;
let closed: Gateway;

/** Moves the refs' file times into the past, as if the repository had not changed for a while. */
async function backdateRefs(gitDir: string): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  const touch = (path: string) => utimes(path, past, past).catch(() => {});
  await touch(join(gitDir, 'HEAD'));
  await touch(join(gitDir, 'packed-refs'));
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) if (e.isDirectory()) await walk(join(dir, e.name));
    await touch(dir);
  };
  await walk(join(gitDir, 'refs'));
}

const req = (path: string, init: RequestInit = {}) => new Request(`http://gateway.test${path}`, init);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gitport-handler-'));
  await createDemoRepository(root);
  open = createGateway({
    backend: createGitProcessBackend({ root, revalidateMs: 0 }),
    token: TOKEN,
    cors: ['https://app.example'],
    sse: { heartbeatMs: 0, epoch: 'unit' },
  });
  closed = createGateway({ backend: createGitProcessBackend({ root, revalidateMs: 0 }), token: TOKEN, private: true });
});

afterAll(async () => {
  await open.close();
  await closed.close();
  await rm(root, { recursive: true, force: true });
});

describe('fetch handler', () => {
  it('answers v0 discovery with the service header, v2 without, and matching real git', async () => {
    const v0 = await open.fetch(req('/demo.git/info/refs?service=git-upload-pack'));
    expect(v0.status).toBe(200);
    expect(v0.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(v0.headers.get('cache-control')).toMatch(/no-cache/);
    const body = new TextDecoder().decode(await v0.arrayBuffer());
    expect(body.startsWith('001e# service=git-upload-pack\n0000')).toBe(true);
    const expected = execFileSync('git', [
      'upload-pack',
      '--stateless-rpc',
      '--advertise-refs',
      join(root, 'demo.git'),
    ]);
    expect(body.slice(34)).toBe(expected.toString('latin1'));
    const v2 = await open.fetch(
      req('/demo.git/info/refs?service=git-upload-pack', { headers: { 'git-protocol': 'version=2' } }),
    );
    expect(new TextDecoder().decode(await v2.arrayBuffer())).toMatch(/^000eversion 2\n/);
  });

  it('routes: 404 unknown, 405 wrong method, 403 dumb discovery, 200 probe, 415 wrong type', async () => {
    expect((await open.fetch(req('/nope.git/info/refs?service=git-upload-pack'))).status).toBe(404);
    expect((await open.fetch(req('/demo.git/HEAD'))).status).toBe(404);
    expect((await open.fetch(req('/'))).status).toBe(404);
    expect((await open.fetch(req('/demo.git/git-upload-pack'))).status).toBe(405);
    expect((await open.fetch(req('/demo.git/info/refs', { method: 'POST', body: 'x' }))).status).toBe(405);
    expect((await open.fetch(req('/demo.git/info/refs'))).status).toBe(403);
    const probe = await open.fetch(
      req('/demo.git/git-upload-pack', {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        body: '0000',
      }),
    );
    expect(probe.status).toBe(200);
    expect(probe.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
    const wrong = await open.fetch(
      req('/demo.git/git-upload-pack', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '0000' }),
    );
    expect(wrong.status).toBe(415);
    expect((await open.fetch(req('/healthz'))).status).toBe(200);
  });

  it('serves a gzip upload-pack request as git does', async () => {
    const head = execFileSync('git', ['--git-dir', join(root, 'demo.git'), 'rev-parse', 'HEAD'])
      .toString()
      .trim();
    const wants = `0032want ${head}\n00000009done\n`;
    const gz = new Uint8Array(
      await new Response(new Blob([wants]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer(),
    );
    const res = await open.fetch(
      req('/demo.git/git-upload-pack', {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
        body: gz,
      }),
    );
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(new TextDecoder().decode(bytes.subarray(0, 8))).toBe('0008NAK\n');
    expect(new TextDecoder().decode(bytes.subarray(8, 12 + 4))).toContain('PACK');
  });

  it('challenges pushes with 401 Basic and accepts Bearer or the Basic password', async () => {
    const none = await open.fetch(req('/demo.git/info/refs?service=git-receive-pack'));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="gitport", charset="UTF-8"');
    for (const authorization of [`Bearer ${TOKEN}`, `Basic ${btoa(`x:${TOKEN}`)}`, `basic ${btoa(`${TOKEN}:`)}`]) {
      const ok = await open.fetch(req('/demo.git/info/refs?service=git-receive-pack', { headers: { authorization } }));
      expect(ok.status, authorization).toBe(200);
    }
    for (const authorization of ['Bearer nope', `Basic ${btoa('x:nope')}`, 'Basic !!!', 'Token x', 'Bearer']) {
      const bad = await open.fetch(req('/demo.git/info/refs?service=git-receive-pack', { headers: { authorization } }));
      expect(bad.status, authorization).toBe(401);
    }
    expect(presentedToken(`Basic ${btoa('user:pa:ss')}`)).toBe('pa:ss');
  });

  it('refuses pushes without a configured token unless anonymous pushes are allowed', async () => {
    const noToken = createGateway({ backend: createGitProcessBackend({ root }) });
    expect((await noToken.fetch(req('/demo.git/info/refs?service=git-receive-pack'))).status).toBe(403);
    await noToken.close();
    const anonymous = createGateway({ backend: createGitProcessBackend({ root }), allowAnonymousPush: true });
    expect((await anonymous.fetch(req('/demo.git/info/refs?service=git-receive-pack'))).status).toBe(200);
    await anonymous.close();
    expect(() => createGateway({ backend: createGitProcessBackend({ root }), private: true })).toThrowError(
      expect.objectContaining({ code: 'GATEWAY_BAD_ARGUMENT' }),
    );
  });

  it('hides private repositories (404) from clients without the token', async () => {
    for (const path of [
      '/demo.git/info/refs?service=git-upload-pack',
      '/demo.git/events',
      '/events',
      '/nope.git/info/refs?service=git-upload-pack',
    ]) {
      expect((await closed.fetch(req(path))).status, path).toBe(404);
    }
    const ok = await closed.fetch(
      req('/demo.git/info/refs?service=git-upload-pack', { headers: { authorization: `Bearer ${TOKEN}` } }),
    );
    expect(ok.status).toBe(200);
    // the query token is for EventSource only, not for git routes
    expect((await closed.fetch(req(`/demo.git/info/refs?service=git-upload-pack&token=${TOKEN}`))).status).toBe(404);
    expect((await closed.fetch(req('/healthz'))).status).toBe(200);
  });

  it('answers CORS preflights for allowed origins only, and tags responses', async () => {
    const preflight = await open.fetch(
      req('/demo.git/git-upload-pack', {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-headers': 'content-type,git-protocol,authorization',
        },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    for (const h of ['content-type', 'git-protocol', 'authorization']) {
      expect(preflight.headers.get('access-control-allow-headers')).toContain(h);
    }
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const other = await open.fetch(
      req('/demo.git/git-upload-pack', { method: 'OPTIONS', headers: { origin: 'https://evil.example' } }),
    );
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const get = await open.fetch(
      req('/demo.git/info/refs?service=git-upload-pack', { headers: { origin: 'https://app.example' } }),
    );
    expect(get.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(get.headers.get('vary')).toBe('Origin');
  });

  it('answers cached discovery synchronously with shared replies that CORS and HEAD never alter', async () => {
    const cached = createGateway({
      backend: createGitProcessBackend({ root, revalidateMs: 60_000 }),
      cors: ['https://app.example'],
    });
    try {
      // the refs were written a moment ago: until their times settle every read reloads
      await backdateRefs(join(root, 'demo.git'));
      const path = '/demo.git/info/refs?service=git-upload-pack';
      const first = await cached.fetch(req(path));
      const bytes = new Uint8Array(await first.arrayBuffer());
      const request = (method: string, headers: Record<string, string>) => ({
        method,
        url: path,
        headers: new Headers(headers),
        body: null,
        signal: new AbortController().signal,
      });
      // a hit needs no I/O: the reply is there at once, not a promise
      const hit = cached.dispatch(request('GET', { origin: 'https://app.example' }));
      if (hit instanceof Promise) throw new Error('a cached advertisement was not answered synchronously');
      expect(hit.headers['access-control-allow-origin']).toBe('https://app.example');
      expect(hit.headers['content-length']).toBe(String(bytes.byteLength));
      const plain = cached.dispatch(request('GET', {}));
      if (plain instanceof Promise) throw new Error('a cached advertisement was not answered synchronously');
      expect(plain.headers['access-control-allow-origin']).toBeUndefined();
      expect(plain.body).toEqual({ kind: 'bytes', bytes });
      const head = await cached.dispatch(request('HEAD', {}));
      expect(head.status).toBe(200);
      expect(head.body.kind).toBe('none');
      expect(head.headers['content-length']).toBeUndefined();
      const again = await cached.fetch(req(path));
      expect(again.headers.get('access-control-allow-origin')).toBeNull();
      expect(new Uint8Array(await again.arrayBuffer())).toEqual(bytes);
    } finally {
      await cached.close();
    }
  });

  it('answers discoveries arriving later in a turn together, after a check made after they arrived', async () => {
    const cached = createGateway({ backend: createGitProcessBackend({ root, revalidateMs: 60_000 }) });
    const gitDir = await createDemoRepository(root, 'turn');
    try {
      await backdateRefs(gitDir);
      const path = '/turn.git/info/refs?service=git-upload-pack';
      const before = new Uint8Array(await (await cached.fetch(req(path))).arrayBuffer());
      const request = () => ({
        method: 'GET',
        url: path,
        headers: new Headers(),
        body: null,
        signal: new AbortController().signal,
      });
      const text = (reply: Awaited<ReturnType<Gateway['dispatch']>>) =>
        reply.body.kind === 'bytes' ? Buffer.from(reply.body.bytes).toString('latin1') : '';
      // the turn's first discovery is checked and answered at once
      const first = cached.dispatch(request());
      if (first instanceof Promise) throw new Error('the first discovery of a turn was not answered at once');
      expect(first.body).toEqual({ kind: 'bytes', bytes: before });
      // later in the same turn (another socket's read): these wait for the turn's end
      await Promise.resolve();
      const late = [cached.dispatch(request()), cached.dispatch(request())];
      for (const reply of late) expect(reply).toBeInstanceOf(Promise);
      // a ref written after they arrived, before the turn ends, is in their answer
      const head = execFileSync('git', ['--git-dir', gitDir, 'rev-parse', 'HEAD']).toString().trim();
      execFileSync('git', ['--git-dir', gitDir, 'update-ref', 'refs/heads/written-in-turn', head]);
      const answers = await Promise.all(late);
      for (const reply of answers) expect(text(reply)).toContain(`${head} refs/heads/written-in-turn`);
      expect(text(first)).not.toContain('refs/heads/written-in-turn');
    } finally {
      await cached.close();
      await rm(gitDir, { recursive: true, force: true });
    }
  });

  it('streams SSE through a Response and cleans up on cancel', async () => {
    const res = await open.fetch(req('/demo.git/events'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(':ok');
    open.hub.publish({ repo: 'demo', ref: 'refs/heads/x', old: '0'.repeat(40), new: '1'.repeat(40) });
    const frame = new TextDecoder().decode((await reader.read()).value);
    expect(frame).toMatch(/^id: unit-\d+\nevent: ref-update\ndata: \{"repo":"demo","ref":"refs\/heads\/x"/);
    expect(open.hub.size).toBe(1);
    await reader.cancel();
    expect(open.hub.size).toBe(0);
  });

  it('answers 503 with Retry-After and CORS past maxSubscribers, then takes subscribers again', async () => {
    const small = createGateway({
      backend: createGitProcessBackend({ root, revalidateMs: 0 }),
      cors: ['https://app.example'],
      sse: { heartbeatMs: 0, maxSubscribers: 1 },
    });
    try {
      const origin = { origin: 'https://app.example' };
      const first = await small.fetch(req('/demo.git/events', { headers: origin }));
      expect(first.status).toBe(200);
      const refused = await small.fetch(req('/events', { headers: origin }));
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(refused.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(await refused.text()).toBe('too many event subscribers\n');
      await first.body!.cancel();
      const again = await small.fetch(req('/events'));
      expect(again.status).toBe(200);
      await again.body!.cancel();
    } finally {
      await small.close();
    }
    const shut = await small.fetch(req('/demo.git/events'));
    expect(shut.status).toBe(503);
  });
});
