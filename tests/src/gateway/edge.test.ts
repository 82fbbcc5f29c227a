/**
 * The gateway's HTTP edge against clients that are slow, many or not git at all, over real
 * sockets: refs written straight to disk show at the next discovery, slow request bodies are
 * refused with 408 while git is served, a flood of discoveries gets 200 or 503 (never 500), and a
 * push needs the Authorization header and git's Content-Type (a cookie alone is a cross-site
 * request forgery).
 */
import { writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, rawRequest, startServer, type TestServer, text } from './server.js';

const TOKEN = 'edge-token';
const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;

/** The refs a v0 discovery advertises, by name. */
function advertised(body: Uint8Array): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text(body).split('\n')) {
    const match = /([0-9a-f]{40}) ([^\0\s]+)/.exec(line);
    if (match !== null) refs.set(match[2]!, match[1]!);
  }
  return refs;
}

/** The address the trickling clients connect from (the clone and the probes use 127.0.0.1). */
const SLOW_ADDRESS = '127.0.0.2';

/**
 * A request whose body trickles: `first`, then `bytes` every `everyMs`, until the server answers.
 * Resolves with the server's whole answer.
 */
function trickle(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
  first: string,
  bytes: string,
  everyMs: number,
): { sent: Promise<void>; answer: Promise<string> } {
  let sentFirst!: () => void;
  const sent = new Promise<void>((resolve) => (sentFirst = resolve));
  const answer = new Promise<string>((resolve) => {
    let got = '';
    let timer: ReturnType<typeof setInterval> | undefined;
    const finish = () => {
      clearInterval(timer);
      sentFirst();
      resolve(got);
      socket.destroy();
    };
    const socket: Socket = connect({ port: server.port, host: server.host, localAddress: SLOW_ADDRESS }, () => {
      const head = Object.entries({ host: 'x', 'content-length': '1000000', ...headers })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n${first}`, () => sentFirst());
      timer = setInterval(() => socket.writable && socket.write(bytes), everyMs);
    });
    socket.on('data', (d) => {
      got += d.toString('latin1');
      // one whole response (headers and a content-length body) is the answer
      const end = got.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(got);
      if (end >= 0 && length !== null && got.length >= end + 4 + Number(length[1])) finish();
    });
    socket.on('error', () => {});
    socket.on('close', finish);
  });
  return { sent, answer };
}

describe.each(backends)('the HTTP edge, %s backend', (backend) => {
  let sandbox: GitSandbox;
  let server: TestServer;
  const serverGit = (args: string[]) => sandbox.git(['--git-dir', join(server.root, 'r.git'), ...args]);
  const healthz = () => rawRequest(server, 'GET', '/healthz');
  const discover = async (headers: Record<string, string> = {}) => {
    const res = await rawRequest(server, 'GET', '/r.git/info/refs?service=git-upload-pack', { headers });
    expect(res.status).toBe(200);
    return advertised(res.body);
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    server = await startServer({
      root: sandbox.path('root'),
      backend,
      token: TOKEN,
      // the production default: cached advertisements are kept
      revalidateMs: 1000,
      limits: {
        bodyIdleMs: 2000,
        minBodyBytesPerSecond: 1000,
        bodyTimeoutMs: 3000,
        maxConcurrentRequests: 4,
        maxPendingBodies: 64,
        maxPendingBodiesPerClient: 16,
        maxConcurrentDiscoveries: 4,
        maxQueuedDiscoveries: 50,
      },
    });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    for (const n of ['a', 'b', 'c']) {
      await writeFile(join(work, `${n}.txt`), `${n}\n`);
      await sandbox.git(['-C', work, 'add', '.']);
      await sandbox.git(['-C', work, 'commit', '--quiet', '-m', n]);
    }
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'r.git')]);
  });

  afterAll(async () => {
    await server?.close();
    await sandbox?.cleanup();
  });

  it('shows refs written straight to disk at the very next discovery, to a v0-only client too', async () => {
    const head = await serverGit(['rev-parse', 'refs/heads/main']);
    const parent = await serverGit(['rev-parse', 'refs/heads/main~1']);
    expect((await discover()).get('refs/heads/main')).toBe(head);
    // `git update-ref` on the bare repository, then at once a discovery through the gateway
    for (const [ref, oid] of [
      ['refs/heads/main', parent],
      ['refs/heads/main', head],
      ['refs/heads/nested/deeper/topic', parent],
      ['refs/heads/nested/deeper/topic', head],
      ['refs/heads/main', parent],
    ] as const) {
      await serverGit(['update-ref', ref, oid]);
      expect((await discover()).get(ref), ref).toBe(oid);
      expect((await discover({ 'git-protocol': 'version=1' })).get(ref), ref).toBe(oid);
    }
    await serverGit(['update-ref', 'refs/heads/main', head]);

    // a real `git push` to the repository on disk; a v0-only client fetches the new tip at once
    const clone = sandbox.path('v0-client');
    await sandbox.git(['-c', 'protocol.version=0', 'clone', '--quiet', `${server.url}/r.git`, clone]);
    const pusher = sandbox.path('disk-pusher');
    await sandbox.git(['clone', '--quiet', join(server.root, 'r.git'), pusher]);
    for (let i = 0; i < 3; i++) {
      await writeFile(join(pusher, 'd.txt'), `${i}\n`);
      await sandbox.git(['-C', pusher, 'add', 'd.txt']);
      await sandbox.git(['-C', pusher, 'commit', '--quiet', '-m', `disk ${i}`]);
      await sandbox.git(['-C', pusher, 'push', '--quiet', 'origin', 'HEAD:main']);
      const tip = await sandbox.git(['-C', pusher, 'rev-parse', 'HEAD']);
      expect((await discover()).get('refs/heads/main')).toBe(tip);
      await sandbox.git(['-C', clone, '-c', 'protocol.version=0', 'fetch', '--quiet', 'origin']);
      expect(await sandbox.git(['-C', clone, 'rev-parse', 'refs/remotes/origin/main'])).toBe(tip);
    }
  });

  it('refuses slow request bodies with a coded 408 while git requests are served', async () => {
    const headers = (service: string) => ({
      'content-type': `application/x-${service}-request`,
      authorization: `Bearer ${TOKEN}`,
    });
    // more trickling clients than the concurrency limit: some far below the minimum rate, some
    // fast enough for the rate but never finishing (the overall deadline)
    const upload = ['/r.git/git-upload-pack', headers('git-upload-pack')] as const;
    const receive = ['/r.git/git-receive-pack', headers('git-receive-pack')] as const;
    // receive-pack is sent the start of a command line as long as a pkt-line can be, then its rest;
    // 20 from one address, where 16 may send a body at once
    const slow = [
      ...Array.from({ length: 10 }, () => trickle(server, ...upload, '0', '0', 200)),
      ...Array.from({ length: 2 }, () => trickle(server, ...receive, 'fff0', 'a', 200)),
      ...Array.from({ length: 4 }, () => trickle(server, ...upload, '0', '0'.repeat(200), 50)),
      ...Array.from({ length: 4 }, () => trickle(server, ...receive, 'fff0', 'a'.repeat(200), 50)),
    ];
    await Promise.all(slow.map((s) => s.sent));
    await vi.waitFor(() => expect(server.gateway.inFlight).toBe(16), { timeout: 5000 });
    // meanwhile: health says ok, git's probe and a whole clone from another address are served
    expect((await healthz()).status).toBe(200);
    const probe = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request' },
      body: '0000',
    });
    expect(probe.status).toBe(200);
    const clone = await sandbox.run(['clone', '--quiet', `${server.url}/r.git`, sandbox.path('meanwhile')], {
      allowFailure: true,
    });
    expect(clone.stderr).toBe('');
    expect(clone.code).toBe(0);

    const answers = await Promise.all(slow.map((s) => s.answer));
    const timedOut = answers.filter((a) => a.startsWith('HTTP/1.1 408 '));
    const refused = answers.filter((a) => a.startsWith('HTTP/1.1 503 '));
    expect(timedOut).toHaveLength(16);
    expect(refused).toHaveLength(4);
    for (const answer of timedOut) expect(answer).toMatch(/x-gitport-error: GATEWAY_BODY_(TOO_SLOW|TIMEOUT)\r\n/);
    for (const answer of refused) {
      expect(answer).toMatch(/x-gitport-error: GATEWAY_BUSY\r\n/);
      expect(answer).toMatch(/retry-after: 1\r\n/);
    }
    expect(answers.some((a) => a.includes('GATEWAY_BODY_TOO_SLOW'))).toBe(true);
    expect(answers.some((a) => a.includes('GATEWAY_BODY_TIMEOUT'))).toBe(true);
    await vi.waitFor(() => expect(server.gateway.inFlight).toBe(0));
    expect((await healthz()).status).toBe(200);
  });

  it('bounds a flood of discoveries with distinct Git-Protocol values: 200 or 503, never 500 or a stack', async () => {
    const errors = vi.spyOn(console, 'error');
    try {
      // a ref just moved: nothing is settled in the cache, every discovery has to look
      await serverGit(['update-ref', 'refs/heads/flood', await serverGit(['rev-parse', 'refs/heads/main'])]);
      const statuses = await Promise.all(
        Array.from({ length: 3000 }, async (_, i) => {
          const res = await rawRequest(server, 'GET', '/r.git/info/refs?service=git-upload-pack', {
            headers: { 'git-protocol': `version=${i % 3}:agent=flood-${i}:x=${'y'.repeat(i % 50)}` },
          }).catch(() => undefined);
          if (res === undefined) return 0;
          if (res.status === 503) expect(res.headers['retry-after']).toBeDefined();
          if (res.status === 200 && i % 3 === 2) expect(text(res.body)).toMatch(/^000eversion 2\n/);
          return res.status;
        }),
      );
      const seen = new Set(statuses);
      seen.delete(0);
      expect([...seen].filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
      await serverGit(['update-ref', '-d', 'refs/heads/flood']);
    }
    expect((await discover()).has('refs/heads/flood')).toBe(false);
    expect((await healthz()).status).toBe(200);
  });

  it('lets only the Authorization header authorize a push, with git’s Content-Type, from no foreign origin', async () => {
    const head = await serverGit(['rev-parse', 'refs/heads/main']);
    const parent = await serverGit(['rev-parse', 'refs/heads/main~1']);
    // a fast-forward-free move of main to its parent: an empty pack is enough
    const emptyPack = Buffer.from('5041434b0000000200000000029d08823bd8a8eab510ad6ac75c823cfd3ed31e', 'hex');
    const command = Buffer.concat([
      Buffer.from(`${pkt(`${head} ${parent} refs/heads/main\0report-status\n`)}0000`),
      emptyPack,
    ]);
    const push = (headers: Record<string, string>, path = '/r.git/git-receive-pack') =>
      rawRequest(server, 'POST', path, { headers, body: command });
    const cookie = { cookie: `gitport_token=${TOKEN}` };
    const type = { 'content-type': 'application/x-git-receive-pack-request' };

    // what a no-cors fetch or a form of another site can send: the cookie, no (or a simple) type
    const noType = await push({ ...cookie, origin: 'https://evil.example' });
    expect(noType.status).toBe(415);
    expect(noType.headers['x-gitport-error']).toBe('GATEWAY_BAD_CONTENT_TYPE');
    const formType = await push({ ...cookie, 'content-type': 'text/plain' });
    expect(formType.status).toBe(415);
    const foreign = await push({ ...cookie, ...type, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['x-gitport-error']).toBe('GATEWAY_ORIGIN_REFUSED');
    const foreignWithToken = await push({ ...type, authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' });
    expect(foreignWithToken.status).toBe(403);
    // the cookie or a query token never authorize a POST
    expect((await push({ ...cookie, ...type })).status).toBe(401);
    expect((await push(type, `/r.git/git-receive-pack?token=${TOKEN}`)).status).toBe(401);
    const discovery = await rawRequest(server, 'GET', '/r.git/info/refs?service=git-receive-pack', { headers: cookie });
    expect(discovery.status).toBe(401);
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);

    // the same push with the header (from the server's own origin, or none) does move the ref
    const own = await push({
      ...type,
      authorization: `Bearer ${TOKEN}`,
      origin: `http://${server.host}:${server.port}`,
    });
    expect(own.status).toBe(200);
    expect(text(own.body)).toContain('ok refs/heads/main');
    await vi.waitFor(async () => expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(parent));
    await serverGit(['update-ref', 'refs/heads/main', head]);
  });
});
