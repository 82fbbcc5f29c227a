/**
 * The Bun.serve adapter in the process it serves from, run by `bun test` (see
 * bun-adapter.test.ts): the minimum version check, an event stream that outlives the idle
 * timeout, the gateway's body limit, a client that goes away mid-body, and a graceful close.
 * The gateway runs over the git-process backend on a demo repository (real git).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGateway, type Gateway } from '@gitport/gateway';
import {
  compareVersions,
  MIN_BUN_VERSION,
  type RunningBunServer,
  requireBunVersion,
  serveBun,
} from '@gitport/gateway/bun';
import { createDemoRepository, createGitProcessBackend } from '@gitport/gateway/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gitport-bun-adapter-'));
  await createDemoRepository(root, 'demo');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function start(
  limits: Parameters<typeof createGateway>[0]['limits'] = {},
  idleTimeout?: number,
): Promise<{ gateway: Gateway; server: RunningBunServer }> {
  const gateway = createGateway({
    backend: createGitProcessBackend({ root }),
    allowAnonymousPush: true,
    limits,
  });
  const server = await serveBun(gateway, { port: 0, idleTimeout, closeGraceMs: 5_000 });
  return { gateway, server };
}

const decoder = new TextDecoder();

/** Reads the stream until `text` has arrived; fails if it ends first. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, text: string, seen = ''): Promise<string> {
  let all = seen;
  while (!all.includes(text)) {
    const step = await reader.read();
    if (step.done) throw new Error(`stream ended before ${JSON.stringify(text)}: ${JSON.stringify(all)}`);
    all += decoder.decode(step.value, { stream: true });
  }
  return all;
}

describe('the minimum Bun version', () => {
  it('accepts the running Bun and refuses an older one with GATEWAY_RUNTIME_TOO_OLD', () => {
    expect(() => requireBunVersion()).not.toThrow();
    expect(compareVersions(process.versions.bun!, MIN_BUN_VERSION)).toBeGreaterThanOrEqual(0);
    expect(() => requireBunVersion(MIN_BUN_VERSION)).not.toThrow();
    expect(() => requireBunVersion('1.0.0')).toThrow(expect.objectContaining({ code: 'GATEWAY_RUNTIME_TOO_OLD' }));
    expect(() => requireBunVersion('1.4.4')).toThrow(expect.objectContaining({ code: 'GATEWAY_RUNTIME_TOO_OLD' }));
    expect(() => requireBunVersion('9.0.0-canary.1+abc')).not.toThrow();
    expect(() => requireBunVersion('not a version')).toThrow(expect.objectContaining({ code: 'GATEWAY_BAD_ARGUMENT' }));
  });
});

describe('Bun.serve adapter', () => {
  it('keeps an event stream open past the idle timeout and delivers the next event', async () => {
    const { gateway, server } = await start({}, 1_000);
    try {
      const response = await fetch(`${server.url}/demo.git/events`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = response.body!.getReader();
      const first = await readUntil(reader, '\n\n');
      // silence well past the idle timeout (Bun checks it on a timer of a few seconds): Bun.serve
      // closes a request that keeps it
      await sleep(9_000);
      const zero = '0'.repeat(40);
      gateway.hub.publish({ repo: 'demo', ref: 'refs/heads/quiet', old: zero, new: 'a'.repeat(40) });
      const all = await readUntil(reader, 'refs/heads/quiet', first);
      expect(all).toContain('event: ref-update');
      await reader.cancel();
    } finally {
      await server.close();
    }
  });

  it('still closes a quiet request that is not an event stream after the idle timeout', async () => {
    const { server } = await start({ bodyIdleMs: 0, minBodyBytesPerSecond: 0 }, 1_000);
    try {
      // a body that never comes: the gateway waits for it, Bun's idle timeout ends the connection
      let stop!: () => void;
      const stalled = new Promise<void>((resolve) => (stop = resolve));
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          controller.enqueue(new TextEncoder().encode('0032want '));
          await stalled;
          controller.close();
        },
      });
      const outcome = await fetch(`${server.url}/demo.git/git-upload-pack`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        body,
      }).then(
        (response) => `status ${response.status}`,
        (error: Error) => `failed: ${error.message}`,
      );
      stop();
      expect(outcome).not.toBe('status 200');
    } finally {
      await server.close();
    }
  });

  it('refuses a body over the gateway limit with 413 GATEWAY_BODY_TOO_LARGE, declared or chunked', async () => {
    const { gateway, server } = await start({ maxBodyBytes: 1024 });
    try {
      const headers = { 'content-type': 'application/x-git-receive-pack-request' };
      const declared = await fetch(`${server.url}/demo.git/git-receive-pack`, {
        method: 'POST',
        headers,
        body: new Uint8Array(4096),
      });
      expect(declared.status).toBe(413);
      expect(declared.headers.get('x-gitport-error')).toBe('GATEWAY_BODY_TOO_LARGE');
      const chunks = [new Uint8Array(800), new Uint8Array(800), new Uint8Array(800)];
      const chunked = await fetch(`${server.url}/demo.git/git-receive-pack`, {
        method: 'POST',
        headers,
        body: new ReadableStream<Uint8Array>({
          pull(controller) {
            const next = chunks.shift();
            if (next === undefined) controller.close();
            else controller.enqueue(next);
          },
        }),
      });
      expect(chunked.status).toBe(413);
      expect(chunked.headers.get('x-gitport-error')).toBe('GATEWAY_BODY_TOO_LARGE');
      expect(gateway.inFlight).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('lets go of a request whose client disconnects while sending its body', async () => {
    const { gateway, server } = await start();
    try {
      const client = new AbortController();
      let sent!: () => void;
      const started = new Promise<void>((resolve) => (sent = resolve));
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          controller.enqueue(new TextEncoder().encode('0032want '));
          sent();
          await new Promise(() => {});
        },
      });
      const request = fetch(`${server.url}/demo.git/git-upload-pack`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        body,
        signal: client.signal,
      }).catch((error: Error) => error);
      await started;
      for (let i = 0; i < 200 && gateway.inFlight === 0; i++) await sleep(10);
      expect(gateway.inFlight).toBe(1);
      client.abort();
      await request;
      for (let i = 0; i < 500 && gateway.inFlight !== 0; i++) await sleep(10);
      expect(gateway.inFlight).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('closes gracefully: event streams end and new connections are refused', async () => {
    const { server } = await start();
    const events = await fetch(`${server.url}/events`);
    const reader = events.body!.getReader();
    await readUntil(reader, '\n\n');
    const advertised = await fetch(`${server.url}/demo.git/info/refs?service=git-upload-pack`);
    expect(advertised.status).toBe(200);
    await advertised.arrayBuffer();
    await server.close();
    let ended = false;
    for (;;) {
      const step = await reader.read().catch(() => ({ done: true as const }));
      if (step.done) {
        ended = true;
        break;
      }
    }
    expect(ended).toBe(true);
    const after = await fetch(`${server.url}/healthz`).then(
      (response) => response.status,
      () => 'refused',
    );
    expect(after).toBe('refused');
  });
});
