/**
 * `gitport serve [--root DIR] [--host H] [--port P] [--workers N] [--token T] [--private]
 *                [--allow-anonymous-push] [--cors ORIGIN]... [--max-sse-connections N]
 *                [--max-sse-buffer BYTES] [--replay-cap N] [--node-http]
 *                [--redis redis://HOST:PORT[/DB]] [--no-demo-page] [limits]`
 *
 * Limits (the gateway's `limits` options): `--max-requests N`, `--max-pending-bodies N`,
 * `--max-pending-bodies-per-client N`,
 * `--max-discoveries N`, `--max-queued-discoveries N`, `--max-body-bytes N`,
 * `--body-idle-timeout MS`, `--min-body-rate BYTES_PER_S`, `--body-timeout MS`.
 *
 * Serves every bare repository `DIR/<name>.git` at `/<name>.git` over smart HTTP with SSE ref
 * events (DESIGN.md, "Command line"). Prints exactly one line, `gitport listening on
 * http://HOST:PORT`, once connections are accepted; SIGINT/SIGTERM stop accepting, let requests in
 * flight (pushes) finish, and exit 0. An empty or missing root gets `demo.git`.
 *
 * Under Bun the gateway runs on `Bun.serve` (`@gitport/gateway/bun`), or on Bun's node:http with
 * `--node-http`; either way a Bun older than the gateway's minimum is refused at startup.
 *
 * With `--redis`, ref events go through Redis Streams shared by every `gitport serve` on the same
 * root and Redis (several instances behind a load balancer); the server waits for Redis a moment
 * before listening, then serves anyway (degraded in `/healthz`) until Redis answers.
 *
 * `--replay-cap N` bounds the events a client reconnecting with `Last-Event-ID` is replayed: each
 * repository's ring in memory, or each Redis stream (`MAXLEN ~ N`) with `--redis`. A client that
 * missed more gets `event: reset` and refetches its refs.
 */
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { createDemoPage, createGateway, type GatewayLimits, isGatewayError } from '@gitport/gateway';
import { isBun, requireBunVersion, serveBun } from '@gitport/gateway/bun';
import {
  checkRedisUrl,
  createDemoRepository,
  createWorkerPoolBackend,
  listen,
  nodeDemoAssets,
  RedisEventLog,
  RepositoryRoot,
} from '@gitport/gateway/node';

export interface ServeOptions {
  root: string;
  host: string;
  port: number;
  workers: number;
  token: string | undefined;
  private: boolean;
  allowAnonymousPush: boolean;
  cors: string[];
  /** SSE connections at once; more get 503 with Retry-After. */
  maxSseConnections: number;
  /** Bytes of events queued per SSE connection before it gets a reset (or, if it reads nothing, is dropped). */
  maxSseBuffer: number;
  /** Events kept per repository (and per Redis stream) for `Last-Event-ID` replay. */
  replayCap: number;
  /** The demo page at `/` (not with --private: it lists the repositories). */
  demoPage: boolean;
  /** The gateway's limits given on the command line (absent ones keep the gateway's defaults). */
  limits: GatewayLimits;
  /** Serve through node:http even under Bun (where `Bun.serve` is the default). */
  nodeHttp: boolean;
  /** Redis for ref events shared between instances (`redis://HOST:PORT[/DB]`); none: one process. */
  redis: string | undefined;
}

/** How long `serve` waits for Redis before it listens without it. */
const REDIS_STARTUP_WAIT_MS = 5_000;

/** Limit flags, each one of the gateway's `limits` options, with the range a value may take. */
const LIMIT_FLAGS: Record<string, { option: keyof GatewayLimits; min: number; max: number }> = {
  '--max-requests': { option: 'maxConcurrentRequests', min: 1, max: 1_000_000 },
  '--max-pending-bodies': { option: 'maxPendingBodies', min: 1, max: 1_000_000 },
  '--max-pending-bodies-per-client': { option: 'maxPendingBodiesPerClient', min: 0, max: 1_000_000 },
  '--max-discoveries': { option: 'maxConcurrentDiscoveries', min: 1, max: 1_000_000 },
  '--max-queued-discoveries': { option: 'maxQueuedDiscoveries', min: 0, max: 10_000_000 },
  '--max-body-bytes': { option: 'maxBodyBytes', min: 1, max: Number.MAX_SAFE_INTEGER },
  '--body-idle-timeout': { option: 'bodyIdleMs', min: 0, max: 2_147_483_647 },
  '--min-body-rate': { option: 'minBodyBytesPerSecond', min: 0, max: Number.MAX_SAFE_INTEGER },
  '--body-timeout': { option: 'bodyTimeoutMs', min: 0, max: 2_147_483_647 },
};

