/**
 * The far side of the transport conformance suite in a Web Worker: a bus peer (named by the
 * worker's `name`) serving the conformance protocol. It joins its parent over the worker scope,
 * or over a MessagePort the parent sends (`{ type: 'port', port }`).
 */
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { serveConformance } from '@gitport/test-helpers/transport-conformance-service';
import { listen, open, transportStats } from '@gitport/transport';

type WorkerLike = Parameters<typeof workerEndpoint>[0];

const bus = createBus({ id: self.name, heartbeatInterval: 500, heartbeatMisses: 6 });
serveConformance({
  listen: (name, onStream, options) => listen(bus, name, onStream, options),
  open: (peer, name, options) => open(bus, peer, name, options),
  stats: () => transportStats(bus),
});
const viaPort = new URL(self.location.href).searchParams.get('via') === 'port';
if (viaPort) {
  self.addEventListener('message', (event: MessageEvent) => {
    const data = event.data as { type?: string; port?: MessagePort };
    if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port));
  });
} else {
  void bus.connect(workerEndpoint(self as unknown as WorkerLike));
}
