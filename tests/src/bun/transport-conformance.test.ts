/**
 * The transport conformance suite over Bun's MessageChannel, a hub and Bun worker threads: Bun's test
 * runner runs transport-conformance.bun.ts in a child process, and every case must pass there.
 */
import { expect, it } from 'vitest';
import { runBunSuite } from './bun-process.js';

it('passes every transport conformance case on Bun: in one thread, through a hub, to a Bun worker', async () => {
  const result = await runBunSuite('./transport-conformance.bun.ts');
  expect(
    result.cases.filter((c) => !c.passed),
    result.output,
  ).toEqual([]);
  expect(result.exitCode, result.output).toBe(0);
  const ofPair = (label: string) =>
    result.cases
      .filter((c) => c.suite.includes(label))
      .map((c) => c.name)
      .sort();
  const oneThread = ofPair('bus over MessageChannel on Bun, one thread');
  const worker = ofPair('bus to a Bun worker thread');
  const hub = ofPair('bus through a hub on Bun, one thread');
  expect(oneThread.length).toBeGreaterThanOrEqual(15);
  expect(worker).toEqual(oneThread);
  // the hub runs the same cases, its large-transfer case on fewer bytes (as on Node)
  expect(hub.length).toBe(oneThread.length);
  expect(hub).toContain('errors every open stream of a peer that dies mid-stream with TRANSPORT_PEER_LOST');
}, 300_000);
