/**
 * SSE load client for benchmarks, run in its own process (child_process.fork): holds N event
 * stream connections and measures what arrives. Messages from the parent:
 *   { type: 'connect', url, connections, headers? }  -> { type: 'connected', ms }
 *   { type: 'expect', events }                       -> { type: 'received', deliveries, ms, p50, p99 }
 *   { type: 'storm', url | urls, connections, lastEventId, expect } -> { type: 'stormed', ms, bytes }
 *     (with `urls`, the clients go to each in turn)
 *   { type: 'close' }
 * Latency: each event's ref ends in `/t/<ms since epoch, fractional>` written just before publish.
 */
import { request } from 'node:http';

const sockets = [];
let expected = 0;
let deliveries = 0;
let latencies = [];
let firstAt = 0;
let onDone;

function now() {
  return performance.timeOrigin + performance.now();
}

function open(url, headers, onData) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.setEncoding('utf8');
      let first = true;
      res.on('data', (chunk) => {
        if (first) {
          first = false;
          resolve(req);
        }
        onData(chunk);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function count(chunk) {
  let at = 0;
  for (;;) {
    const i = chunk.indexOf('/t/', at);
    if (i < 0) break;
    const end = chunk.indexOf('"', i);
    const sent = Number(chunk.slice(i + 3, end));
    at = end;
    if (!Number.isFinite(sent)) continue;
    if (deliveries === 0) firstAt = now();
    deliveries++;
    latencies.push(now() - sent);
    if (deliveries === expected && onDone) onDone();
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

process.on('message', async (msg) => {
  if (msg.type === 'connect') {
    const start = now();
    const batch = 100;
    for (let i = 0; i < msg.connections; i += batch) {
      const n = Math.min(batch, msg.connections - i);
      sockets.push(...(await Promise.all(Array.from({ length: n }, () => open(msg.url, msg.headers ?? {}, count)))));
    }
    process.send({ type: 'connected', ms: now() - start });
  } else if (msg.type === 'expect') {
    deliveries = 0;
    latencies = [];
    expected = msg.events * sockets.length;
    const start = now();
    onDone = () => {
      const sorted = latencies.sort((a, b) => a - b);
      process.send({
        type: 'received',
        deliveries,
        ms: now() - start,
        spreadMs: now() - firstAt,
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99),
      });
      onDone = undefined;
    };
    process.send({ type: 'armed' });
  } else if (msg.type === 'storm') {
    const start = now();
    let bytes = 0;
    let complete = 0;
    const clients = [];
    const urls = msg.urls ?? [msg.url];
    await new Promise((resolve, reject) => {
      for (let i = 0; i < msg.connections; i++) {
        let seen = 0;
        open(urls[i % urls.length], { 'last-event-id': msg.lastEventId }, (chunk) => {
          bytes += chunk.length;
          let at = 0;
          for (;;) {
            const j = chunk.indexOf('event: ref-update', at);
            if (j < 0) break;
            at = j + 1;
            seen++;
            if (seen === msg.expect) {
              complete++;
              if (complete === msg.connections) resolve();
            }
          }
        }).then((req) => clients.push(req), reject);
      }
    });
    process.send({ type: 'stormed', ms: now() - start, bytes });
    for (const c of clients) c.destroy();
  } else if (msg.type === 'close') {
    for (const s of sockets) s.destroy();
    process.exit(0);
  }
});
