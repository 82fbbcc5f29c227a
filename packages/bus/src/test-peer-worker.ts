/** Worker-thread entry of the conformance suite's test peer (started with tests/src/ts-worker.ts). */
import { parentPort, workerData } from 'node:worker_threads';
import { nodeEndpoint } from './node.js';
import { startTestPeer } from './test-peer.js';

const data = workerData as { id: string; port?: import('node:worker_threads').MessagePort };
const endpoint = nodeEndpoint(data.port ?? parentPort!);
await startTestPeer(endpoint, { id: data.id, exit: () => process.exit(0) });
