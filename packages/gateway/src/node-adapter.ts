/**
 * The thin node:http adapter: an IncomingMessage becomes a GatewayRequest (its body read
 * pull-based, so a slow backend pauses the socket), a GatewayReply is written with backpressure
 * (the next chunk is pulled only after `write` drained), and a client that disconnects aborts the
 * work through the request's AbortSignal.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Gateway, GatewayReply, GatewayRequest } from './handler.js';
import type { SseSink } from './sse-hub.js';

export interface NodeListenerOptions {
  /** Bytes an SSE client may have unsent before it is dropped (default: the hub's maxBufferedBytes). */
  maxSseBufferedBytes?: number;
}

export interface ListenOptions extends NodeListenerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Time allowed to send the request headers, ms (default 20 000). */
  headersTimeout?: number;
  /** Socket inactivity allowed while a request or response is in progress, ms (default 120 000; SSE exempt). */
  idleTimeout?: number;
  /** Keep-alive idle time between requests, ms (default 5 000). */
  keepAliveTimeout?: number;
  /** Requests in flight are given this long to finish on close, ms (default 30 000). */
  closeGraceMs?: number;
}

export interface RunningServer {
  readonly server: Server;
  readonly host: string;
  readonly port: number;
  /** `http://HOST:PORT` */
  readonly url: string;
  /** Stops accepting, ends event streams, waits for requests in flight (up to the grace time). */
  close(): Promise<void>;
}

function toUint8(chunk: Buffer | string): Uint8Array {
  if (typeof chunk === 'string') return new TextEncoder().encode(chunk);
  return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

async function* bodyOf(req: IncomingMessage): AsyncGenerator<Uint8Array> {
  for await (const chunk of req as AsyncIterable<Buffer>) yield toUint8(chunk);
}

class NodeHeaders {
  constructor(private readonly raw: IncomingMessage['headers']) {}
  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(name.toLowerCase() === 'cookie' ? '; ' : ', ') : v;
  }
}

function waitWritable(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** A `(req, res)` listener running the gateway. */
export function createNodeListener(
  gateway: Gateway,
  options: NodeListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const maxSse = options.maxSseBufferedBytes ?? gateway.hub.maxBufferedBytes;
  return (req, res) => {
    // the AbortSignal is made on first use: discovery requests answered from the cache never need one
    let controller: AbortController | undefined;
    const signal = (): AbortController => {
      if (controller !== undefined) return controller;
      const made = new AbortController();
      controller = made;
      if (res.destroyed || req.destroyed) made.abort(new Error('client disconnected'));
      else {
        res.on('close', () => {
          if (!res.writableFinished) made.abort(new Error('client disconnected'));
        });
      }
      return made;
    };
    const method = req.method ?? 'GET';
    const request: GatewayRequest = {
      method,
      url: req.url ?? '/',
      headers: new NodeHeaders(req.headers),
      body: method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? null : bodyOf(req),
      get signal() {
        return signal().signal;
      },
    };
    gateway.handle(request).then(
      (reply) => write(reply, req, res, signal, gateway, maxSse),
      (error) => {
        console.error('gitport gateway: unhandled', error);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end();
      },
    );
  };
}

async function write(
  reply: GatewayReply,
  req: IncomingMessage,
  res: ServerResponse,
  controllerOf: () => AbortController,
  gateway: Gateway,
  maxSse: number,
): Promise<void> {
  const body = reply.body;
  switch (body.kind) {
    case 'none':
      res.writeHead(reply.status, reply.headers);
      res.end();
      return;
    case 'bytes':
      reply.headers['content-length'] = String(body.bytes.byteLength);
      res.writeHead(reply.status, reply.headers);
      res.end(body.bytes);
      return;
    case 'events': {
      if (res.destroyed) return;
      if (!gateway.hub.accepting) {
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
        res.end('too many event subscribers\n');
        return;
      }
      req.socket.setTimeout(0);
      req.socket.setNoDelay(true);
      res.writeHead(reply.status, reply.headers);
      // events published in one tick leave in one write per connection (cork until the tick ends)
      let corked = false;
      const uncork = () => {
        corked = false;
        res.uncork();
      };
      const sink: SseSink = {
        write(bytes) {
          if (res.destroyed) return false;
          if (!corked) {
            corked = true;
            res.cork();
            process.nextTick(uncork);
          }
          res.write(bytes);
          return res.writableLength <= maxSse;
        },
        close() {
          // a dropped slow client gets no more bytes; destroy so buffered ones are not awaited
          if (res.writableLength > maxSse) res.destroy();
          else res.end();
        },
      };
      let unsubscribe: () => void;
      try {
        unsubscribe = gateway.hub.subscribe(sink, body.options);
      } catch {
        res.end();
        return;
      }
      res.on('close', unsubscribe);
      return;
    }
    case 'stream': {
      const controller = controllerOf();
      res.writeHead(reply.status, reply.headers);
      const it = body.chunks[Symbol.asyncIterator]();
      try {
        for (;;) {
          const step = await it.next();
          if (step.done) break;
          if (!res.write(step.value) && !(await waitWritable(res))) {
            await it.return?.();
            return;
          }
        }
        res.end();
      } catch (error) {
        // the status line is gone: the only honest signal left is an incomplete response
        controller.abort(error);
        res.destroy();
      }
      return;
    }
  }
}

/** Starts an HTTP server running the gateway. */
export function listen(gateway: Gateway, options: ListenOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const headersTimeout = options.headersTimeout ?? 20_000;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: 0,
      keepAliveTimeout: options.keepAliveTimeout ?? 5_000,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2))),
    },
    createNodeListener(gateway, options),
  );
  server.timeout = options.idleTimeout ?? 120_000;
  server.on('timeout', (socket) => socket.destroy());
  server.on('clientError', (error: Error & { code?: string }, socket) => {
    if (!socket.writable) return void socket.destroy();
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      let closing: Promise<void> | undefined;
      resolve({
        server,
        host: address.address,
        port: address.port,
        url: `http://${shownHost}:${address.port}`,
        close() {
          closing ??= (async () => {
            const stopped = new Promise<void>((r) => server.close(() => r()));
            server.closeIdleConnections();
            await gateway.close();
            const grace = options.closeGraceMs ?? 30_000;
            let timer: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([
              stopped,
              new Promise<void>((r) => {
                timer = setTimeout(() => {
                  server.closeAllConnections();
                  r();
                }, grace);
              }),
            ]);
            clearTimeout(timer);
            await gateway.backend.close();
          })();
          return closing;
        },
      });
    });
  });
}
