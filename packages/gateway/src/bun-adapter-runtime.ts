/**
 * The parts of Bun's runtime the Bun adapter uses, typed structurally (the gateway compiles
 * without Bun's type package), and the check of the running Bun's version.
 *
 * The minimum is the Bun release the project's suite runs on (the `bun` dev dependency): older
 * releases had MessagePort-transfer and chunked-upload bugs that the worker pool and pushes run
 * into, and are refused at startup with a typed error instead of failing mid-request.
 */
import { GatewayError } from './index.js';

/** The oldest Bun release gitport runs on. */
export const MIN_BUN_VERSION = '1.4.5';

/** The server `Bun.serve` returns, as far as the adapter uses it. */
export interface BunServer {
  readonly port: number;
  readonly hostname: string;
  /** Stops listening; with `true`, also closes every connection at once. Settles once none is left. */
  stop(closeActiveConnections?: boolean): Promise<void>;
  /** Sets one request's idle timeout in seconds; 0 disables it. */
  timeout(request: Request, seconds: number): void;
  requestIP(request: Request): { address: string } | null;
}

export interface BunServeOptions {
  hostname: string;
  port: number;
  /** Seconds a connection may stay quiet (0: never closed for being quiet; at most 255). */
  idleTimeout: number;
  maxRequestBodySize: number;
  development: boolean;
  fetch(request: Request, server: BunServer): Response | Promise<Response>;
  error(error: Error): Response;
}

export interface BunRuntime {
  readonly version: string;
  serve(options: BunServeOptions): BunServer;
}

/** Bun's global, or undefined on another runtime. */
export function bunRuntime(): BunRuntime | undefined {
  return (globalThis as { Bun?: BunRuntime }).Bun;
}

/** Whether this process runs on Bun. */
export function isBun(): boolean {
  return bunRuntime() !== undefined;
}

/** Compares two `major.minor.patch` versions (a pre-release or build suffix is ignored). */
export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a);
  const right = parseVersion(b);
  for (let i = 0; i < 3; i++) {
    const diff = left[i]! - right[i]!;
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

function parseVersion(version: string): [number, number, number] {
  const match = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(version.trim());
  if (match === null) {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', `not a version: ${JSON.stringify(version)}`, { status: 500 });
  }
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/**
 * Throws GATEWAY_RUNTIME_TOO_OLD when `version` (default: the running Bun's) is older than
 * MIN_BUN_VERSION, and GATEWAY_NOT_BUN when no version is given and this is not Bun.
 */
export function requireBunVersion(version: string | undefined = bunRuntime()?.version): void {
  if (version === undefined) throw new GatewayError('GATEWAY_NOT_BUN', 'this runs on Bun only', { status: 500 });
  if (compareVersions(version, MIN_BUN_VERSION) < 0) {
    throw new GatewayError(
      'GATEWAY_RUNTIME_TOO_OLD',
      `Bun ${version} is older than ${MIN_BUN_VERSION}, the oldest release gitport runs on: upgrade Bun`,
      { status: 500 },
    );
  }
}

/** The running Bun, checked against MIN_BUN_VERSION. */
export function requireBun(): BunRuntime {
  const bun = bunRuntime();
  requireBunVersion(bun?.version);
  return bun!;
}
