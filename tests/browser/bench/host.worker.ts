/**
 * Browser clone benchmark, host side: builds the reference corpus (commits each adding one
 * random blob, seeded) in an in-memory repository with isomorphic-git and hosts it on the bus.
 */
import '../worker-globals.js';
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { FsRepositoryRegistry, host, MemoryFs } from 'gitport';
import git from 'isomorphic-git';
import { prng } from '../../src/prng.js';

type WorkerLike = Parameters<typeof workerEndpoint>[0];
type PortLike = Parameters<typeof messagePortEndpoint>[0];

const bus = createBus({ id: 'host' });
const fs = new MemoryFs();
const registry = new FsRepositoryRegistry(fs, '/repos');
host(bus, registry);

bus.handle('corpus', async (payload) => {
  const { commits, size } = payload as { commits: number; size: number };
  const repo = await registry.create('reference');
  const gitdir = '/repos/reference.git';
  const random = prng(2026);
  const entries: { mode: string; path: string; oid: string; type: 'blob' }[] = [];
  let parent: string[] = [];
  for (let i = 0; i < commits; i++) {
    const blob = new Uint8Array(size);
    for (let j = 0; j < size; j++) blob[j] = (random() * 256) | 0;
    entries.push({
      mode: '100644',
      path: `blob-${String(i).padStart(3, '0')}.bin`,
      oid: await git.writeBlob({ fs, gitdir, blob }),
      type: 'blob',
    });
    const tree = await git.writeTree({ fs, gitdir, tree: entries });
    const person = {
      name: 'bench',
      email: 'bench@gitport.invalid',
      timestamp: 1_700_000_000 + i * 60,
      timezoneOffset: 0,
    };
    const commit = await git.writeCommit({
      fs,
      gitdir,
      commit: { tree, parent, author: person, committer: person, message: `commit ${i}\n` },
    });
    parent = [commit];
  }
  await repo.refs.update([{ name: 'refs/heads/main', old: null, new: parent[0]! }]);
  return parent[0];
});

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort };
  if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port as unknown as PortLike));
});
void bus.connect(workerEndpoint(self as unknown as WorkerLike));
