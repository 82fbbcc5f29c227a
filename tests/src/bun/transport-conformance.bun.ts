/**
 * The transport conformance suite on Bun, run by `bun test` (see transport-conformance.test.ts):
 * a bus over a MessageChannel in one thread, two buses through a hub in one thread (whose
 * peer-death case checks the hub's peer-left notice), and a bus to a Bun worker thread started on
 * the TypeScript entry itself (Bun runs it without a loader).
 */
import { Worker } from 'node:worker_threads';
import { transportConformance } from '@gitport/test-helpers/transport-conformance';
import { busChannelPair, busHubPair, busWorkerPairWith } from '../transport/pairs.js';

/** A bus here and a bus in a Bun worker thread started on the TypeScript entry itself. */
const bunWorkerPair = () => busWorkerPairWith((entry, options) => new Worker(entry, options), 'bun-');

transportConformance('bus over MessageChannel on Bun, one thread', busChannelPair);
transportConformance('bus to a Bun worker thread', bunWorkerPair);
transportConformance('bus through a hub on Bun, one thread', busHubPair, { bigBytes: 20 * 1000 * 1000 });
