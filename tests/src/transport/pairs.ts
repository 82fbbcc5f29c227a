/** Pairs of transports over a real bus for the conformance suite: one thread, or a worker thread. */
import { MessageChannel, type MessagePort, type Worker, type WorkerOptions } from 'node:worker_threads';
import { type Bus, createBus, createHub } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import type { ConformancePair } from '@gitport/test-helpers/transport-conformance';
import { serveConformance, type TransportSide } from '@gitport/test-helpers/transport-conformance-service';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { listen, open, transportStats } from '@gitport/transport';

export const sideOf = (bus: Bus): TransportSide => ({
  listen: (name, onStream, options) => listen(bus, name, onStream, options),
  open: (peer, name, options) => open(bus, peer, name, options),
  stats: () => transportStats(bus),
});

let pairs = 0;

/** A bus endpoint over one end of a worker_threads MessageChannel. */
export const portEndpoint = (port: MessagePort) => nodeEndpoint(port);

/** Two buses over a MessageChannel in this thread; kill() closes the far port. */
export async function busChannelPair(): Promise<ConformancePair> {
  const n = ++pairs;
  const { port1, port2 } = new MessageChannel();
  const near = createBus({ id: `near-${n}` });
  const far = createBus({ id: `far-${n}` });
  const stop = serveConformance(sideOf(far));
  await Promise.all([near.connect(portEndpoint(port1)), far.connect(portEndpoint(port2))]);
  return {
    local: sideOf(near),
    remotePeer: far.id,
    async kill() {
      stop();
      port2.close();
    },
    async close() {
      stop();
      near.close();
      far.close();
      port1.close();
      port2.close();
    },
  };
}

/** This bus and the far one each connected to a hub in this thread; frames are routed through it. */
export async function busHubPair(): Promise<ConformancePair> {
  const n = ++pairs;
  const a = new MessageChannel();
  const b = new MessageChannel();
  const near = createBus({ id: `near-${n}` });
  const hub = createHub({ id: `hub-${n}` });
  const far = createBus({ id: `far-${n}` });
  const stop = serveConformance(sideOf(far));
  // The hub announces the far peer to this one: wait until this bus can route to it.
  const routed = new Promise<void>((resolve) => {
    const off = near.onPeer('connected', (peer) => {
      if (peer !== far.id) return;
      off();
      resolve();
    });
  });
  await Promise.all([
    routed,
    near.connect(portEndpoint(a.port1)),
    hub.connect(portEndpoint(a.port2)),
    far.connect(portEndpoint(b.port1)),
    hub.connect(portEndpoint(b.port2)),
  ]);
  return {
    local: sideOf(near),
    remotePeer: far.id,
    async kill() {
      stop();
      b.port1.close();
    },
    async close() {
      stop();
      for (const bus of [near, hub, far]) bus.close();
      for (const port of [a.port1, a.port2, b.port1, b.port2]) port.close();
    },
  };
}

/**
 * A bus here and a bus in a worker thread running the conformance service (far-worker.ts), the
 * thread started by `start` (`tag` goes into both buses' ids); kill() terminates it.
 */
export async function busWorkerPairWith(
  start: (entry: URL, options: WorkerOptions) => Worker,
  tag = '',
): Promise<ConformancePair> {
  const n = ++pairs;
  const near = createBus({ id: `near-${tag}${n}` });
  const farId = `far-${tag}worker-${n}`;
  const worker = start(new URL('./far-worker.ts', import.meta.url), { workerData: { id: farId } });
  const failed = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
  await Promise.race([near.connect(nodeEndpoint(worker)), failed]);
  failed.catch(() => {});
  return {
    local: sideOf(near),
    remotePeer: farId,
    async kill() {
      await worker.terminate();
    },
    async close() {
      near.close();
      await worker.terminate();
    },
  };
}

/** A bus here and a bus in a worker thread on Node (started through the TypeScript loader). */
export const busWorkerPair = (): Promise<ConformancePair> => busWorkerPairWith(startTsWorker);
