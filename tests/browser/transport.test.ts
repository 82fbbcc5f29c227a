/**
 * The transport conformance suite in Chromium, over the bus between the main thread and a Web
 * Worker: once over the worker itself (postMessage on the Worker), once over a MessageChannel
 * whose other port was transferred to the worker.
 */
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import type { ConformancePair } from '@gitport/test-helpers/transport-conformance';
import { transportConformance } from '@gitport/test-helpers/transport-conformance';
import { listen, open, transportStats } from '@gitport/transport';

let pairs = 0;

async function workerPair(via: 'worker' | 'port'): Promise<ConformancePair> {
  const n = ++pairs;
  const farId = `far-${via}-${n}`;
  const url = new URL('./transport-far.worker.ts', import.meta.url);
  url.searchParams.set('via', via);
  const worker = new Worker(url, { type: 'module', name: farId });
  const near = createBus({ id: `near-${n}`, heartbeatInterval: 500, heartbeatMisses: 6 });
  if (via === 'worker') {
    await near.connect(workerEndpoint(worker));
  } else {
    const channel = new MessageChannel();
    worker.postMessage({ type: 'port', port: channel.port2 }, [channel.port2]);
    await near.connect(messagePortEndpoint(channel.port1));
  }
  return {
    local: {
      listen: (name, onStream, options) => listen(near, name, onStream, options),
      open: (peer, name, options) => open(near, peer, name, options),
      stats: () => transportStats(near),
    },
    remotePeer: farId,
    async kill() {
      worker.terminate();
    },
    async close() {
      near.close();
      worker.terminate();
    },
  };
}

transportConformance('bus to a Web Worker (Chromium)', () => workerPair('worker'), { bigBytes: 20_000_000 });
transportConformance('bus over a MessageChannel to a Web Worker (Chromium)', () => workerPair('port'), {
  bigBytes: 20_000_000,
});
