import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createBus } from './index.js';
import { nodeEndpoint } from './node.js';

async function pair(optionsA = {}, optionsB = {}) {
  const channel = new MessageChannel();
  const a = createBus({ id: 'a', ...optionsA });
  const b = createBus({ id: 'b', ...optionsB });
  const [pa, pb] = await Promise.all([a.connect(nodeEndpoint(channel.port1)), b.connect(nodeEndpoint(channel.port2))]);
  return { a, b, pa, pb, channel };
}

describe('bus basics', () => {
  it('connects, sends, requests, loses', async () => {
    const { a, b, pa, pb, channel } = await pair();
    expect(pa.id).toBe('b');
    expect(pb.id).toBe('a');
    const got = new Promise((resolve) => b.on('hi', (payload, meta) => resolve([payload, meta.from])));
    a.send('b', 'hi', { x: 1 });
    expect(await got).toEqual([{ x: 1 }, 'a']);
    b.handle('add', (p) => (p as number[])[0]! + (p as number[])[1]!);
    expect(await a.request('b', 'add', [2, 3])).toBe(5);
    const lost = new Promise((resolve) => a.onPeer('lost', (peer, reason) => resolve([peer, reason?.code])));
    channel.port2.close();
    expect(await lost).toEqual(['b', 'BUS_PEER_LOST']);
    a.close();
    b.close();
  });
});
