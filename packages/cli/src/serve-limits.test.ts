/**
 * The limit flags of `gitport serve`: each sets one of the gateway's `limits` options, absent
 * ones keep the gateway's defaults, and a value out of range is a usage error.
 */
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from './serve.js';

describe('gitport serve limit flags', () => {
  it('maps each flag to its gateway limit', () => {
    expect(parseServeArgs([]).limits).toEqual({});
    const options = parseServeArgs([
      '--max-requests',
      '8',
      '--max-pending-bodies=16',
      '--max-pending-bodies-per-client',
      '0',
      '--max-discoveries',
      '4',
      '--max-queued-discoveries',
      '0',
      '--max-body-bytes',
      '1048576',
      '--body-idle-timeout',
      '5000',
      '--min-body-rate',
      '0',
      '--body-timeout',
      '60000',
    ]);
    expect(options.limits).toEqual({
      maxConcurrentRequests: 8,
      maxPendingBodies: 16,
      maxPendingBodiesPerClient: 0,
      maxConcurrentDiscoveries: 4,
      maxQueuedDiscoveries: 0,
      maxBodyBytes: 1 << 20,
      bodyIdleMs: 5000,
      minBodyBytesPerSecond: 0,
      bodyTimeoutMs: 60_000,
    });
  });

  it('refuses values out of range or not integers', () => {
    for (const args of [
      ['--max-requests', '0'],
      ['--max-requests', '-1'],
      ['--max-discoveries', '1.5'],
      ['--body-timeout', '2147483648'],
      ['--min-body-rate'],
      ['--max-body-bytes', 'lots'],
    ]) {
      expect(() => parseServeArgs(args), args.join(' ')).toThrowError(expect.objectContaining({ code: 'CLI_USAGE' }));
    }
  });
});
