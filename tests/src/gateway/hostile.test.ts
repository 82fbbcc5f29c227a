/**
 * Hostile input against a running gateway: garbage and fuzzed bodies, oversized bodies, a gzip
 * bomb, path traversal in every encoding, slow clients, a client that disconnects mid-push and
 * concurrent pushes to one ref. After each, the server still answers and no ref moved that
 * should not have.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createGzip, gzipSync } from 'node:zlib';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, rawRequest, startServer, type TestServer, text } from './server.js';
import { connectSse } from './sse-client.js';

const TOKEN = 'hostile-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;

describe.each(backends)('hostile input, %s backend', (backend) => {
  let sandbox: GitSandbox;
  let server: TestServer;
  let head: string;
  const serverGit = (args: string[]) => sandbox.git(['--git-dir', join(server.root, 'r.git'), ...args]);
  const healthy = async () => expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);
  const settled = async () => {
    while (server.gateway.inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  };

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    await mkdir(sandbox.path('root'));
    server = await startServer({
      root: sandbox.path('root'),
      backend,
      token: TOKEN,
      limits: {
        maxBodyBytes: 8 << 20,
        maxInflatedBytes: 4 << 20,
        bodyIdleMs: 400,
        maxConcurrentRequests: 8,
        maxPendingBodies: 8,
      },
      listen: { headersTimeout: 400 },
    });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await writeFile(join(work, 'a.txt'), 'a\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'r.git')]);
    head = await serverGit(['rev-parse', 'refs/heads/main']);
    // a repository outside the root, and a symlink to it inside
    await sandbox.git(['clone', '--quiet', '--bare', work, sandbox.path('secret.git')]);
    await symlink(sandbox.path('secret.git'), join(server.root, 'link.git'));
  });

  afterAll(async () => {
    await server?.close();
    await sandbox?.cleanup();
  });

  it('never escapes the root, in any encoding', async () => {
    const names = [
      '..%2fsecret',
      '%2e%2e%2fsecret',
      '%2E%2E/secret',
      '..%5csecret',
      '..\\secret',
      '%252e%252e%252fsecret',
      '..%c0%afsecret',
      '%c0%ae%c0%ae%2fsecret',
      '..%ef%bc%8fsecret',
      '%e2%80%a4%e2%80%a4%2fsecret',
      'r%00',
      'r%00.git/../r',
      'link',
      '.',
      '%2e',
      '',
    ];
    for (const name of names) {
      for (const suffix of ['/info/refs?service=git-upload-pack', '/events']) {
        const res = await rawRequest(server, 'GET', `/${name}.git${suffix}`);
        expect([400, 404], `${name}${suffix}`).toContain(res.status);
      }
    }
    for (const path of [
      '/../secret.git/info/refs?service=git-upload-pack',
      '/r.git/../../secret.git/info/refs?service=git-upload-pack',
    ]) {
      const res = await rawRequest(server, 'GET', path);
      expect([400, 404], path).toContain(res.status);
    }
    expect((await rawRequest(server, 'GET', '/r.git/info/refs?service=git-upload-pack')).status).toBe(200);
    await healthy();
  });

  it('survives garbage and fuzzed bodies without moving a ref', async () => {
    const fixed = [
      '',
      '0000',
      'garbage',
      'ffff',
      '0003',
      '0004',
      `${pkt('want 0000000000000000000000000000000000000000\n')}0000${pkt('done\n')}`,
      `${pkt(`want ${head} multi_ack_detailed side-band-64k\n`)}00000009done\n`,
      `${pkt(`${head} ${'1'.repeat(40)} refs/heads/main\0report-status\n`)}0000PACKgarbage`,
      `${pkt(`${'1'.repeat(40)} ${'0'.repeat(40)} refs/heads/main\0report-status\n`)}0000PACK`,
      `${pkt(`${head} ${head} ../../x\0report-status\n`)}0000`,
    ];
    for (const body of fixed) {
      for (const service of ['git-upload-pack', 'git-receive-pack']) {
        const res = await rawRequest(server, 'POST', `/r.git/${service}`, {
          headers: { 'content-type': `application/x-${service}-request`, ...auth },
          body,
        });
        expect(res.status, `${service} ${JSON.stringify(body)}`).toBeLessThan(500);
        await settled();
        expect(
          await serverGit(['for-each-ref', '--format=%(objectname) %(refname)']),
          `${service} ${JSON.stringify(body)}`,
        ).toBe(`${head} refs/heads/main`);
      }
    }
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), async (bytes, gzip) => {
        for (const service of ['git-upload-pack', 'git-receive-pack']) {
          const res = await rawRequest(server, 'POST', `/r.git/${service}`, {
            headers: {
              'content-type': `application/x-${service}-request`,
              ...(gzip ? { 'content-encoding': 'gzip' } : {}),
              ...auth,
            },
            body: bytes,
          });
          expect(res.status).toBeLessThan(500);
        }
      }),
      { numRuns: 25, seed: 8 },
    );
    await settled();
    expect(await serverGit(['for-each-ref', '--format=%(objectname) %(refname)'])).toBe(`${head} refs/heads/main`);
    await serverGit(['fsck', '--no-dangling']);
    await healthy();
  });

  it('refuses oversized bodies with 413, declared or streamed', async () => {
    const big = new Uint8Array(9 << 20);
    const declared = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-length': String(big.length) },
      body: big,
    }).catch(() => ({ status: 413 }));
    expect(declared.status).toBe(413);
    for (const service of ['git-upload-pack']) {
      const streamed = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: server.host,
            port: server.port,
            method: 'POST',
            path: `/r.git/${service}`,
            headers: { 'content-type': `application/x-${service}-request`, ...auth },
            agent: false,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        const chunk = new Uint8Array(1 << 20).fill(0x41);
        let sent = 0;
        const pump = () => {
          while (sent < 10) {
            sent++;
            if (!req.write(chunk)) return void req.once('drain', pump);
          }
          req.end();
        };
        pump();
      }).catch(() => 413);
      expect(streamed, service).toBe(413);
    }
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);

    // a real push over the limit fails and moves nothing
    const work = sandbox.path('oversized');
    await sandbox.git(['clone', '--quiet', join(server.root, 'r.git'), work]);
    await writeFile(join(work, 'huge.bin'), randomBytes(9 << 20));
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'huge']);
    const push = await sandbox.run(
      ['-C', work, 'push', `http://u:${TOKEN}@${server.host}:${server.port}/r.git`, 'HEAD:main'],
      {
        allowFailure: true,
      },
    );
    expect(push.code).not.toBe(0);
    await settled();
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);
    await healthy();
  });

  it('stops inflating a gzip bomb at the cap', async () => {
    const gzip = createGzip({ level: 9 });
    const parts: Buffer[] = [];
    gzip.on('data', (b: Buffer) => parts.push(b));
    const done = new Promise((r) => gzip.on('end', r));
    const zeros = Buffer.alloc(1 << 20);
    for (let i = 0; i < 256; i++) gzip.write(zeros);
    gzip.end();
    await done;
    const bomb = Buffer.concat(parts);
    expect(bomb.length).toBeLessThan(1 << 20);
    const res = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
      body: bomb,
    });
    expect(res.status).toBe(413);
    const corrupt = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
      body: gzipSync('0000').subarray(0, 12),
    });
    expect(corrupt.status).toBe(400);
    await healthy();
  });

  it('times out a client that stalls in its headers or its body', async () => {
    const closed = await new Promise<string>((resolve) => {
      const socket = connect(server.port, server.host, () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
      let got = '';
      socket.on('data', (d) => (got += d.toString()));
      socket.on('close', () => resolve(got));
    });
    expect(closed === '' || closed.startsWith('HTTP/1.1 408')).toBe(true);
    const stalled = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: server.host,
          port: server.port,
          method: 'POST',
          path: '/r.git/git-receive-pack',
          headers: { 'content-type': 'application/x-git-receive-pack-request', ...auth },
          agent: false,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write(pkt(`${head} ${'2'.repeat(40)} refs/heads/main\0report-status\n`));
      // …and never more
    });
    expect(stalled).toBe(408);
    await settled();
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);
    await healthy();
  });

  it('drops an SSE client that does not read', async () => {
    const slow = await connectSse(server, '/r.git/events');
    await slow.waitFor((f) => f.comment === true);
    slow.res.pause();
    const hub = server.gateway.hub;
    const before = hub.size;
    const ref = `refs/heads/${'x'.repeat(200)}`;
    let published = 0;
    while (hub.size === before && published < 200_000) {
      hub.publish({ repo: 'r', ref, old: '0'.repeat(40), new: '1'.repeat(40) });
      published++;
      if (published % 1000 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(hub.size).toBe(before - 1);
    slow.close();
    await healthy();
  });

  it('moves no ref when the client disconnects in the middle of a push', async () => {
    const work = sandbox.path('mid');
    await sandbox.git(['clone', '--quiet', join(server.root, 'r.git'), work]);
    await writeFile(
      join(work, 'big.bin'),
      new Uint8Array(2 << 20).map((_, i) => (i * 7919) % 251),
    );
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'mid']);
    const next = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    const pack = (
      await sandbox.run(['-C', work, 'pack-objects', '--stdout', '--revs'], { input: `${next}\n^${head}\n` })
    ).stdout;
    const command = Buffer.from(`${pkt(`${head} ${next} refs/heads/main\0report-status\n`)}0000`);

    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: server.host,
        port: server.port,
        method: 'POST',
        path: '/r.git/git-receive-pack',
        headers: { 'content-type': 'application/x-git-receive-pack-request', ...auth },
        agent: false,
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.write(command);
      req.write(pack.subarray(0, pack.length >> 1), () => setImmediate(() => req.destroy()));
    });
    await new Promise((r) => setTimeout(r, 50));
    await settled();
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);
    await healthy();

    // the same request, complete, does move it: the test above could fail
    const whole = await rawRequest(server, 'POST', '/r.git/git-receive-pack', {
      headers: { 'content-type': 'application/x-git-receive-pack-request', ...auth },
      body: Buffer.concat([command, pack]),
    });
    expect(whole.status).toBe(200);
    expect(text(whole.body)).toContain('ok refs/heads/main');
    await settled();
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(next);
    head = next;
  });

  it('lets exactly one of several concurrent pushes to one ref win', async () => {
    const clones = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const dir = sandbox.path(`racer${i}`);
        await sandbox.git(['clone', '--quiet', `${server.url}/r.git`, dir]);
        await writeFile(join(dir, `racer${i}.txt`), `${i}\n`);
        await sandbox.git(['-C', dir, 'add', '.']);
        await sandbox.git(['-C', dir, 'commit', '--quiet', '-m', `racer ${i}`]);
        return { dir, oid: await sandbox.git(['-C', dir, 'rev-parse', 'HEAD']) };
      }),
    );
    const results = await Promise.all(
      clones.map((c) =>
        sandbox.run(['-C', c.dir, 'push', `http://u:${TOKEN}@${server.host}:${server.port}/r.git`, 'HEAD:main'], {
          allowFailure: true,
        }),
      ),
    );
    const winners = clones.filter((_, i) => results[i]!.code === 0);
    expect(winners).toHaveLength(1);
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(winners[0]!.oid);
    await serverGit(['fsck', '--no-dangling']);
    await healthy();
  });

  it('answers 503 past the limit of requests sending their body and serves again afterwards', async () => {
    const held: import('node:http').ClientRequest[] = [];
    for (let i = 0; i < 8; i++) {
      const req = httpRequest({
        host: server.host,
        port: server.port,
        method: 'POST',
        path: '/r.git/git-upload-pack',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        agent: false,
      });
      req.on('error', () => {});
      req.on('response', (res) => res.resume());
      req.write('00');
      held.push(req);
    }
    while (server.gateway.inFlight < 8) await new Promise((r) => setTimeout(r, 5));
    const refused = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request' },
      body: '0000',
    });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(503);
    // discovery is served meanwhile
    expect((await rawRequest(server, 'GET', '/r.git/info/refs?service=git-upload-pack')).status).toBe(200);
    for (const req of held) req.destroy();
    await settled();
    const again = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request' },
      body: '0000',
    });
    expect(again.status).toBe(200);
  });

  it('sends the 401 challenge for receive-pack discovery and POST, 404 for unknown, 415 for wrong types', async () => {
    const discovery = await rawRequest(server, 'GET', '/r.git/info/refs?service=git-receive-pack');
    expect(discovery.status).toBe(401);
    expect(discovery.headers['www-authenticate']).toMatch(/^Basic /);
    const post = await rawRequest(server, 'POST', '/r.git/git-receive-pack', {
      headers: { 'content-type': 'application/x-git-receive-pack-request' },
      body: '0000',
    });
    expect(post.status).toBe(401);
    const basic = await rawRequest(server, 'GET', '/r.git/info/refs?service=git-receive-pack', {
      headers: { authorization: `Basic ${Buffer.from(`anyone:${TOKEN}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
    expect(basic.headers['content-type']).toBe('application/x-git-receive-pack-advertisement');
    expect(text(basic.body).startsWith('001f# service=git-receive-pack\n0000')).toBe(true);
    expect((await rawRequest(server, 'GET', '/missing.git/info/refs?service=git-upload-pack')).status).toBe(404);
    expect((await rawRequest(server, 'GET', '/r.git/info/refs')).status).toBe(403);
    const wrongType = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'text/plain' },
      body: '0000',
    });
    expect(wrongType.status).toBe(415);
    const probe = await rawRequest(server, 'POST', '/r.git/git-upload-pack', {
      headers: { 'content-type': 'application/x-git-upload-pack-request' },
      body: '0000',
    });
    expect(probe.status).toBe(200);
    await healthy();
  });
});
