/**
 * The handler's limits through WHATWG Request/Response over the real git-process backend, with
 * the backend's work held open by a gate where a test needs the work to last: the concurrency
 * slot counts work until the backend says it stopped, `/healthz` says when git requests are
 * saturated, discovery is bounded and keyed by protocol version, CORS never pairs a wildcard with
 * credentials, and cookies authorize event streams only.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GitBackend } from './backend.js';
import { createGateway, type GatewayOptions } from './handler.js';
import { createDemoRepository } from './node/demo-repository.js';
import { createGitProcessBackend } from './node/git-process-backend.js';
import { protocolVersion } from './request.js';

const TOKEN = 'limits-token';
let root: string;
let head: string;

const req = (path: string, init: RequestInit = {}) => new Request(`http://gateway.test${path}`, init);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gitport-limits-'));
  await createDemoRepository(root);
  head = execFileSync('git', ['--git-dir', join(root, 'demo.git'), 'rev-parse', 'HEAD'])
    .toString()
    .trim();
});
afterAll(() => rm(root, { recursive: true, force: true }));

/**
 * The real backend, with the end of each RPC's output (done, thrown or cancelled) and each
 * advertisement held until `open()`: the work is over only when the gate lets it be.
 */
function gatedBackend() {
  const inner = createGitProcessBackend({ root });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const ended: string[] = [];
  const protocols: (string | null)[] = [];
  let advertising = 0;
  const backend: GitBackend = {
    ...inner,
    async advertise(repo, service, options) {
      protocols.push(options.protocol);
      advertising++;
      await gate;
      return inner.advertise(repo, service, options);
    },
    cachedAdvertisement: () => undefined,
    async rpc(repo, service, body, options) {
      const output = (await inner.rpc(repo, service, body, options))[Symbol.asyncIterator]();
      const it: AsyncIterableIterator<Uint8Array> = {
        [Symbol.asyncIterator]() {
          return it;
        },
        async next() {
          let step: IteratorResult<Uint8Array>;
          try {
            step = await output.next();
          } catch (error) {
            ended.push('threw');
            await gate;
            throw error;
          }
          if (step.done === true) {
            ended.push('done');
            await gate;
          }
          return step;
        },
        async return() {
          await output.return?.();
          ended.push('return');
          await gate;
          return { done: true, value: undefined };
        },
      };
      return it;
    },
  };
  return { backend, open, ended, protocols, advertising: () => advertising };
}

const fetchRequest = () =>
  req('/demo.git/git-upload-pack', {
    method: 'POST',
    headers: { 'content-type': 'application/x-git-upload-pack-request' },
    body: `0032want ${head}\n00000009done\n`,
  });

