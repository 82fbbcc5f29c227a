/**
 * A Web Worker with its own repositories in OPFS: `scenario` clones `notes` from the host worker
 * (non-bare, checked out by isomorphic-git), commits a file with isomorphic-git, pushes it over
 * the bus, and clones it once more with isomorphic-git through the http plugin into lightning-fs.
 */
import './worker-globals.js';
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import LightningFS from '@isomorphic-git/lightning-fs';
import { type FsLike, httpClient, OpfsFs, remote } from 'gitport';
import git from 'isomorphic-git';

type WorkerLike = Parameters<typeof workerEndpoint>[0];

const bus = createBus({ id: 'client' });
const author = { name: 'client', email: 'client@gitport.invalid', timestamp: 1_700_000_500, timezoneOffset: 0 };

function peerReady(peer: string): Promise<void> {
  if (bus.peers.has(peer)) return Promise.resolve();
  return new Promise((resolve) => {
    const off = bus.onPeer('connected', (id) => {
      if (id !== peer) return;
      off();
      resolve();
    });
  });
}

bus.handle('scenario', async (payload) => {
  const { peer, name } = payload as { peer: string; name: string };
  await peerReady(peer);
  const fs = new OpfsFs();
  const dir = `/clone-${self.name}`;
  const phases: string[] = [];
  const origin = remote(bus, peer, name);
  const repo = await origin.clone(fs, dir, { bare: false, onProgress: (e) => phases.push(e.phase) });
  const base = await repo.refs.resolve('HEAD');
  const readme = new TextDecoder().decode((await fs.promises.readFile(`${dir}/README.md`)) as Uint8Array);

  await fs.promises.writeFile(`${dir}/from-client.txt`, 'written in the client worker\n');
  await git.add({ fs, dir, filepath: 'from-client.txt' });
  const commit = await git.commit({ fs, dir, message: 'from the client worker', author });
  const pushed = await origin.push(repo, { refspecs: ['refs/heads/main:refs/heads/main'] });

  const lfs = new LightningFS(`gitport-client-${self.name}`, { wipe: true }) as unknown as FsLike;
  await git.clone({ fs: lfs, http: httpClient(bus), dir: '/iso', url: `http://${peer}.gitport/${name}.git` });
  const isoHead = await git.resolveRef({ fs: lfs, dir: '/iso', ref: 'HEAD' });
  const isoFile = new TextDecoder().decode((await lfs.promises.readFile('/iso/from-client.txt')) as Uint8Array);
  return { base, readme, commit, ok: pushed.ok, phases, isoHead, isoFile };
});

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort };
  if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port));
});
void bus.connect(workerEndpoint(self as unknown as WorkerLike));
