import { BroadcastChannel, MessageChannel, type Worker } from 'node:worker_threads';
import { busConformance } from '@gitport/test-helpers/bus-conformance';
import { startTestPeer } from '@gitport/test-helpers/bus-test-peer';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
// Node's MessagePort and BroadcastChannel are EventTargets shaped like the DOM ones the adapters take.
import { broadcastChannelEndpoint, messagePortEndpoint } from './index.js';
import { nodeEndpoint } from './node.js';

let counter = 0;

busConformance('worker_threads MessageChannel in one thread (nodeEndpoint)', async () => {
  const { port1, port2 } = new MessageChannel();
  const remote = startTestPeer(nodeEndpoint(port2), { id: 'remote' });
  return {
    endpoint: nodeEndpoint(port1),
    remoteId: 'remote',
    ready: remote,
    kill: () => port2.close(),
    dispose: async () => {
      (await remote).close();
      port1.close();
      port2.close();
    },
  };
});

busConformance(
  'MessagePort as a DOM port (messagePortEndpoint: no close event, heartbeats)',
  async () => {
    const { port1, port2 } = new MessageChannel();
    const remote = startTestPeer(messagePortEndpoint(port2), { id: 'remote' });
    return {
      endpoint: messagePortEndpoint(port1),
      remoteId: 'remote',
      ready: remote,
      kill: async () => {
        // The remote stops listening and answering without saying goodbye.
        (await remote).close = () => {};
        port2.close();
      },
      dispose: async () => {
        port1.close();
        port2.close();
      },
    };
  },
  { bus: { heartbeatInterval: 20, heartbeatMisses: 2 } },
);

busConformance(
  'BroadcastChannel (broadcastChannelEndpoint)',
  async () => {
    const name = `gitport-bus-conformance-${process.pid}-${counter++}`;
    const local = new BroadcastChannel(name);
    const far = new BroadcastChannel(name);
    const remote = startTestPeer(broadcastChannelEndpoint(far), { id: 'remote' });
    return {
      endpoint: broadcastChannelEndpoint(local),
      remoteId: 'remote',
      ready: remote,
      kill: () => far.close(),
      dispose: async () => {
        local.close();
        far.close();
        (await remote).close();
      },
    };
  },
  { transfer: false, bus: { heartbeatInterval: 20, heartbeatMisses: 2 } },
);

function worker(id: string, port?: import('node:worker_threads').MessagePort): Worker {
  return startTsWorker(new URL('./test-peer-worker.ts', import.meta.url), {
    workerData: { id, port },
    transferList: port ? [port] : [],
  });
}

busConformance('worker_threads Worker (nodeEndpoint on both sides)', async () => {
  const thread = worker('worker');
  return {
    endpoint: nodeEndpoint(thread),
    remoteId: 'worker',
    kill: async () => {
      await thread.terminate();
    },
    dispose: async () => {
      await thread.terminate();
    },
  };
});

busConformance('worker_threads MessagePort transferred to a worker', async () => {
  const { port1, port2 } = new MessageChannel();
  const thread = worker('worker-port', port2);
  return {
    endpoint: nodeEndpoint(port1),
    remoteId: 'worker-port',
    kill: async () => {
      await thread.terminate();
    },
    dispose: async () => {
      port1.close();
      await thread.terminate();
    },
  };
});
