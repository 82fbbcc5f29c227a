/** The HTTP load generator of the gateway benches: autocannon in a process of its own, 50 connections. */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const autocannon = require.resolve('autocannon/autocannon.js');

export interface Load {
  /** Mean requests per second. */
  rps: number;
  requests: number;
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
}

/**
 * GETs `url` for `seconds` over 50 connections (`pipelining` requests in flight on each when
 * given); throws unless every response was a 2xx.
 */
export function load(url: string, seconds: number, pipelining?: number): Promise<Load> {
  const args = ['-c', '50', '-d', String(seconds), ...(pipelining === undefined ? [] : ['-p', String(pipelining)])];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [autocannon, ...args, '-j', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        const r = JSON.parse(out);
        if (code !== 0 || r.non2xx > 0 || r.errors > 0 || r.requests.total === 0) {
          throw new Error(`autocannon ${url}: code ${code}, non2xx ${r.non2xx}, errors ${r.errors}`);
        }
        resolve({ rps: r.requests.average, requests: r.requests.total, p50: r.latency.p50, p99: r.latency.p99 });
      } catch (error) {
        reject(error);
      }
    });
  });
}
