/**
 * The endpoint adapters take the real platform types without casts: a DOM MessagePort, Worker,
 * BroadcastChannel and worker scope, and node:worker_threads' MessagePort and Worker. The type
 * checks are compile-time (`pnpm typecheck` compiles this file); the runtime part connects two
 * buses through each Node kind the test process can create.
 */
import {
  BroadcastChannel as NodeBroadcastChannel,
  MessageChannel as NodeMessageChannel,
  type MessagePort as NodePort,
  type Worker as NodeWorker,
} from 'node:worker_threads';
import { broadcastChannelEndpoint, createBus, type Endpoint, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { describe, expect, expectTypeOf, it } from 'vitest';

describe('endpoint adapters accept the platform types as they are', () => {
  it('type-checks DOM and worker_threads objects without casts', () => {
    expectTypeOf(messagePortEndpoint).toBeCallableWith(null as unknown as MessagePort);
    expectTypeOf(workerEndpoint).toBeCallableWith(null as unknown as Worker);
    expectTypeOf(broadcastChannelEndpoint).toBeCallableWith(null as unknown as BroadcastChannel);
    expectTypeOf(nodeEndpoint).toBeCallableWith(null as unknown as NodePort);
    expectTypeOf(nodeEndpoint).toBeCallableWith(null as unknown as NodeWorker);
    // worker_threads ports and channels are EventTargets: the DOM-shaped adapters take them too.
    expectTypeOf(messagePortEndpoint).toBeCallableWith(null as unknown as NodePort);
    expectTypeOf(workerEndpoint).toBeCallableWith(null as unknown as NodePort);
    expectTypeOf(broadcastChannelEndpoint).toBeCallableWith(null as unknown as NodeBroadcastChannel);
    // The same, as plain calls the compiler checks (never run: the DOM objects do not exist here).
    const typed = (
      dom: { port: MessagePort; worker: Worker; channel: BroadcastChannel },
      node: { port: NodePort; worker: NodeWorker; channel: NodeBroadcastChannel },
    ): Endpoint[] => [
      messagePortEndpoint(dom.port),
      workerEndpoint(dom.worker),
      broadcastChannelEndpoint(dom.channel),
      nodeEndpoint(node.port),
      nodeEndpoint(node.worker),
      messagePortEndpoint(node.port),
      broadcastChannelEndpoint(node.channel),
    ];
    expect(typeof typed).toBe('function');
  });

  it('connects two buses over a worker_threads MessageChannel passed as it is', async () => {
    const { port1, port2 } = new NodeMessageChannel();
    const a = createBus({ id: 'a' });
    const b = createBus({ id: 'b' });
    try {
      await Promise.all([a.connect(nodeEndpoint(port1)), b.connect(nodeEndpoint(port2))]);
      b.handle('twice', (n) => (n as number) * 2);
      expect(await a.request('b', 'twice', 21)).toBe(42);
    } finally {
      a.close();
      b.close();
      port1.close();
    }
  });

  it('connects two buses over a worker_threads MessageChannel as DOM-style ports', async () => {
    const { port1, port2 } = new NodeMessageChannel();
    const a = createBus({ id: 'a', heartbeatInterval: 0 });
    const b = createBus({ id: 'b', heartbeatInterval: 0 });
    try {
      await Promise.all([a.connect(messagePortEndpoint(port1)), b.connect(messagePortEndpoint(port2))]);
      b.handle('twice', (n) => (n as number) * 2);
      expect(await a.request('b', 'twice', 5)).toBe(10);
    } finally {
      a.close();
      b.close();
      port1.close();
      port2.close();
    }
  });

  it('connects two buses over worker_threads BroadcastChannels passed as they are', async () => {
    const name = `gitport-endpoint-types-${process.pid}`;
    const left = new NodeBroadcastChannel(name);
    const right = new NodeBroadcastChannel(name);
    const a = createBus({ id: 'a', heartbeatInterval: 0 });
    const b = createBus({ id: 'b', heartbeatInterval: 0 });
    try {
      await Promise.all([a.connect(broadcastChannelEndpoint(left)), b.connect(broadcastChannelEndpoint(right))]);
      b.handle('twice', (n) => (n as number) * 2);
      expect(await a.request('b', 'twice', 6)).toBe(12);
    } finally {
      a.close();
      b.close();
      left.close();
      right.close();
    }
  });

  it('connects two buses over a global MessageChannel typed as the DOM one', async () => {
    const { port1, port2 } = new MessageChannel();
    const a = createBus({ id: 'a' });
    const b = createBus({ id: 'b' });
    try {
      await Promise.all([a.connect(messagePortEndpoint(port1)), b.connect(messagePortEndpoint(port2))]);
      b.handle('twice', (n) => (n as number) * 2);
      expect(await a.request('b', 'twice', 4)).toBe(8);
    } finally {
      a.close();
      b.close();
      port1.close();
      port2.close();
    }
  });
});
