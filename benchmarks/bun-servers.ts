/**
 * Run by Bun for bun.bench.ts: three servers in one Bun process answering
 * `GET /bench.git/info/refs?service=git-upload-pack` with the same bytes: the gateway on
 * Bun.serve (worker pool backend, what `gitport serve` runs), a raw `Bun.serve` handler and Hono on
 * `Bun.serve`. Prints one JSON line `{ pid, gateway, raw, hono }` (base URLs) once all three
 * answer the same bytes, and stops on SIGTERM.
 *
 *   bun benchmarks/bun-servers.ts ROOT
 */
import { createGateway } from '@gitport/gateway';
import { type BunServer, serveBun } from '@gitport/gateway/bun';
import { createWorkerPoolBackend } from '@gitport/gateway/node';
import { Hono } from 'hono';

interface BunServe {
  serve(options: { hostname: string; port: number; fetch(request: Request): Response | Promise<Response> }): BunServer;
}
const bun = (globalThis as { Bun?: BunServe }).Bun;
if (bun === undefined) throw new Error('bun-servers.ts runs on Bun');

const root = process.argv[2];
if (root === undefined) throw new Error('usage: bun benchmarks/bun-servers.ts ROOT');
const path = '/bench.git/info/refs?service=git-upload-pack';

const gateway = await serveBun(createGateway({ backend: await createWorkerPoolBackend({ root, workers: 2 }) }), {
  port: 0,
});
const advertisement = new Uint8Array(await (await fetch(`${gateway.url}${path}`)).arrayBuffer());
const headers = {
  'content-type': 'application/x-git-upload-pack-advertisement',
  'cache-control': 'no-cache, max-age=0, must-revalidate',
  expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  pragma: 'no-cache',
};

const raw = bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    const url = request.url;
    if (url.endsWith(path) && url.indexOf('/', 8) === url.length - path.length) {
      return new Response(advertisement, { headers });
    }
    return new Response(null, { status: 404 });
  },
});

const app = new Hono();
app.get('/bench.git/info/refs', (c) => {
  if (c.req.query('service') !== 'git-upload-pack') return c.notFound();
  return c.body(advertisement as Uint8Array<ArrayBuffer>, 200, headers);
});
const hono = bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch });

const urls = {
  gateway: gateway.url,
  raw: `http://127.0.0.1:${raw.port}`,
  hono: `http://127.0.0.1:${hono.port}`,
};
for (const base of [urls.raw, urls.hono]) {
  const got = new Uint8Array(await (await fetch(`${base}${path}`)).arrayBuffer());
  if (Buffer.compare(got, advertisement) !== 0) throw new Error(`${base} serves different bytes`);
}
process.stdout.write(
  `${JSON.stringify({ pid: process.pid, bun: process.versions.bun, ...urls, bytes: advertisement.byteLength })}\n`,
);

process.once('SIGTERM', () => {
  void Promise.all([gateway.close(), raw.stop(true), hono.stop(true)]).then(() => process.exit(0));
});
