/**
 * Shutting down with a push in flight: the server stops accepting, the push finishes (and its
 * ref moves), then close() resolves. A push whose client goes away during shutdown moves nothing.
 */
import { writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it } from 'vitest';
import { backends, rawRequest, startServer } from './server.js';

const TOKEN = 'bye';
const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;

describe.each(backends)('shutdown, %s backend', (backend) => {
  it('lets a push in flight finish before close() resolves, and refuses new connections', async () => {
    await using sandbox = await createGitSandbox();
    const server = await startServer({ root: sandbox.path('root'), token: TOKEN, backend });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await writeFile(join(work, 'a.txt'), 'a\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'r.git')]);
    const head = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    await writeFile(
      join(work, 'b.bin'),
      new Uint8Array(1 << 20).map((_, i) => (i * 31) % 253),
    );
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'b']);
    const next = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    const pack = (
      await sandbox.run(['-C', work, 'pack-objects', '--stdout', '--revs'], { input: `${next}\n^${head}\n` })
    ).stdout;
    const command = Buffer.from(`${pkt(`${head} ${next} refs/heads/main\0report-status\n`)}0000`);

    let responseText = '';
    const response = new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: server.host,
          port: server.port,
          method: 'POST',
          path: '/r.git/git-receive-pack',
          headers: { 'content-type': 'application/x-git-receive-pack-request', authorization: `Bearer ${TOKEN}` },
          agent: false,
        },
        (res) => {
          res.setEncoding('latin1');
          res.on('data', (d: string) => (responseText += d));
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write(command);
      req.write(pack.subarray(0, pack.length >> 1));
      (async () => {
        while (server.gateway.inFlight === 0) await new Promise((r) => setTimeout(r, 5));
        const closing = server.close();
        // new connections are refused from now on
        await expect(rawRequest(server, 'GET', '/healthz')).rejects.toThrow();
        req.end(pack.subarray(pack.length >> 1));
        await closing;
      })().catch(reject);
    });
    expect(await response).toBe(200);
    expect(responseText).toContain('ok refs/heads/main');
    expect(await sandbox.git(['--git-dir', join(server.root, 'r.git'), 'rev-parse', 'refs/heads/main'])).toBe(next);
    await sandbox.git(['--git-dir', join(server.root, 'r.git'), 'fsck', '--strict', '--no-dangling']);
  });
});
