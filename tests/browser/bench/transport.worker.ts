/**
 * In-browser transport benchmark, the Web Worker side: the far end of both the transport (a bus
 * peer listening on `bench-sink` and `bench-sink-4m` over a MessageChannel port) and the raw
 * MessagePort baseline (another MessageChannel port with a credit window), as
 * tests/src/transport/bench-peer.ts is for the Node benchmark. Both read every byte of every
 * chunk with the same function and answer the byte count and checksum.
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { listenBenchSinks, readEveryByte } from '../../src/transport/bench-shared.js';

const bus = createBus({ id: 'bench-peer' });

listenBenchSinks(bus);

// The raw baseline: {s, open: window} | {s, b: Uint8Array} | {s, end: true}; answers {s, credit}
// as it reads (in batches of a quarter window) and {s, total, sum} at the end.
function serveRaw(port: MessagePort): void {
  const raw = new Map<number, { window: number; ungranted: number; total: number; sum: number }>();
  port.addEventListener('message', (event: MessageEvent) => {
    const m = event.data as { s: number; open?: number; b?: Uint8Array; end?: boolean };
    if (m.open !== undefined) {
      raw.set(m.s, { window: m.open, ungranted: 0, total: 0, sum: 0 });
      return;
    }
    const state = raw.get(m.s)!;
    if (m.b !== undefined) {
      state.sum = (state.sum + readEveryByte(m.b)) | 0;
      state.total += m.b.byteLength;
      state.ungranted += m.b.byteLength;
      if (state.ungranted >= state.window / 4) {
        port.postMessage({ s: m.s, credit: state.ungranted });
        state.ungranted = 0;
      }
      return;
    }
    raw.delete(m.s);
    port.postMessage({ s: m.s, total: state.total, sum: state.sum });
  });
  port.start();
}

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; bus?: MessagePort; raw?: MessagePort };
  if (data?.type !== 'ports' || !data.bus || !data.raw) return;
  serveRaw(data.raw);
  void bus.connect(messagePortEndpoint(data.bus)).then(() => {
    (self as unknown as { postMessage(m: unknown): void }).postMessage({ type: 'connected' });
  });
});
