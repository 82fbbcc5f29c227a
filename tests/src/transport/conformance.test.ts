import { transportConformance } from '@gitport/test-helpers/transport-conformance';
import { busChannelPair, busHubPair, busWorkerPair } from './pairs.js';

transportConformance('bus over MessageChannel, one thread', busChannelPair);
transportConformance('bus to a worker thread', busWorkerPair);
transportConformance('bus through a hub, one thread', busHubPair, { bigBytes: 20 * 1000 * 1000 });
