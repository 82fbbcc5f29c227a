import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';

import { expect, it } from 'vitest';

it('connects a bus to a Web Worker and over a MessageChannel in Chromium: requests, events, errors', async () => {
  const worker = new Worker(new URL('./bus.worker.ts', import.meta.url), { type: 'module' });
  const main = createBus({ id: 'main' });
  try {
    const peer = await main.connect(workerEndpoint(worker));
    expect(peer.id).toBe('worker');
    expect(await main.request('worker', 'double', 21)).toBe(42);
    const pong = new Promise((resolve) => main.on('pong', (payload) => resolve(payload)));
    main.send('worker', 'ping', { hello: 'chromium' });
    expect(await pong).toEqual({ hello: 'chromium' });
    await expect(main.request('worker', 'no-such-handler', 1)).rejects.toMatchObject({ code: expect.any(String) });

    // A second bus in this thread reaches the worker over a MessageChannel.
    const side = createBus({ id: 'side' });
    const channel = new MessageChannel();
    worker.postMessage({ type: 'join-port', port: channel.port2 }, [channel.port2]);
    const sidePeer = await side.connect(messagePortEndpoint(channel.port1));
    expect(sidePeer.id).toBe('worker');
    expect(await side.request('worker', 'double', 5)).toBe(10);
    side.close();
  } finally {
    main.close();
    worker.terminate();
  }
});
