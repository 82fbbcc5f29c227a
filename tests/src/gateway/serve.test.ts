/**
 * `gitport serve` as a user runs it: one line on stdout once listening, demo.git in an empty
 * root (readable by real git), SSE, and a clean exit on SIGTERM and SIGINT.
 */
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { describe, expect, it } from 'vitest';
import { startServe } from './serve-process.js';
import { rawRequest } from './server.js';
import { connectSse } from './sse-client.js';

const entry = new URL('./serve-entry.ts', import.meta.url);

describe('gitport serve', () => {
  it('creates demo.git in a missing root, serves it to real git, and exits cleanly on SIGTERM', async () => {
    await using sandbox = await createGitSandbox();
    const root = sandbox.path('missing', 'repos');
    const server = await startServe(['--root', root, '--port', '0', '--token', 't0k']);
    expect(server.host).toBe('127.0.0.1');
    const clone = sandbox.path('demo');
    await sandbox.git(['clone', '--quiet', `${server.url}/demo.git`, clone]);
    expect(Number(await sandbox.git(['-C', clone, 'rev-list', '--count', 'HEAD']))).toBeGreaterThanOrEqual(3);
    await sandbox.git(['--git-dir', join(root, 'demo.git'), 'fsck', '--strict']);
    await sandbox.git(['-C', clone, 'fsck', '--strict']);
    const remote = await sandbox.git(['ls-remote', `${server.url}/demo.git`]);
    expect(remote).toMatch(/\trefs\/heads\/main$/m);
    expect(remote).toMatch(/\trefs\/tags\/v1\.0$/m);
    expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);

    const events = await connectSse(server, '/demo.git/events');
    await events.waitFor((f) => f.comment === true);
    await sandbox.git(['-C', clone, 'commit', '--quiet', '--allow-empty', '-m', 'empty']);
    await sandbox.git([
      '-C',
      clone,
      'push',
      '--quiet',
      `http://u:t0k@${server.host}:${server.port}/demo.git`,
      'HEAD:main',
    ]);
    await events.waitFor((f) => f.event === 'ref-update');

    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    await events.ended;
    expect(server.stdout()).toBe(`gitport listening on ${server.url}\n`);
  });

  it('keeps an existing root as it is and stops on SIGINT', async () => {
    await using sandbox = await createGitSandbox();
    const root = sandbox.path('root');
    await sandbox.git(['init', '--quiet', '--bare', join(root, 'mine.git')]);
    const server = await startServe(['--root', root, '--port=0', '--workers', '1', '--cors', 'https://app.example']);
    expect((await rawRequest(server, 'GET', '/demo.git/info/refs?service=git-upload-pack')).status).toBe(404);
    expect((await rawRequest(server, 'GET', '/mine.git/info/refs?service=git-upload-pack')).status).toBe(200);
    const preflight = await rawRequest(server, 'OPTIONS', '/mine.git/git-upload-pack', {
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, git-protocol, authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/git-protocol/);
    server.child.kill('SIGINT');
    expect(await server.exit).toBe(0);
  });

  it('runs from the built JavaScript (bin/gitport.js and dist, worker threads on dist/node/worker-entry.js)', async () => {
    await using sandbox = await createGitSandbox();
    const server = await startServe(['--root', sandbox.path('repos'), '--port', '0', '--workers', '2'], true);
    await sandbox.git(['clone', '--quiet', `${server.url}/demo.git`, sandbox.path('demo')]);
    expect(
      Number(await sandbox.git(['-C', sandbox.path('demo'), 'rev-list', '--count', 'HEAD'])),
    ).toBeGreaterThanOrEqual(3);
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  });

  it('exits 1 with a message when the port is taken', async () => {
    await using sandbox = await createGitSandbox();
    const first = await startServe(['--root', sandbox.path('repos'), '--port', '0']);
    const child = spawnTsNode(entry, ['serve', '--root', sandbox.path('repos'), '--port', String(first.port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(err).toMatch(/cannot listen/);
    first.child.kill('SIGTERM');
    expect(await first.exit).toBe(0);
  });

  it('refuses bad arguments with exit code 2', async () => {
    for (const args of [['--port', 'x'], ['--private'], ['--bogus'], ['--workers', '0']]) {
      const child = spawnTsNode(entry, ['serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, args.join(' ')).toBe(2);
      expect(err).toMatch(/gitport serve:/);
    }
  });
});
