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

  /** Two buses over the endpoints `left` and `right`: one asks the other to double `n`; then all is closed. */
  async function doubles(
    left: Endpoint,
    right: Endpoint,
    n: number,
    close: () => void,
    options: { heartbeatInterval?: number } = {},
  ): Promise<unknown> {
    const a = createBus({ id: 'a', ...options });
    const b = createBus({ id: 'b', ...options });
    try {
      await Promise.all([a.connect(left), b.connect(right)]);
      b.handle('twice', (value) => (value as number) * 2);
      return await a.request('b', 'twice', n);
    } finally {
      a.close();
      b.close();
      close();
    }
  }

  it('connects two buses over a worker_threads MessageChannel passed as it is', async () => {
    const { port1, port2 } = new NodeMessageChannel();
    expect(await doubles(nodeEndpoint(port1), nodeEndpoint(port2), 21, () => port1.close())).toBe(42);
  });

  it('connects two buses over a worker_threads MessageChannel as DOM-style ports', async () => {
    const { port1, port2 } = new NodeMessageChannel();
    const close = () => {
      port1.close();
      port2.close();
    };
    const doubled = await doubles(messagePortEndpoint(port1), messagePortEndpoint(port2), 5, close, {
      heartbeatInterval: 0,
    });
    expect(doubled).toBe(10);
  });

  it('connects two buses over worker_threads BroadcastChannels passed as they are', async () => {
    const name = `gitport-endpoint-types-${process.pid}`;
    const left = new NodeBroadcastChannel(name);
    const right = new NodeBroadcastChannel(name);
    const close = () => {
      left.close();
      right.close();
    };
    const doubled = await doubles(broadcastChannelEndpoint(left), broadcastChannelEndpoint(right), 6, close, {
      heartbeatInterval: 0,
    });
    expect(doubled).toBe(12);
  });

  it('connects two buses over a global MessageChannel typed as the DOM one', async () => {
    const { port1, port2 } = new MessageChannel();
    const close = () => {
      port1.close();
      port2.close();
    };
    expect(await doubles(messagePortEndpoint(port1), messagePortEndpoint(port2), 4, close)).toBe(8);
  });
});
