/** The worker that owns the repository: one commit in memory, hosted on the bus as `notes`. */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { commit, host, initRepository, MemoryFs, staticRepositories } from 'gitport';

const author = { name: 'Host', email: 'host@example.com', timestamp: 1_700_000_000 };

self.onmessage = async (event: MessageEvent<{ port: MessagePort }>) => {
  const bus = createBus({ id: 'host' });
  const served = await initRepository(new MemoryFs(), '/served');
  await commit(served, { message: 'first', author, files: { 'README.md': '# notes\n' } });
  host(bus, staticRepositories({ notes: served }));
  await bus.connect(messagePortEndpoint(event.data.port));
};
