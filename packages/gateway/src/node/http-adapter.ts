/**
 * The thin node:http adapter: an IncomingMessage becomes a GatewayRequest (its body read
 * pull-based, so a slow backend pauses the socket), a GatewayReply is written with backpressure
 * (the next chunk is pulled only after `write` drained), and a client that disconnects aborts the
 * work through the request's AbortSignal.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BodySource } from '../body.js';
import type { Gateway } from '../handler.js';
import type { GatewayReply } from '../reply.js';
import type { GatewayRequest } from '../request.js';
import { refuseEvents } from '../response.js';
import type { SseSink } from '../sse-hub.js';
import { release } from './released-buffers.js';

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

/** Header names node:http keeps only the first value of (it discards the duplicates). */
const FIRST_ONLY = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/**
 * A request as the gateway reads it, made of the IncomingMessage without copying: headers are
 * looked up in `rawHeaders` (node builds `req.headers` lazily, and discovery needs one or two of
 * them), the body and the AbortSignal are made on first use.
 */
class NodeRequest implements GatewayRequest {
  readonly method: string;
  readonly url: string;
  private controller: AbortController | undefined;

  get clientAddress(): string | undefined {
    return this.req.socket.remoteAddress;
  }
  private stream: AsyncGenerator<Uint8Array> | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {
    this.method = req.method ?? 'GET';
    this.url = req.url ?? '/';
  }

  get headers(): this {
    return this;
  }

  /** One header, combined the way node:http combines `req.headers`. */
  get(name: string): string | null {
    const raw = this.req.rawHeaders;
    const wanted = name.toLowerCase();
    let found: string | null = null;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const key = raw[i]!;
      if (key.length !== wanted.length || key.toLowerCase() !== wanted) continue;
      const value = raw[i + 1]!;
      if (found === null) found = value;
      else if (FIRST_ONLY.has(wanted)) break;
      else found += wanted === 'cookie' ? `; ${value}` : `, ${value}`;
    }
    return found;
  }

  get body(): BodySource | null {
    const method = this.method;
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return null;
    this.stream ??= bodyOf(this.req);
    return this.stream;
  }

  /** Aborted when the client disconnects before the response is complete. */
  get signal(): AbortSignal {
    return this.abortController().signal;
  }

  abortController(): AbortController {
    if (this.controller !== undefined) return this.controller;
    const made = new AbortController();
    this.controller = made;
    const { req, res } = this;
    if (res.destroyed || req.destroyed) made.abort(new Error('client disconnected'));
    else {
      res.on('close', () => {
        if (!res.writableFinished) made.abort(new Error('client disconnected'));
      });
    }
    return made;
  }
}

/** Whether `res` can take more bytes: after a drain, false once it is closed (already, or while waiting). */
function waitWritable(res: ServerResponse): Promise<boolean> {
  // a response that closed before this was called never emits 'close' again
  if (res.destroyed || res.closed) return Promise.resolve(false);
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
  const failed = (res: ServerResponse) => (error: unknown) => {
    console.error('gitport gateway: unhandled', error);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end();
  };
  return (req, res) => {
    const request = new NodeRequest(req, res);
    const reply = gateway.dispatch(request);
    // a reply ready at once (a cached advertisement) is written in the same tick, with no promise
    if (!(reply instanceof Promise)) {
      if (reply.body.kind === 'bytes') writeBytes(reply, reply.body.bytes, res);
      else void write(reply, req, res, request, gateway, maxSse).catch(failed(res));
      return;
    }
    reply.then((ready) => write(ready, req, res, request, gateway, maxSse)).catch(failed(res));
  };
}

/** A body already in memory: the status line, headers and body leave in one `end`. */
function writeBytes(reply: GatewayReply, bytes: Uint8Array, res: ServerResponse): void {
  let headers = reply.headers;
  if (headers['content-length'] === undefined) {
    // replies may share their headers (cached discovery replies carry their length): never mutate them
    headers = { ...headers, 'content-length': String(bytes.byteLength) };
  }
  if (reply.status >= 400 && !res.req.complete) {
    // a refusal before the body was read (too slow, too large): close rather than read the rest
    headers = { ...headers, connection: 'close' };
  }
  res.writeHead(reply.status, headers);
  res.end(bytes);
}

async function write(
  reply: GatewayReply,
  req: IncomingMessage,
  res: ServerResponse,
  request: NodeRequest,
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
      writeBytes(reply, body.bytes, res);
      return;
    case 'events': {
      if (res.destroyed) return;
      const refused = refuseEvents(gateway.hub, reply);
      if (refused !== undefined) return writeBytes(refused, refused.body.bytes, res);
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
        onReady(listener) {
          res.on('drain', listener);
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
      const controller = request.abortController();
      res.writeHead(reply.status, reply.headers);
      const it = body.chunks[Symbol.asyncIterator]();
      try {
        for (;;) {
          const step = await it.next();
          if (step.done) break;
          const chunk = step.value;
          // a chunk given up by its producer is freed once the socket has written it
          const written = (error?: Error | null) => {
            if (error == null) release(chunk);
          };
          if (!res.write(chunk, written) && !(await waitWritable(res))) {
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
