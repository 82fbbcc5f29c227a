/**
 * Fuzzing the parsers of the HTTP edge that take client bytes, through the handler over the real
 * git-process backend: request targets (path, repository name, query), the headers the gateway
 * reads (Git-Protocol, Content-Type, Content-Encoding, Content-Length, Authorization, Cookie,
 * Origin, Last-Event-ID) and gzip bodies. Every input gets a coded 4xx or a valid answer: never a
 * 500, a throw or a logged internal error.
 *
 * Seeded: GITPORT_FUZZ_SEED picks the seed (printed); GITPORT_FUZZ_RUNS=N runs N times the brief
 * default.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { collect, gunzipBody } from './body.js';
import { isGatewayError } from './errors.js';
import { createGateway, type Gateway } from './handler.js';
import { createDemoRepository } from './node/demo-repository.js';
import { createGitProcessBackend } from './node/git-process-backend.js';
import { type GatewayRequest, protocolVersion } from './request.js';
import { toResponse } from './response.js';
import { presentedToken } from './routes/auth.js';

const SEED = Number(process.env.GITPORT_FUZZ_SEED ?? 20_261_126);
const RUNS = 120 * Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
const TOKEN = 'fuzz-token';
let root: string;
let head: string;
let gateway: Gateway;

beforeAll(async () => {
  console.log(`edge fuzz: seed ${SEED}, ${RUNS} runs (GITPORT_FUZZ_SEED, GITPORT_FUZZ_RUNS)`);
  root = await mkdtemp(join(tmpdir(), 'gitport-fuzz-'));
  await createDemoRepository(root);
  head = execFileSync('git', ['--git-dir', join(root, 'demo.git'), 'rev-parse', 'HEAD'])
    .toString()
    .trim();
  gateway = createGateway({
    backend: createGitProcessBackend({ root }),
    token: TOKEN,
    cors: ['https://app.example'],
    sse: { heartbeatMs: 0 },
    limits: { bodyIdleMs: 2000, maxUploadRequestBytes: 1 << 16, maxInflatedBytes: 1 << 16 },
  });
});

afterAll(async () => {
  await gateway?.close();
  await rm(root, { recursive: true, force: true });
});

const pick = <T>(...values: T[]) => fc.constantFrom(...values);
/** Any text, printable and not, including lone surrogates and the characters parsers split on. */
const anyText = (maxLength = 40) =>
  fc.oneof(
    fc.string({ maxLength, unit: 'binary' }),
    fc.string({ maxLength, unit: fc.constantFrom(...'%/.\\?&=#:;, \t\r\n\0"\'-_2aA') }),
  );

const target = fc.oneof(
  fc
    .tuple(
      pick('', '/', '//', 'http://h', 'https://h:1', 'x:'),
      pick('demo', 'demo.git', 'nope', '..', '%2e%2e', '%', '%zz', '%c0%ae', 'événement', ''),
      pick('.git', '', '.git/', '.GIT'),
      pick(
        '/info/refs',
        '/git-upload-pack',
        '/git-receive-pack',
        '/events',
        '',
        '/info/refs/',
        '/HEAD',
        '/objects/info/packs',
      ),
      pick(
        '',
        '?service=git-upload-pack',
        '?service=git-receive-pack',
        '?service=',
        '?service=git-upload-pack&service=x',
        `?token=${TOKEN}`,
        '?lastEventId=x-1',
        '?repo=demo&repo=%2e',
        '#frag',
      ),
    )
    .map(([scheme, name, suffix, rest, query]) => `${scheme}/${name}${suffix}${rest}${query}`),
  fc.tuple(pick('/events', '/healthz', '/'), anyText()).map(([path, query]) => `${path}?${query}`),
  anyText(80),
);

const headerValue = fc.oneof(anyText(), pick(''), fc.string({ maxLength: 300 }));
const headers = fc.record(
  {
    'git-protocol': fc.oneof(headerValue, pick('version=2', 'version=1', 'version=2:version=1', 'version=3')),
    'content-type': fc.oneof(
      headerValue,
      pick('application/x-git-upload-pack-request', 'application/x-git-receive-pack-request'),
    ),
    'content-encoding': fc.oneof(headerValue, pick('gzip', 'x-gzip', 'identity', 'GZIP ', 'br')),
    'content-length': fc.oneof(headerValue, pick('0', '4', '99999999999999999999', '-1', '1e3')),
    authorization: fc.oneof(
      headerValue,
      pick(
        `Bearer ${TOKEN}`,
        `Basic ${btoa(`u:${TOKEN}`)}`,
        'Basic !!!',
        'Basic',
        'Bearer',
        `basic ${btoa('\u00ff:')}`,
      ),
    ),
    cookie: fc.oneof(headerValue, pick(`gitport_token=${TOKEN}`, 'gitport_token=%', 'gitport_token', ';;=;')),
    origin: fc.oneof(headerValue, pick('https://app.example', 'https://evil.example', 'null')),
    'last-event-id': fc.oneof(headerValue, pick('x-1', '0-0', `a-${'9'.repeat(40)}`, '-', ' 1-2 ')),
  },
  { requiredKeys: [] },
);

