/**
 * In-browser transport benchmark, the Web Worker side: the far end of both the transport (a bus
 * peer listening on `bench-sink` and `bench-sink-4m` over a MessageChannel port) and the raw
 * MessagePort baseline (another MessageChannel port with a credit window), as
 * tests/src/transport/bench-peer.ts is for the Node benchmark, with the same code
 * (bench-shared.ts). Both read every byte of every chunk with the same function and answer the
 * byte count and checksum.
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { domRawPort, listenBenchSinks, serveRaw } from '../../src/transport/bench-shared.js';

const bus = createBus({ id: 'bench-peer' });

listenBenchSinks(bus);

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; bus?: MessagePort; raw?: MessagePort };
  if (data?.type !== 'ports' || !data.bus || !data.raw) return;
  serveRaw(domRawPort(data.raw));
  void bus.connect(messagePortEndpoint(data.bus)).then(() => {
    (self as unknown as { postMessage(m: unknown): void }).postMessage({ type: 'connected' });
  });
});