export class UsageError extends Error {
  readonly code = 'CLI_USAGE';
}

const usage = `usage: gitport serve [--root DIR] [--host H] [--port P] [--workers N] [--token T] [--private]
                    [--allow-anonymous-push] [--cors ORIGIN]... [--max-sse-connections N]
                    [--max-sse-buffer BYTES] [--replay-cap N] [--node-http]
                    [--redis redis://HOST:PORT[/DB]] [--no-demo-page]
                    [--max-requests N] [--max-pending-bodies N] [--max-pending-bodies-per-client N]
                    [--max-discoveries N]
                    [--max-queued-discoveries N] [--max-body-bytes N] [--body-idle-timeout MS]
                    [--min-body-rate BYTES_PER_S] [--body-timeout MS]

  --redis URL      share ref events with every gitport serve on the same --root through Redis
                   Streams (redis://HOST:PORT[/DB]); several instances behind a load balancer
  --replay-cap N   events kept per repository (per Redis stream with --redis) for clients that
                   reconnect with Last-Event-ID (default 1024); one that missed more gets
                   event: reset and refetches its refs
`;

export function parseServeArgs(args: readonly string[]): ServeOptions {
  const options: ServeOptions = {
    root: './repos',
    host: '127.0.0.1',
    port: 8080,
    workers: availableParallelism(),
    token: undefined,
    private: false,
    allowAnonymousPush: false,
    cors: [],
    maxSseConnections: 512,
    maxSseBuffer: 1 << 20,
    replayCap: 1024,
    demoPage: true,
    limits: {},
    nodeHttp: false,
    redis: undefined,
  };
  for (let i = 0; i < args.length; i++) {
    let arg = args[i]!;
    let inline: string | undefined;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      inline = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const value = (): string => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    const integer = (min: number, max: number): number => {
      const v = value();
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max)
        throw new UsageError(`${arg}: expected ${min}..${max}`);
      return Number(v);
    };
    switch (arg) {
      case '--root':
        options.root = value();
        break;
      case '--host':
        options.host = value();
        break;
      case '--port':
        options.port = integer(0, 65535);
        break;
      case '--workers':
        options.workers = integer(1, 256);
        break;
      case '--token':
        options.token = value();
        if (options.token === '') throw new UsageError('--token must not be empty');
        break;
      case '--private':
        options.private = true;
        break;
      case '--allow-anonymous-push':
        options.allowAnonymousPush = true;
        break;
      case '--cors':
        options.cors.push(value());
        break;
      case '--max-sse-connections':
        options.maxSseConnections = integer(0, 1_000_000);
        break;
      case '--no-demo-page':
        options.demoPage = false;
        break;
      case '--max-sse-buffer':
        options.maxSseBuffer = integer(1024, 2 ** 30);
        break;
      case '--replay-cap':
        options.replayCap = integer(1, 1_000_000);
        break;
      case '--node-http':
        options.nodeHttp = true;
        break;
      case '--redis':
        try {
          options.redis = checkRedisUrl(value());
        } catch (error) {
          if (isGatewayError(error)) throw new UsageError(`--redis: ${error.message}`);
          throw error;
        }
        break;
      default: {
        const limit = LIMIT_FLAGS[arg];
        if (limit === undefined) throw new UsageError(`unknown option ${arg}`);
        options.limits[limit.option] = integer(limit.min, limit.max);
      }
    }
  }
  if (options.private && options.token === undefined) throw new UsageError('--private needs --token');
  return options;
}

/**
 * V8's tier-up budget for `gitport serve` (bytecode executed between a function's profiler ticks,
 * four times Node 20's default): a request runs many functions a few thousand times each (an
 * incremental fetch's negotiation, bitmap walk, range reuse and writing), and with the default
 * each of them is compiled by TurboFan on background threads while the request runs, costing more
 * CPU than the optimized code saves before the request ends. Long loops (a clone's walk, a
 * delta search) reach the larger budget soon and are optimized all the same.
 */
