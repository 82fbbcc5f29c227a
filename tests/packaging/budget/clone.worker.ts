/** The smallest worker that clones: a repository from a peer on the bus into memory, with a work tree. */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { busRemote, MemoryFs } from 'gitport';

self.onmessage = async (event: MessageEvent<{ port: MessagePort }>) => {
  const bus = createBus({ id: 'client' });
  await bus.connect(messagePortEndpoint(event.data.port));
  const fs = new MemoryFs();
  await busRemote(bus, 'host', 'notes').clone(fs, '/clone', { bare: false });
  postMessage(await fs.promises.readdir('/clone'));
};
