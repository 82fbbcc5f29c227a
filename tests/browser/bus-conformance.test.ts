/**
 * The bus conformance suite in Chromium: over a DOM MessageChannel in this thread, over a Web
 * Worker, and over a MessageChannel transferred to a Web Worker. None of these endpoints has a
 * close event, so peer loss is found by heartbeats.
 */
import { messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { busConformance } from '@gitport/test-helpers/bus-conformance';
import { startTestPeer } from '@gitport/test-helpers/bus-test-peer';

// Tolerant of a loaded machine (a busy page or worker must not look dead), quick enough for the peer-loss tests.
const heartbeats = { bus: { heartbeatInterval: 250, heartbeatMisses: 6 } };
let counter = 0;

busConformance(
  'DOM MessageChannel in one thread (Chromium)',
  async () => {
    const { port1, port2 } = new MessageChannel();
    const remote = startTestPeer(messagePortEndpoint(port2), { id: 'remote' });
    return {
      endpoint: messagePortEndpoint(port1),
      remoteId: 'remote',
      ready: remote,
      kill: async () => {
        (await remote).close = () => {};
        port2.close();
      },
      dispose: async () => {
        port1.close();
        port2.close();
      },
    };
  },
  heartbeats,
);

function peerWorker(via: 'worker' | 'port', id: string): Worker {
  const url = new URL('./bus-peer.worker.ts', import.meta.url);
  url.searchParams.set('via', via);
  return new Worker(url, { type: 'module', name: id });
}

busConformance(
  'Web Worker (Chromium)',
  async () => {
    const id = `worker-${counter++}`;
    const worker = peerWorker('worker', id);
    return {
      endpoint: workerEndpoint(worker),
      remoteId: id,
      kill: () => worker.terminate(),
      dispose: () => worker.terminate(),
    };
  },
  heartbeats,
);

busConformance(
  'MessageChannel transferred to a Web Worker (Chromium)',
  async () => {
    const id = `worker-port-${counter++}`;
    const worker = peerWorker('port', id);
    const { port1, port2 } = new MessageChannel();
    worker.postMessage({ type: 'port', port: port2 }, [port2]);
    return {
      endpoint: messagePortEndpoint(port1),
      remoteId: id,
      kill: () => worker.terminate(),
      dispose: () => {
        port1.close();
        worker.terminate();
      },
    };
  },
  heartbeats,
);
