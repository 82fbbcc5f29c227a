/**
 * The far side of the bus conformance suite in a Web Worker: the bus package's test peer, named
 * by the worker's `name`, joined over the worker scope or over a MessagePort the parent sends.
 */
import { type Endpoint, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { startTestPeer } from '@gitport/test-helpers/bus-test-peer';

// This project compiles with the DOM library, where `self` is a Window: the worker scope is typed here.
type WorkerScope = Parameters<typeof workerEndpoint>[0] & typeof self;

const start = (endpoint: Endpoint) => void startTestPeer(endpoint, { id: self.name });
if (new URL(self.location.href).searchParams.get('via') === 'port') {
  self.addEventListener('message', (event: MessageEvent) => {
    const data = event.data as { type?: string; port?: MessagePort };
    if (data?.type === 'port' && data.port) start(messagePortEndpoint(data.port));
  });
} else {
  start(workerEndpoint(self as unknown as WorkerScope));
}
