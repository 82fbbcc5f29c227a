/** Shared helpers for the gitport tests: two buses joined by a MessageChannel in this thread. */
import { MessageChannel } from 'node:worker_threads';
import { type Bus, createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';

export async function connectedBuses(a: string, b: string): Promise<{ left: Bus; right: Bus; close(): void }> {
  const channel = new MessageChannel();
  const left = createBus({ id: a });
  const right = createBus({ id: b });
  await Promise.all([left.connect(nodeEndpoint(channel.port1)), right.connect(nodeEndpoint(channel.port2))]);
  return {
    left,
    right,
    close() {
      left.close();
      right.close();
      channel.port1.close();
      channel.port2.close();
    },
  };
}
