/** Worker-thread entry of the bus conformance suite's test peer (started with startTsWorker). */
import { parentPort, workerData } from 'node:worker_threads';
import { startTestPeer } from '@gitport/test-helpers/bus-test-peer';
import { nodeEndpoint } from './node.js';

const data = workerData as { id: string; port?: import('node:worker_threads').MessagePort };
const endpoint = nodeEndpoint(data.port ?? parentPort!);
await startTestPeer(endpoint, { id: data.id, exit: () => process.exit(0) });