/** Requests on the routes git uses, with the right method and type and mostly the token, other headers fuzzed. */
const gitShaped = fc
  .tuple(
    pick<[string, string, string]>(
      ['GET', '/demo.git/info/refs?service=git-upload-pack', ''],
      ['GET', '/demo.git/info/refs?service=git-receive-pack', ''],
      ['POST', '/demo.git/git-upload-pack', 'application/x-git-upload-pack-request'],
      ['POST', '/demo.git/git-receive-pack', 'application/x-git-receive-pack-request'],
      ['GET', '/demo.git/events', ''],
      ['GET', '/events?repo=demo', ''],
    ),
    headers,
    fc.boolean(),
  )
  .map(([[method, url, type], fields, authorized]): [string, string, Record<string, string>] => {
    const fixed: Record<string, string> = {};
    for (const [name, value] of Object.entries(fields)) if (value !== undefined) fixed[name] = value;
    if (type !== '') fixed['content-type'] = type;
    if (authorized) fixed.authorization = `Bearer ${TOKEN}`;
    if (fixed.origin !== undefined && authorized) delete fixed.origin;
    return [method, url, fixed];
  });

const body = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  pick(
    new TextEncoder().encode('0000'),
    new TextEncoder().encode(`0032want ${'0'.repeat(40)}\n00000009done\n`),
    new Uint8Array(gzipSync('0000')),
    new Uint8Array(gzipSync('0000').subarray(0, 12)),
  ),
  fc.uint8Array({ maxLength: 300 }).map((b) => new Uint8Array(gzipSync(b))),
);

function requestOf(
  method: string,
  url: string,
  fields: Record<string, string>,
  bytes: Uint8Array,
  chunk: number,
): GatewayRequest {
  const map = new Map(Object.entries(fields));
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (let at = 0; at < bytes.length; at += chunk) yield bytes.subarray(at, at + chunk);
  }
  return {
    method,
    url,
    headers: { get: (name) => map.get(name.toLowerCase()) ?? null },
    body: method === 'GET' || method === 'HEAD' ? null : chunks(),
    signal: new AbortController().signal,
  };
}

describe('edge fuzz', () => {
  it('answers every request target, header and body with a coded 4xx or a valid reply', async () => {
    const errors = vi.spyOn(console, 'error');
    const statuses = new Map<number, number>();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.tuple(fc.oneof(pick('GET', 'POST', 'HEAD', 'OPTIONS'), anyText(8)), target, headers), gitShaped),
          body,
          fc.integer({ min: 1, max: 64 }),
          async ([method, url, fields], bytes, chunk) => {
            const reply = await gateway.dispatch(requestOf(method, url, fields, bytes, chunk));
            statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
            expect(reply.status).toBeGreaterThanOrEqual(200);
            expect(reply.status).toBeLessThan(500);
            if (reply.status >= 400) {
              expect(reply.body.kind).toBe('bytes');
              expect(reply.headers['x-gitport-error']).toMatch(/^GATEWAY_[A-Z_]+$/);
            }
            // the body of a valid reply is delivered or ends the way a transport error would, never throws here
            const response = toResponse(reply, gateway.hub);
            if (reply.body.kind === 'events') await response.body?.cancel();
            else await response.arrayBuffer().catch(() => undefined);
          },
        ),
        { seed: SEED, numRuns: RUNS },
      );
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
      console.log('edge fuzz: statuses', Object.fromEntries(statuses));
    }
    // the fuzz reached the backend, not only the refusals in front of it
    expect(statuses.get(200)).toBeGreaterThan(0);
    expect(gateway.inFlight).toBe(0);
  }, 120_000);

  it('serves a real fetch through every chunking and gzip level (the property above can pass)', async () => {
    const wants = new TextEncoder().encode(`0032want ${head}\n00000009done\n`);
    for (const gzip of [false, true]) {
      const bytes = gzip ? new Uint8Array(gzipSync(wants)) : wants;
      const reply = await gateway.dispatch(
        requestOf(
          'POST',
          '/demo.git/git-upload-pack',
          {
            'content-type': 'application/x-git-upload-pack-request',
            ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          },
          bytes,
          3,
        ),
      );
      expect(reply.status).toBe(200);
      const out = new Uint8Array(await toResponse(reply, gateway.hub).arrayBuffer());
      expect(new TextDecoder().decode(out.subarray(0, 8))).toBe('0008NAK\n');
    }
  });

  it('never throws from the header parsers, and inflates or refuses any gzip body with a code', async () => {
    fc.assert(
      fc.property(fc.oneof(anyText(200), fc.string({ maxLength: 2000 })), (value) => {
        const token = presentedToken(value);
        expect(token === undefined || typeof token === 'string').toBe(true);
        expect([null, 'version=1', 'version=2']).toContain(protocolVersion(value));
      }),
      { seed: SEED, numRuns: RUNS * 10 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 500 }),
          fc.uint8Array({ maxLength: 500 }).map((b) => new Uint8Array(gzipSync(b))),
          fc.tuple(fc.uint8Array({ maxLength: 500 }), fc.nat()).map(([b, cut]) => {
            const z = gzipSync(b);
            return new Uint8Array(z.subarray(0, cut % (z.length + 1)));
          }),
        ),
        fc.integer({ min: 1, max: 64 }),
        async (bytes, chunk) => {
          async function* chunks(): AsyncGenerator<Uint8Array> {
            for (let at = 0; at < bytes.length; at += chunk) yield bytes.subarray(at, at + chunk);
          }
          try {
            await collect(gunzipBody(chunks(), 1 << 16));
          } catch (error) {
            expect(isGatewayError(error)).toBe(true);
            expect((error as { status: number }).status).toBeLessThan(500);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS * 2 },
    );
  });
});
