/**
 * The transport conformance suite on Bun, run by `bun test` (see transport-conformance.test.ts):
 * a bus over a MessageChannel in one thread, two buses through a hub in one thread (whose
 * peer-death case checks the hub's peer-left notice), and a bus to a Bun worker thread started on
 * the TypeScript entry itself (Bun runs it without a loader).
 */
import { Worker } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { type ConformancePair, transportConformance } from '@gitport/test-helpers/transport-conformance';
import { busChannelPair, busHubPair, sideOf } from '../transport/pairs.js';

let pairs = 0;

/** A bus here and a bus in a Bun worker thread running the conformance service; kill() terminates it. */
async function bunWorkerPair(): Promise<ConformancePair> {
  const n = ++pairs;
  const near = createBus({ id: `near-bun-${n}` });
  const farId = `far-bun-worker-${n}`;
  const worker = new Worker(new URL('../transport/far-worker.ts', import.meta.url), { workerData: { id: farId } });
  const failed = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
  await Promise.race([near.connect(nodeEndpoint(worker)), failed]);
  failed.catch(() => {});
  return {
    local: sideOf(near),
    remotePeer: farId,
    async kill() {
      await worker.terminate();
    },
    async close() {
      near.close();
      await worker.terminate();
    },
  };
}

transportConformance('bus over MessageChannel on Bun, one thread', busChannelPair);
transportConformance('bus to a Bun worker thread', bunWorkerPair);
transportConformance('bus through a hub on Bun, one thread', busHubPair, { bigBytes: 20 * 1000 * 1000 });
