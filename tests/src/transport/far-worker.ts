/**
 * Worker-thread entry: the far side of the transport conformance suite, a bus peer serving
 * the conformance protocol (started with startTsWorker of @gitport/test-helpers/ts-worker).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { serveConformance } from '@gitport/test-helpers/transport-conformance-service';
import { listen, open, transportStats } from '@gitport/transport';

const { id } = workerData as { id: string };
const bus = createBus({ id });
serveConformance({
  listen: (name, onStream, options) => listen(bus, name, onStream, options),
  open: (peer, name, options) => open(bus, peer, name, options),
  stats: () => transportStats(bus),
});
if (!parentPort) throw new Error('far-worker must run in a worker thread');
await bus.connect(nodeEndpoint(parentPort));
