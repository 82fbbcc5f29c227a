import { transportConformance } from '../../../packages/transport/src/test-conformance.js';
import { busChannelPair, busWorkerPair } from './pairs.js';

transportConformance('bus over MessageChannel, one thread', busChannelPair);
transportConformance('bus to a worker thread', busWorkerPair);