const SERVE_INTERRUPT_BUDGET = 4 * 67_584;

/**
 * The V8 flags `gitport serve` sets before its worker pool starts its isolates (V8's flags are
 * the process's; an isolate reads them when it starts).
 *
 * Besides the tier-up budget, the repository workers compile their optimized code on their own
 * thread instead of on V8's shared background threads (`--no-concurrent-recompilation`). Each
 * background thread takes its compilations' working memory from a malloc arena of its own, and
 * an arena keeps the pages its largest compilations touched: with them, the private memory a
 * server kept after clones of a large repository grew with every clone, and its peak with it. A
 * repository worker is a thread of its own, so compiling there delays only its own request, by
 * the few milliseconds a compilation takes.
 *
 * And V8's heuristics favour memory over speed (`--optimize-for-size`, as `gitport index-pack`
 * sets them): an isolate's heap grows in smaller steps past what it keeps alive. What a clone or
 * a fetch allocates on the JS heap is short-lived (its bulk lives in typed arrays), yet with the
 * default steps each worker's heap kept growing over the first clones and held pages no object
 * needed again, the largest share of the private memory a server kept between requests.
 */
const SERVE_V8_FLAGS = [
  `--interrupt-budget=${SERVE_INTERRUPT_BUDGET}`,
  '--no-concurrent-recompilation',
  '--optimize-for-size',
];

export async function serve(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(usage);
    return 0;
  }
  let options: ServeOptions;
  try {
    options = parseServeArgs(args);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`gitport serve: ${error.message}\n\n${usage}`);
      return 2;
    }
    throw error;
  }
  const bun = isBun();
  if (bun) {
    try {
      requireBunVersion();
    } catch (error) {
      process.stderr.write(`gitport serve: ${(error as Error).message}\n`);
      return 1;
    }
  }
  if (!bun) for (const flag of SERVE_V8_FLAGS) setFlagsFromString(flag);
  const root = resolve(options.root);
  await mkdir(root, { recursive: true });
  if ((await new RepositoryRoot(root).list()).length === 0) {
    await createDemoRepository(root, 'demo');
    process.stderr.write(`gitport: created ${resolve(root, 'demo.git')}\n`);
  }

  const backend = await createWorkerPoolBackend({ root, workers: options.workers });
  const log =
    options.redis === undefined ? undefined : new RedisEventLog(options.redis, { replayCap: options.replayCap });
  const gateway = createGateway({
    backend,
    token: options.token,
    private: options.private,
    allowAnonymousPush: options.allowAnonymousPush,
    cors: options.cors,
    sse: {
      maxSubscribers: options.maxSseConnections,
      maxBufferedBytes: options.maxSseBuffer,
      replayCap: options.replayCap,
    },
    limits: options.limits,
    eventLog: log === undefined ? undefined : (hub) => log.attach(hub),
    ...(options.demoPage && !options.private ? { page: demoPage(root) } : {}),
  });
  if (log !== undefined) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = await Promise.race([
      log.ready().then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), REDIS_STARTUP_WAIT_MS))),
    ]);
    clearTimeout(timer);
    if (!waited) process.stderr.write(`gitport: ${log.degraded}; serving, events resume when it answers\n`);
  }
  let server: { port: number; close(): Promise<void> };
  try {
    const at = { host: options.host, port: options.port };
    server = bun && !options.nodeHttp ? await serveBun(gateway, at) : await listen(gateway, at);
  } catch (error) {
    // the worker threads would keep the process alive
    await gateway.close();
    await backend.close();
    process.stderr.write(
      `gitport serve: cannot listen on ${options.host}:${options.port}: ${(error as Error).message}\n`,
    );
    return 1;
  }
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  process.stdout.write(`gitport listening on http://${shownHost}:${server.port}\n`);
  if (bun)
    process.stderr.write(`gitport: Bun ${process.versions.bun}, ${options.nodeHttp ? 'node:http' : 'Bun.serve'}\n`);

  return new Promise<number>((done) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`gitport: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      server.close().then(
        () => done(0),
        (error) => {
          process.stderr.write(`gitport: shutdown failed: ${error?.message ?? error}\n`);
          done(1);
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function demoPage(root: string) {
  const repositories = new RepositoryRoot(root);
  return createDemoPage({ listRepositories: () => repositories.list(), readAsset: nodeDemoAssets() });
}
