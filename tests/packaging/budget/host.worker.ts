/** The smallest worker that hosts: a repository in memory, served to peers on the bus. */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { hostGit, initRepository, MemoryFs, staticRepositories } from 'gitport';

self.onmessage = async (event: MessageEvent<{ port: MessagePort }>) => {
  const bus = createBus({ id: 'host' });
  hostGit(bus, staticRepositories({ notes: await initRepository(new MemoryFs(), '/served') }));
  await bus.connect(messagePortEndpoint(event.data.port));
};
