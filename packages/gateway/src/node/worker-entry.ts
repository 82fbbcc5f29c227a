/**
 * Entry point of a gateway worker thread: a bus peer that hosts every repository under the root
 * with the gitport library (its smart-HTTP stream listener runs the protocol's stateless
 * upload-pack and receive-pack, so packing and indexing happen here, never on the gateway's
 * thread) and signals ref updates to the gateway over the bus. It answers `WORKER_STATS` with
 * what it is serving, and logs every failure its clients did not cause (worker-error.ts).
 *
 * workerData: { id: string; root: string }
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { host, nodeRepositories } from 'gitport/node';
import { describeWorkerError, isClientError } from './worker-error.js';
import { WORKER_STATS } from './worker-stats.js';

const { id, root } = workerData as { id: string; root: string };
if (parentPort === null) throw new Error('the gateway worker entry must run in a worker thread');
const bus = createBus({ id });
const hosted = host(bus, nodeRepositories(root), {
  control: false,
  receivePack: { fsckObjects: true },
  onError: (error, context) => {
    // the client was told (a status, ERR, side-band 3); logging its mistakes would let it fill the log
    if (isClientError(error, context.service)) return;
    console.error(describeWorkerError(id, error, context), error);
  },
});
bus.handle(WORKER_STATS, () => ({ httpWork: hosted.httpWork }));
await bus.connect(nodeEndpoint(parentPort));