describe('handler limits', () => {
  it('holds the concurrency slot until the backend has stopped the work of a cancelled response', async () => {
    const gated = gatedBackend();
    const gateway = createGateway({ backend: gated.backend, limits: { maxConcurrentRequests: 1 } });
    try {
      const res = await gateway.fetch(fetchRequest());
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      // the client leaves; the backend is still stopping the work
      await reader.cancel();
      await vi.waitFor(() => expect(gated.ended).toEqual(['return']));
      expect(gateway.inFlight).toBe(1);
      expect(gateway.working).toBe(1);
      // the slot is still taken: another request is refused, and health says why
      const refused = await gateway.fetch(fetchRequest());
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('x-gitport-error')).toBe('GATEWAY_BUSY');
      const health = await gateway.fetch(req('/healthz'));
      expect(health.status).toBe(503);
      expect(await health.text()).toBe('git requests saturated\n');
      gated.open();
      await vi.waitFor(() => expect(gateway.inFlight).toBe(0));
      expect((await gateway.fetch(req('/healthz'))).status).toBe(200);
      const again = await gateway.fetch(fetchRequest());
      expect(again.status).toBe(200);
      expect(new TextDecoder().decode(new Uint8Array(await again.arrayBuffer()).subarray(0, 8))).toBe('0008NAK\n');
    } finally {
      gated.open();
      await gateway.close();
    }
  });

  it('holds it until a completed response has ended in the backend too', async () => {
    const gated = gatedBackend();
    const gateway = createGateway({ backend: gated.backend, limits: { maxConcurrentRequests: 1 } });
    try {
      const res = await gateway.fetch(fetchRequest());
      const reading = res.arrayBuffer();
      await vi.waitFor(() => expect(gated.ended).toEqual(['done']));
      expect(gateway.inFlight).toBe(1);
      gated.open();
      expect((await reading).byteLength).toBeGreaterThan(8);
      await vi.waitFor(() => expect(gateway.inFlight).toBe(0));
    } finally {
      gated.open();
      await gateway.close();
    }
  });

  it('bounds discovery with a queue, answers the excess with 503, and keys it by protocol version only', async () => {
    const gated = gatedBackend();
    const gateway = createGateway({
      backend: gated.backend,
      limits: { maxConcurrentDiscoveries: 2, maxQueuedDiscoveries: 3 },
    });
    const errors = vi.spyOn(console, 'error');
    try {
      const discovery = (protocol: string) =>
        gateway.fetch(req('/demo.git/info/refs?service=git-upload-pack', { headers: { 'git-protocol': protocol } }));
      const protocols = ['version=2:agent=a', 'agent=b:version=2', 'version=1', 'version=0:version=1:x=y', 'x'];
      const admitted = protocols.map(discovery);
      await vi.waitFor(() => expect(gated.advertising()).toBe(2));
      const refused = await discovery('version=2:agent=z');
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('x-gitport-error')).toBe('GATEWAY_BUSY');
      expect((await gateway.fetch(req('/healthz'))).status).toBe(503);
      gated.open();
      const replies = await Promise.all(admitted);
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(await replies[1]!.text()).toMatch(/^000eversion 2\n/);
      expect(await replies[2]!.text()).toMatch(/^001e# service=git-upload-pack\n0000000eversion 1\n/);
      expect(await replies[4]!.text()).toMatch(/^001e# service=git-upload-pack\n0000[0-9a-f]{4}[0-9a-f]{40} HEAD\0/);
      // the backend (and its cache) only ever sees the version, not the raw header
      expect(gated.protocols).toEqual(['version=2', 'version=2', 'version=1', 'version=1', null]);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
      gated.open();
      await gateway.close();
    }
  });

  it('reads the protocol version as git does: the highest known version=N wins', () => {
    expect(protocolVersion(null)).toBeNull();
    expect(protocolVersion('version=2')).toBe('version=2');
    expect(protocolVersion('version=1:version=2')).toBe('version=2');
    expect(protocolVersion('version=2:version=1')).toBe('version=2');
    expect(protocolVersion('version=3')).toBeNull();
    expect(protocolVersion('version=1:version=3')).toBe('version=1');
    expect(protocolVersion('')).toBeNull();
    expect(protocolVersion('version=02')).toBeNull();
  });

  it('never sends a wildcard origin with credentials', async () => {
    const make = (cors: string[]) =>
      createGateway({ backend: createGitProcessBackend({ root }), cors } satisfies GatewayOptions);
    const wildcard = make(['*']);
    const listed = make(['https://app.example', '*']);
    try {
      for (const gateway of [wildcard, listed]) {
        for (const method of ['GET', 'OPTIONS']) {
          const res = await gateway.fetch(
            req('/demo.git/info/refs?service=git-upload-pack', { method, headers: { origin: 'https://evil.example' } }),
          );
          expect(res.headers.get('access-control-allow-origin'), method).toBe('*');
          expect(res.headers.get('access-control-allow-credentials'), method).toBeNull();
        }
      }
      const own = await listed.fetch(
        req('/demo.git/info/refs?service=git-upload-pack', { headers: { origin: 'https://app.example' } }),
      );
      expect(own.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(own.headers.get('access-control-allow-credentials')).toBe('true');
    } finally {
      await wildcard.close();
      await listed.close();
    }
  });

  it('takes the cookie or query token for event streams only', async () => {
    const gateway = createGateway({
      backend: createGitProcessBackend({ root }),
      token: TOKEN,
      private: true,
      sse: { heartbeatMs: 0 },
    });
    try {
      const cookie = { cookie: `theme=dark; gitport_token=${TOKEN}` };
      for (const path of ['/demo.git/events', '/events', `/events?token=${TOKEN}`]) {
        const headers = path.includes('token=') ? {} : cookie;
        const res = await gateway.fetch(req(path, { headers }));
        expect(res.status, path).toBe(200);
        await res.body!.cancel();
      }
      expect(
        (await gateway.fetch(req('/demo.git/info/refs?service=git-upload-pack', { headers: cookie }))).status,
      ).toBe(404);
      const post = await gateway.fetch(
        req('/demo.git/git-upload-pack', {
          method: 'POST',
          headers: { ...cookie, 'content-type': 'application/x-git-upload-pack-request' },
          body: '0000',
        }),
      );
      expect(post.status).toBe(404);
    } finally {
      await gateway.close();
    }
  });
});
