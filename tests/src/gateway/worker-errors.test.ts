/**
 * What a gateway worker logs: a failure of the server's own (here Node's fs refusing a read) is
 * logged with its code and stack; a client's malformed request is answered to the client and not
 * logged. A real worker thread whose stderr the test reads.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Worker, WorkerOptions } from 'node:worker_threads';
import { createGateway } from '@gitport/gateway';
import { createWorkerPoolBackend, listen } from '@gitport/gateway/node';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { describe, expect, it, vi } from 'vitest';
import { rawRequest, text } from './server.js';

describe('a gateway worker', () => {
  it('logs an fs failure with its code and stack, and not a client error', async () => {
    await using sandbox = await createGitSandbox();
    const root = sandbox.path('root');
    await mkdir(root);
    let stderr = '';
    const spawn = (entry: URL, options: WorkerOptions): Worker => {
      const worker = startTsWorker(entry, { ...options, stderr: true });
      worker.stderr.setEncoding('utf8');
      worker.stderr.on('data', (chunk: string) => {
        stderr += chunk;
      });
      return worker;
    };
    const backend = await createWorkerPoolBackend({ root, workers: 1, revalidateMs: 0, spawn });
    const gateway = createGateway({ backend });
    const server = await listen(gateway, { port: 0, host: '127.0.0.1', closeGraceMs: 5_000 });
    try {
      const work = sandbox.path('work');
      await sandbox.git(['init', '--quiet', work]);
      await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
      const gitDir = join(root, 'broken.git');
      await sandbox.git(['clone', '--quiet', '--bare', work, gitDir]);
      // the branch's loose ref becomes a directory: reading it fails in Node's fs (EISDIR)
      await sandbox.git(['--git-dir', gitDir, 'pack-refs', '--all']);
      await rm(join(gitDir, 'packed-refs'));
      await mkdir(join(gitDir, 'packed-refs'));

      // a client's malformed request: answered, not logged
      const bad = await rawRequest(server, 'POST', '/broken.git/git-upload-pack', {
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        body: '0009zzzz\n0000',
      });
      expect(bad.status).toBe(200);
      expect(text(bad.body)).toMatch(/ERR|bad|want/i);

      // the server's own failure: the client gets an error, the log gets the code and the stack
      const failed = await rawRequest(server, 'GET', '/broken.git/info/refs?service=git-upload-pack');
      expect(failed.status).toBeGreaterThanOrEqual(500);
      await vi.waitFor(() => expect(stderr).toMatch(/EISDIR|FS_READ_FAILED/), { timeout: 30_000 });
      expect(stderr).toMatch(/gitport worker gateway-worker-0-\d+: git-upload-pack broken: \w+/);
      expect(stderr).toMatch(/\n\s+at /);
      expect(stderr).not.toMatch(/PROTOCOL_|PKTLINE_/);
    } finally {
      await server.close();
    }
  }, 60_000);
});
