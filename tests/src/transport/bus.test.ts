/** The transport's use of the real bus: unknown peers, closing either bus, stats. */
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { listen, open, transportStats } from '@gitport/transport';
import { describe, expect, it } from 'vitest';
import { portEndpoint } from './pairs.js';

async function connected() {
  const { port1, port2 } = new MessageChannel();
  const near = createBus({ id: 'near' });
  const far = createBus({ id: 'far' });
  await Promise.all([near.connect(portEndpoint(port1)), far.connect(portEndpoint(port2))]);
  return { near, far, ports: [port1, port2] };
}

describe('transport over @gitport/bus', () => {
  it('refuses a peer the bus does not know with TRANSPORT_PEER_LOST', async () => {
    const { near, far, ports } = await connected();
    await expect(open(near, 'nobody', 'x')).rejects.toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
    near.close();
    far.close();
    for (const p of ports) p.close();
  });

  it('copies a buffer given for transfer twice in one tick instead of failing the post', async () => {
    // The bus posts on a microtask: the first write's buffer is not detached yet at the second.
    const { near, far, ports } = await connected();
    const received = new Promise<number>((resolve) => {
      listen(far, 'count', async (stream) => {
        let n = 0;
        for await (const part of stream) n += part.byteLength;
        resolve(n);
      });
    });
    const stream = await open(near, 'far', 'count');
    const chunk = new Uint8Array(40_000).fill(5);
    await Promise.all([stream.write(chunk, { transfer: true }), stream.write(chunk, { transfer: true })]);
    await stream.end();
    expect(await received).toBe(80_000);
    near.close();
    far.close();
    for (const p of ports) p.close();
  });

  it('fails open streams with TRANSPORT_CLOSED when our bus closes, TRANSPORT_PEER_LOST on theirs', async () => {
    const { near, far, ports } = await connected();
    const accepted: Promise<unknown>[] = [];
    let bothAccepted!: () => void;
    const accepting = new Promise<void>((resolve) => {
      bothAccepted = resolve;
    });
    listen(far, 'hold', (stream) => {
      accepted.push(stream.closed.catch((error: unknown) => error));
      if (accepted.length === 2) bothAccepted();
    });
    const a = await open(near, 'far', 'hold');
    // The second open is optimistic (the name was accepted once): it resolves before the far
    // side has the stream, so wait for both there.
    const b = await open(near, 'far', 'hold');
    await a.write(new Uint8Array(1000));
    await accepting;
    expect(transportStats(near)).toMatchObject({ streams: 2 });
    const reading = (async () => {
      for await (const _ of a);
    })();
    near.close();
    await expect(reading).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
    await expect(b.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
    expect(transportStats(near)).toMatchObject({ streams: 0 });
    // The far side hears the bye: its streams are lost.
    const farErrors = await Promise.all(accepted);
    expect(farErrors).toHaveLength(2);
    for (const error of farErrors) expect(error).toMatchObject({ code: 'TRANSPORT_PEER_LOST' });
    expect(transportStats(far)).toMatchObject({ streams: 0 });
    await expect(open(near, 'far', 'hold')).rejects.toMatchObject({ code: 'TRANSPORT_CLOSED' });
    far.close();
    for (const p of ports) p.close();
  });
});
