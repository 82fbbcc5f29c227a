/**
 * Entry point of a gateway worker thread: a bus peer that hosts every repository under the root
 * with the gitport library (its smart-HTTP stream listener runs the protocol's stateless
 * upload-pack and receive-pack, so packing and indexing happen here, never on the gateway's
 * thread) and signals ref updates to the gateway over the bus.
 *
 * workerData: { id: string; root: string }
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { host, nodeRepositories } from 'gitport/node';

const { id, root } = workerData as { id: string; root: string };
if (parentPort === null) throw new Error('the gateway worker entry must run in a worker thread');
const bus = createBus({ id });
host(bus, nodeRepositories(root), {
  control: false,
  receivePack: { fsckObjects: true },
  onError: (error, context) => {
    // typed errors (a stable `code`) are bad requests or clients that went away; anything else is a bug worth a line
    if (typeof (error as { code?: unknown }).code === 'string') return;
    console.error(`gitport worker ${id}: ${context.service} ${context.repository}:`, error);
  },
});
await bus.connect(nodeEndpoint(parentPort));
