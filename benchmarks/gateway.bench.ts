/**
 * The gateway (issue 8) side by side with the servers a user could run instead, in one run.
 *
 * - `info/refs`: requests/s and p50/p99 latency of the gateway's
 *   `GET /<repo>.git/info/refs?service=git-upload-pack` (advertisement cache hit) next to raw
 *   node:http and hono's node server answering the same bytes from memory; autocannon runs in a
 *   separate process, 50 connections, without and with pipelining (10). Goal: >= 0.8x raw.
 * - clone: `git clone --bare` of a seeded history through the gateway next to `git http-backend`
 *   (behind a minimal CGI bridge) on the same repository.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from '@gitport/gateway';
import { createGitProcessBackend, createWorkerPoolBackend, listen, type RunningServer } from '@gitport/gateway/node';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { ensureHistory } from '@gitport/tests/history';
import { serve as honoServe } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, bench, describe } from 'vitest';
import { startHttpBackend } from '../tests/src/gateway/http-backend.js';
import { type Load, load } from './autocannon.js';
import { medianMs, QUICK, record, sized } from './report.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };

function listenRaw(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }),
    ),
  );
}

describe('gateway', () => {
  let sandbox: GitSandbox;
  let root: string;
  let gateway: RunningServer;
  let gatewayGit: RunningServer;
  let raw: { url: string; server: Server };
  let hono: { url: string; server: Server };
  let advertisement: Uint8Array;
  const path = '/bench.git/info/refs?service=git-upload-pack';

  let ready: Promise<void> | undefined;
  const setup = () => (ready ??= start());
  async function start(): Promise<void> {
    sandbox = await createGitSandbox();
    root = await mkdtemp(join(tmpdir(), 'gitport-bench-gw-'));
    const history = await ensureHistory({ commits: sized(1500, 100), seed: 21 });
    await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, join(root, 'bench.git')]);
    // what `gitport serve` runs: the worker pool (2 workers, the machine's cores)
    const gw = createGateway({ backend: await createWorkerPoolBackend({ root, workers: 2, spawn: startTsWorker }) });
    gateway = await listen(gw, { port: 0 });
    const viaGit = createGateway({ backend: createGitProcessBackend({ root }) });
    gatewayGit = await listen(viaGit, { port: 0 });
    const first = await fetch(`${gateway.url}${path}`);
    advertisement = new Uint8Array(await first.arrayBuffer());
    const headers = {
      'content-type': 'application/x-git-upload-pack-advertisement',
      'cache-control': 'no-cache, max-age=0, must-revalidate',
      expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
      pragma: 'no-cache',
    };
    raw = await listenRaw((req, res) => {
      if (req.url === path) {
        res.writeHead(200, { ...headers, 'content-length': String(advertisement.byteLength) });
        res.end(advertisement);
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    const app = new Hono();
    app.get('/bench.git/info/refs', (c) => {
      if (c.req.query('service') !== 'git-upload-pack') return c.notFound();
      return c.body(advertisement as Uint8Array<ArrayBuffer>, 200, headers);
    });
    hono = await new Promise((resolve) => {
      const server = honoServe({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
        resolve({ url: `http://127.0.0.1:${info.port}`, server: server as Server }),
      );
    });
    // all three answer the same bytes
    for (const base of [raw.url, hono.url]) {
      const got = new Uint8Array(await (await fetch(`${base}${path}`)).arrayBuffer());
      if (Buffer.compare(got, advertisement) !== 0) throw new Error(`${base} serves different bytes`);
    }
  }

  afterAll(async () => {
    await gateway?.close();
    await gatewayGit?.close();
    raw?.server.close();
    hono?.server.close();
    await sandbox?.cleanup();
    await rm(root, { recursive: true, force: true });
  });

  for (const pipelining of [1, 10]) {
    bench(
      `info/refs, pipelining ${pipelining}`,
      async () => {
        await setup();
        const seconds = sized(4, 1);
        const rounds = sized(2, 1);
        const sums = { gateway: [] as Load[], raw: [] as Load[], hono: [] as Load[] };
        // warm every server up (JIT, connection setup) before anything is measured
        for (const base of [raw.url, hono.url, gateway.url]) await load(`${base}${path}`, 1, pipelining);
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? (['raw', 'hono', 'gateway'] as const) : (['gateway', 'hono', 'raw'] as const);
          for (const name of order) {
            const base = name === 'raw' ? raw.url : name === 'hono' ? hono.url : gateway.url;
            sums[name].push(await load(`${base}${path}`, seconds, pipelining));
          }
        }
        const avg = (list: Load[], key: keyof Load) => list.reduce((n, l) => n + l[key], 0) / list.length;
        const suffix = pipelining === 1 ? '' : `.pipelined`;
        const note = `${advertisement.byteLength} B advertisement, 50 connections${pipelining > 1 ? `, pipelining ${pipelining}` : ''}, autocannon in a separate process, ${seconds}s x ${rounds}`;
        record({
          id: `gateway.info-refs${suffix}.rps`,
          value: avg(sums.gateway, 'rps'),
          unit: 'req/s',
          peer: 'raw node:http',
          peerValue: avg(sums.raw, 'rps'),
          better: 'higher',
          goal: { min: 0.8, on: 'ratio', source: 'issue 8' },
          note,
        });
        record({
          id: `gateway.info-refs${suffix}.vs-hono.rps`,
          value: avg(sums.gateway, 'rps'),
          unit: 'req/s',
          peer: 'hono node-server',
          peerValue: avg(sums.hono, 'rps'),
          better: 'higher',
          note,
        });
        for (const p of ['p50', 'p99'] as const) {
          record({
            id: `gateway.info-refs${suffix}.${p}`,
            value: avg(sums.gateway, p),
            unit: 'ms',
            peer: 'raw node:http',
            peerValue: avg(sums.raw, p),
            better: 'lower',
            note,
          });
        }
      },
      once,
    );
  }

  bench(
    'clone through the gateway vs git http-backend',
    async () => {
      await setup();
      const backend = await startHttpBackend(root);
      try {
        let n = 0;
        const clone = async (base: string) => {
          const dest = sandbox.path(`clone-${n++}`);
          await sandbox.git(['clone', '--bare', '--quiet', `${base}/bench.git`, dest]);
          const count = await sandbox.git(['--git-dir', dest, 'rev-list', '--all', '--count']);
          if (Number(count) < sized(1500, 100)) throw new Error(`clone incomplete: ${count} commits`);
          await rm(dest, { recursive: true, force: true });
        };
        const runs = sized(5, 1);
        const ours = await medianMs(() => clone(gateway.url), { runs, warmup: sized(1, 0) });
        const theirs = await medianMs(() => clone(backend.url), { runs, warmup: sized(1, 0) });
        const gitBacked = await medianMs(() => clone(gatewayGit.url), { runs, warmup: sized(1, 0) });
        const what = `git clone --bare (protocol v2) of a ${sized(1500, 100)}-commit seeded history, median of ${runs}${QUICK ? ' (quick)' : ''}`;
        record({
          id: 'gateway.clone.ms',
          value: ours,
          unit: 'ms',
          peer: 'git http-backend',
          peerValue: theirs,
          better: 'lower',
          note: `${what}; the gateway's worker pool packs with gitport (what gitport serve runs)`,
        });
        record({
          id: 'gateway.clone.git-upload-pack-backend.ms',
          value: gitBacked,
          unit: 'ms',
          peer: 'git http-backend',
          peerValue: theirs,
          better: 'lower',
          note: `${what}; the gateway with its git-process backend (git upload-pack behind the gateway's HTTP layer)`,
        });
      } finally {
        await backend.close();
      }
    },
    once,
  );
});
