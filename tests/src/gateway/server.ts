/**
 * A gateway on 127.0.0.1 port 0 over a temporary root, for the gateway's integration tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway, type GatewayOptions } from '@gitport/gateway';
import {
  createGitProcessBackend,
  createWorkerPoolBackend,
  type ListenOptions,
  listen,
  type RunningServer,
} from '@gitport/gateway/node';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';

export interface TestServer extends AsyncDisposable {
  url: string;
  host: string;
  port: number;
  root: string;
  gateway: Gateway;
  server: RunningServer;
  close(): Promise<void>;
}

export type BackendKind = 'git-process' | 'worker-pool';

/** The backends every integration suite runs against (GITPORT_GATEWAY_BACKEND narrows it). */
export const backends: BackendKind[] = (process.env.GITPORT_GATEWAY_BACKEND?.split(',') as
  | BackendKind[]
  | undefined) ?? ['worker-pool', 'git-process'];

export async function startServer(
  options: Partial<Omit<GatewayOptions, 'backend'>> & {
    root?: string;
    listen?: ListenOptions;
    backend?: BackendKind;
    /** How long cached advertisements are trusted (default 0: checked against the disk every time). */
    revalidateMs?: number;
  } = {},
): Promise<TestServer> {
  const ownRoot = options.root === undefined;
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'gitport-gw-')));
  const backend =
    options.backend === 'worker-pool'
      ? await createWorkerPoolBackend({
          root,
          workers: 2,
          revalidateMs: options.revalidateMs ?? 0,
          spawn: startTsWorker,
        })
      : createGitProcessBackend({ root, revalidateMs: options.revalidateMs ?? 0 });
  const gateway = createGateway({ ...options, backend });
  const server = await listen(gateway, { port: 0, host: '127.0.0.1', closeGraceMs: 5_000, ...options.listen });
  const close = async () => {
    await server.close();
    if (ownRoot) await rm(root, { recursive: true, force: true });
  };
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    root,
    gateway,
    server,
    close,
    [Symbol.asyncDispose]: close,
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Uint8Array;
}

/** One HTTP request with node:http, the path sent exactly as given (no URL normalisation). */
export function rawRequest(
  server: { host: string; port: number },
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: Uint8Array | string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: server.host, port: server.port, method, path, headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: new Uint8Array(Buffer.concat(chunks)) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
