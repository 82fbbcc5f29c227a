/**
 * A Web Worker hosting repositories kept in lightning-fs (IndexedDB): `setup` creates `notes`
 * with one commit written by isomorphic-git straight into the bare repository, then the worker
 * serves it on the bus (host()), publishing ref-update signals.
 */
import './worker-globals.js';
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import LightningFS from '@isomorphic-git/lightning-fs';
import { type FsLike, FsRepositoryRegistry, host } from 'gitport';
import git from 'isomorphic-git';

type WorkerLike = Parameters<typeof workerEndpoint>[0];

const bus = createBus({ id: 'host' });
const fs = new LightningFS(`gitport-host-${self.name}`, { wipe: true }) as unknown as FsLike;
const registry = new FsRepositoryRegistry(fs, '/repos');
host(bus, registry);

bus.handle('setup', async () => {
  const repo = await registry.create('notes');
  const gitdir = '/repos/notes.git';
  const blob = await git.writeBlob({ fs, gitdir, blob: new TextEncoder().encode('hello from the host worker\n') });
  const tree = await git.writeTree({
    fs,
    gitdir,
    tree: [{ mode: '100644', path: 'README.md', oid: blob, type: 'blob' }],
  });
  const person = { name: 'host', email: 'host@gitport.invalid', timestamp: 1_700_000_000, timezoneOffset: 0 };
  const commit = await git.writeCommit({
    fs,
    gitdir,
    commit: { tree, parent: [], author: person, committer: person, message: 'initial\n' },
  });
  const [result] = await repo.refs.update([{ name: 'refs/heads/main', old: null, new: commit }]);
  if (result?.status !== 'ok') throw new Error('could not create main');
  return commit;
});

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort };
  if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port));
});
void bus.connect(workerEndpoint(self as unknown as WorkerLike));
