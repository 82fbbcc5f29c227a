/**
 * One SSE server in a process of its own, for benchmarks/redis.bench.ts:
 *
 *   sse-instance.ts redis <root> <redis-url>   the gateway, ref events on Redis Streams
 *   sse-instance.ts memory <root>              the gateway alone (its hub is the event log)
 *   sse-instance.ts better-sse                 better-sse, one channel for every session
 *
 * Prints `listening on <url>` (the event stream of the `demo` repository); SIGTERM closes it.
 * On `{ type: 'publish', events, prefix?, intervalMs? }` it publishes that many ref updates the way a
 * push through it would (the gateway's event log, or its hub; a better-sse broadcast), a turn's
 * burst of ten at a time (or one every `intervalMs`), and answers `{ type: 'published' }`. Without `prefix` each ref ends in
 * `/t/<ms since the epoch>` taken just before its publish, which the load client reads latency from.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway } from '@gitport/gateway';
import { createGitProcessBackend, listen, RedisEventLog } from '@gitport/gateway/node';
import { createChannel, createSession } from 'better-sse';

const ZERO = '0'.repeat(40);
const ONE = '1'.repeat(40);
const [mode, root, redisUrl] = process.argv.slice(2);

let publish: (ref: string) => void;
let close: () => Promise<void>;
let url: string;

if (mode === 'better-sse') {
  const channel = createChannel();
  const server = createServer(async (req, res) => {
    const session = await createSession(req, res, { keepAlive: 15_000 });
    channel.register(session);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/demo.git/events`;
  publish = (ref) => channel.broadcast({ repo: 'demo', ref, old: ZERO, new: ONE }, 'ref-update');
  close = async () => {
    server.closeAllConnections();
    server.close();
  };
} else if ((mode === 'redis' && redisUrl !== undefined) || mode === 'memory') {
  if (root === undefined) throw new Error('usage: sse-instance.ts redis|memory <root> [redis-url]');
  const log = mode === 'redis' ? new RedisEventLog(redisUrl!) : undefined;
  const gateway = createGateway({
    backend: createGitProcessBackend({ root }),
    sse: { heartbeatMs: 15_000, maxSubscribers: 5_000 },
    eventLog: log === undefined ? undefined : (hub) => log.attach(hub),
  });
  await log?.ready();
  const running = await listen(gateway, { port: 0 });
  url = `${running.url}/demo.git/events`;
  // what the gateway does with a push's ref update: through the shared log, or to its hub
  publish = (ref) => (log ?? gateway.hub).publish({ repo: 'demo', ref, old: ZERO, new: ONE });
  close = () => running.close();
} else {
  throw new Error('usage: sse-instance.ts redis <root> <redis-url> | memory <root> | better-sse');
}

process.on('message', async (message: { type: string; events: number; prefix?: string; intervalMs?: number }) => {
  if (message.type !== 'publish') return;
  for (let i = 0; i < message.events; i++) {
    publish(
      message.prefix === undefined
        ? `refs/heads/t/${performance.timeOrigin + performance.now()}`
        : `refs/heads/${message.prefix}-${i}`,
    );
    if (message.intervalMs !== undefined) await new Promise((resolve) => setTimeout(resolve, message.intervalMs));
    else if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
  }
  process.send!({ type: 'published' });
});
process.once('SIGTERM', () => {
  close().then(() => process.exit(0));
});
process.stdout.write(`listening on ${url}\n`);
