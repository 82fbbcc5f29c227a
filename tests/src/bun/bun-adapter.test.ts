/**
 * The Bun.serve adapter checked inside Bun: Bun's test runner runs bun-adapter.bun.ts in a child
 * process (version check, event stream past the idle timeout, body limit, client abort, close),
 * and every case must pass there.
 */
import { expect, it } from 'vitest';
import { runBunSuite } from './bun-process.js';

it('passes every Bun.serve adapter case inside Bun', async () => {
  const result = await runBunSuite('./bun-adapter.bun.ts');
  expect(
    result.cases.filter((c) => !c.passed),
    result.output,
  ).toEqual([]);
  expect(result.exitCode, result.output).toBe(0);
  expect(result.cases.map((c) => c.name).sort()).toEqual([
    'accepts the running Bun and refuses an older one with GATEWAY_RUNTIME_TOO_OLD',
    'closes gracefully: event streams end and new connections are refused',
    'keeps an event stream open past the idle timeout and delivers the next event',
    'lets go of a request whose client disconnects while sending its body',
    'refuses a body over the gateway limit with 413 GATEWAY_BODY_TOO_LARGE, declared or chunked',
    'still closes a quiet request that is not an event stream after the idle timeout',
  ]);
}, 300_000);
