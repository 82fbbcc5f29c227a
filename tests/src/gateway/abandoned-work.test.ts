/**
 * Work outlives its client no more: a clone whose client goes away stops on its worker, and the
 * backend says so only once it has stopped (what the gateway's concurrency slots count). Real
 * HTTP clients on 127.0.0.1, real worker threads, a repository large enough that no clone can
 * finish while its client does not read. Assertions are on counters, never on durations.
 */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { WorkerPoolBackend } from '@gitport/gateway/node';
import { encodeText } from '@gitport/pktline';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it, vi } from 'vitest';
import { ensureHistory } from '../history.js';
import { startServer, type TestServer } from './server.js';

const CLIENTS = 30;
/**
 * A history whose fetch keeps a worker busy walking and searching deltas before its first byte,
 * and whose pack (large random blobs) is far more than sockets and streams buffer.
 */
const BIG = { commits: 2000, seed: 9, files: 100, largeEvery: 200, largeSize: 2 << 20 };

/**
 * A v0 fetch request for every ref of `gitDir`, from a client that has its first commit: the
 * worker walks the history and searches deltas before the first byte of the pack (a request with
 * no `have` could be answered with the stored pack as it is).
 */
async function fetchRequest(sandbox: GitSandbox, gitDir: string): Promise<Uint8Array> {
  const oids = [
    ...new Set((await sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname)'])).split('\n')),
  ];
  const lines = oids.map((oid, i) =>
    encodeText(
      i === 0 ? `want ${oid} multi_ack_detailed side-band-64k thin-pack ofs-delta agent=test\n` : `want ${oid}\n`,
    ),
  );
  const root = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--max-parents=0', 'main'])).split('\n')[0]!;
  const parts = [...lines, new TextEncoder().encode('0000'), encodeText(`have ${root}\n`), encodeText('done\n')];
  const body = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    body.set(p, at);
    at += p.byteLength;
  }
  return body;
}

/** Sends one POST; nothing reads the answer unless a 'data' listener is added. */
function sendAndNeverRead(server: TestServer, path: string, body: Uint8Array): Socket {
  const socket = connect(server.port, server.host);
  socket.on('error', () => {});
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${server.host}\r\nContent-Type: application/x-git-upload-pack-request\r\n` +
      `Content-Length: ${body.byteLength}\r\n\r\n`,
  );
  socket.write(body);
  return socket;
}

/** A repository name other than `taken` pinned to worker `index`. */
function nameOn(pool: WorkerPoolBackend, index: number, prefix: string): string {
  for (let i = 0; ; i++) if (pool.workerOf(`${prefix}${i}`) === index) return `${prefix}${i}`;
}

describe('work whose client went away', () => {
  it('stops on its worker: 30 abandoned clones end, and a small fetch pinned to the same worker completes', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), backend: 'worker-pool' });
    const pool = server.gateway.backend as WorkerPoolBackend;
    // large random blobs: each clone's pack is far more than the sockets and streams buffer
    const history = await ensureHistory(BIG);
    const big = 'big';
    const index = pool.workerOf(big);
    const small = nameOn(pool, index, 'small');
    await sandbox.git(['clone', '--quiet', '--bare', history.gitDir, join(server.root, `${big}.git`)]);
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'small']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, `${small}.git`)]);

    const body = await fetchRequest(sandbox, join(server.root, `${big}.git`));
    const sockets = Array.from({ length: CLIENTS }, () =>
      sendAndNeverRead(server, `/${big}.git/git-upload-pack`, body),
    );
    // every clone reached the worker (none can finish: their clients read nothing)...
    await vi.waitFor(() => expect(pool.work(index).inFlight).toBe(CLIENTS), { timeout: 120_000, interval: 50 });
    // ...then every client goes away
    for (const socket of sockets) socket.destroy();

    // the worker stopped each one (it said so), and is serving nothing now
    await vi.waitFor(() => expect(pool.work(index).inFlight).toBe(0), { timeout: 120_000, interval: 50 });
    expect(pool.work(index).stopped).toBe(CLIENTS);
    expect((await pool.workerStats(index)).httpWork).toBe(0);
    expect(server.gateway.inFlight).toBe(0);

    // a small fetch of another repository on the same worker completes
    await sandbox.git(['clone', '--quiet', `${server.url}/${small}.git`, sandbox.path('small-clone')]);
    expect(await sandbox.git(['-C', sandbox.path('small-clone'), 'log', '--format=%s'])).toBe('small');
    expect(pool.work(index).inFlight).toBe(0);
  }, 240_000);

  it('frees every slot when clients go away in the middle of the response', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), backend: 'worker-pool' });
    const history = await ensureHistory(BIG);
    await sandbox.git(['clone', '--quiet', '--bare', history.gitDir, join(server.root, 'big.git')]);
    const body = await fetchRequest(sandbox, join(server.root, 'big.git'));
    // each client reads until the pack is flowing, then goes away: the response is closed while
    // the gateway waits for its next chunk, and that chunk must not wait for a drain forever
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        const socket = sendAndNeverRead(server, '/big.git/git-upload-pack', body);
        let received = 0;
        await new Promise<void>((resolve) => {
          socket.on('data', (chunk: Buffer) => {
            received += chunk.byteLength;
            if (received > 256 << 10) resolve();
          });
          socket.on('close', () => resolve());
        });
        socket.destroy();
      }),
    );
    await vi.waitFor(() => expect(server.gateway.inFlight).toBe(0), { timeout: 120_000, interval: 50 });
  }, 240_000);

  it('settles the cancelled response body only once the worker has stopped the work', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), backend: 'worker-pool' });
    const pool = server.gateway.backend as WorkerPoolBackend;
    const history = await ensureHistory(BIG);
    await sandbox.git(['clone', '--quiet', '--bare', history.gitDir, join(server.root, 'big.git')]);
    const index = pool.workerOf('big');
    const request = await fetchRequest(sandbox, join(server.root, 'big.git'));

    for (const how of ['return', 'signal'] as const) {
      const controller = new AbortController();
      const output = await pool.rpc(
        'big',
        'git-upload-pack',
        (async function* () {
          yield request;
        })(),
        {
          protocol: null,
          signal: controller.signal,
        },
      );
      // the worker answered with its head and is now negotiating and walking the history
      const it = output[Symbol.asyncIterator]();
      expect((await pool.workerStats(index)).httpWork).toBe(1);
      if (how === 'return') await it.return?.();
      else {
        controller.abort(new Error('client gone'));
        // the iterable's end (here a failure) comes once the work stopped
        await expect(
          (async () => {
            for (;;) if ((await it.next()).done) return;
          })(),
        ).rejects.toBeDefined();
      }
      // no waiting: the worker has already stopped
      expect(pool.work(index).inFlight).toBe(0);
      expect((await pool.workerStats(index)).httpWork).toBe(0);
    }
    expect(pool.work(index).stopped).toBe(2);
  }, 120_000);
});
