/**
 * `git http-backend` behind node:http (a minimal CGI bridge), the reference server the gateway is
 * compared with in benchmarks: the same repositories, served by git's own smart HTTP program.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpBackendOptions {
  /**
   * An origin allowed by CORS (as a browser page on another origin needs): preflights are
   * answered, and every reply carries the CORS headers.
   */
  cors?: string;
}

export async function startHttpBackend(
  root: string,
  options: HttpBackendOptions = {},
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const cors: Record<string, string> = options.cors
    ? {
        'Access-Control-Allow-Origin': options.cors,
        'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Content-Type, Content-Encoding, Git-Protocol, Authorization',
        'Access-Control-Max-Age': '600',
        Vary: 'Origin',
      }
    : {};
  const server = createServer((req, res) => {
    if (options.cors && req.method === 'OPTIONS') {
      req.resume();
      res.writeHead(204, cors);
      res.end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: '127.0.0.1',
      REMOTE_USER: 'bench',
      GATEWAY_INTERFACE: 'CGI/1.1',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = req.headers['git-protocol'] as string;
    const child = spawn('git', ['-c', 'http.receivepack=true', 'http-backend'], {
      env,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {});
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        if (!res.write(chunk)) {
          child.stdout.pause();
          res.once('drain', () => child.stdout.resume());
        }
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, { ...headers, ...cors });
      const rest = head.subarray(end + 4);
      if (rest.length > 0) res.write(rest);
    });
    child.stdout.on('end', () => res.end());
    res.on('close', () => child.kill());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
