/**
 * In-browser transport benchmark, the Web Worker side: the far end of the transport (a bus peer
 * listening on `bench-sink` and `bench-sink-4m` over the MessageChannel port it is given as `bus`)
 * or of the raw MessagePort baseline (a port with a credit window, given as `raw`), as
 * tests/src/transport/bench-peer.ts is for the Node benchmark, with the same code
 * (bench-shared.ts); the page starts one worker for each side. Both read every byte of every
 * chunk with the same function and answer the byte count and checksum.
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { domRawPort, listenBenchSinks, serveRaw } from '../../src/transport/bench-shared.js';

const connected = () => (self as unknown as { postMessage(m: unknown): void }).postMessage({ type: 'connected' });

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; bus?: MessagePort; raw?: MessagePort };
  if (data?.type !== 'ports') return;
  if (data.raw) {
    serveRaw(domRawPort(data.raw));
    connected();
  } else if (data.bus) {
    const bus = createBus({ id: 'bench-peer' });
    listenBenchSinks(bus);
    void bus.connect(messagePortEndpoint(data.bus)).then(connected);
  }
});
