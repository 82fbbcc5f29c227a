/**
 * A node:http proxy in front of a smart-HTTP server, standing in for what sits before real git
 * hosts: Basic auth (401 with `WWW-Authenticate` until the right credentials come), a moved
 * repository (`301` from an old path to the new one), a server that speaks only protocol v0
 * (the `Git-Protocol` header dropped). It logs every request it saw. It can also hold a discovery
 * GET until a POST comes, to show a client that sends its first command without waiting.
 */
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FrontProxyOptions {
  /** Requests need `Authorization: Basic base64(user:password)`. */
  basicAuth?: { user: string; password: string };
  /** Requests under this path prefix are redirected (301) to the same path without it. */
  movedPrefix?: string;
  /** Forward a discovery GET (`/info/refs`) only once a POST has come, or after 5 s. */
  holdDiscovery?: boolean;
  /** Every request waits this long before it is forwarded: one network round trip (benchmarks). */
  delayMs?: number;
  /** Drop `Git-Protocol` (the server behind then answers in v0). */
  v0Only?: boolean;
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** A held discovery GET: what let it go on. */
  released?: 'post' | 'timeout';
}

const HOLD_MS = 5_000;

export interface FrontProxy {
  url: string;
  seen: SeenRequest[];
  /** While true, every request is answered 503 (the server is away). */
  refusing: boolean;
  /** Cuts every open connection (a dropped network). */
  cut(): void;
  close(): Promise<void>;
}

export async function startFrontProxy(target: string, options: FrontProxyOptions = {}): Promise<FrontProxy> {
  const behind = new URL(target);
  const seen: SeenRequest[] = [];
  const state = { refusing: false };
  /** Held discovery GETs, let go by the next POST. */
  const held: (() => void)[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse, released?: SeenRequest['released']): void => {
    const path = req.url ?? '/';
    seen.push({ method: req.method ?? 'GET', path, headers: { ...req.headers }, ...(released ? { released } : {}) });
    if (state.refusing) {
      req.resume();
      res.writeHead(503, { 'retry-after': '1' });
      res.end('front proxy: away');
      return;
    }
    if (options.basicAuth) {
      const expected = `Basic ${Buffer.from(`${options.basicAuth.user}:${options.basicAuth.password}`).toString('base64')}`;
      if (req.headers.authorization !== expected) {
        req.resume();
        res.writeHead(401, { 'www-authenticate': 'Basic realm="front"', 'content-type': 'text/plain' });
        res.end('front proxy: credentials needed');
        return;
      }
    }
    if (options.movedPrefix && path.startsWith(options.movedPrefix)) {
      req.resume();
      res.writeHead(301, { location: path.slice(options.movedPrefix.length) });
      res.end();
      return;
    }
    const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: behind.host };
    delete headers.authorization;
    if (options.v0Only) delete headers['git-protocol'];
    const out = forward({ host: behind.hostname, port: behind.port, method: req.method, path, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  };
  const server = createServer((req, res) => {
    if (options.delayMs !== undefined) {
      // the body waits too (handle's pipe resumes it)
      req.pause();
      setTimeout(() => handle(req, res), options.delayMs);
      return;
    }
    if (req.method === 'POST') for (const release of held.splice(0)) release();
    if (!options.holdDiscovery || req.method !== 'GET' || !req.url?.includes('/info/refs')) return handle(req, res);
    const go = () => {
      clearTimeout(timer);
      handle(req, res, 'post');
    };
    const timer = setTimeout(() => {
      held.splice(held.indexOf(go), 1);
      handle(req, res, 'timeout');
    }, HOLD_MS);
    held.push(go);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    get refusing() {
      return state.refusing;
    },
    set refusing(value: boolean) {
      state.refusing = value;
    },
    cut: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
