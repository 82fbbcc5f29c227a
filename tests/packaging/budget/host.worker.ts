/** The smallest worker that hosts: a repository in memory, served read-only to peers on the bus. */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { hostReadOnly, initRepository, MemoryFs, staticRepositories } from 'gitport';

self.onmessage = async (event: MessageEvent<{ port: MessagePort }>) => {
  const bus = createBus({ id: 'host' });
  hostReadOnly(bus, staticRepositories({ notes: await initRepository(new MemoryFs(), '/served') }));
  await bus.connect(messagePortEndpoint(event.data.port));
};
