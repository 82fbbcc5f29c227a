/**
 * Browser clone benchmark, host side: builds the reference corpus (commits each adding one
 * random blob, seeded) in an in-memory repository with isomorphic-git and hosts it on the bus.
 * With `packed` (the default of the bench page), the corpus is then packed once, untimed, as
 * `git repack -adq` packs the repository the Node clone bench serves: every object into one pack
 * written by gitport, the loose objects deleted; clones then get that pack as it is (pack reuse),
 * like the Node clone.
 */
import '../worker-globals.js';
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { createPack, importPack } from '@gitport/pack';
import { prng } from '@gitport/test-helpers/prng';
import { FsRepositoryRegistry, GitFs, host, MemoryFs } from 'gitport';
import git from 'isomorphic-git';

type WorkerLike = Parameters<typeof workerEndpoint>[0];

const bus = createBus({ id: 'host' });
const fs = new MemoryFs();
const registry = new FsRepositoryRegistry(fs, '/repos');
host(bus, registry);

bus.handle('corpus', async (payload) => {
  const { commits, size, packed } = payload as { commits: number; size: number; packed?: boolean };
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
  if (packed) {
    // as `git repack -adq`: every object into one pack (written by gitport), the loose ones deleted
    const result = await importPack(repo.objects, createPack(repo.objects, { wants: [parent[0]!] }));
    const gitFs = new GitFs(fs);
    for (const name of await gitFs.list(`${gitdir}/objects`)) {
      if (/^[0-9a-f]{2}$/.test(name)) await gitFs.removeTree(`${gitdir}/objects/${name}`);
    }
    await (repo.objects as { refresh?(): Promise<void> }).refresh?.();
    if (result.objects.length !== commits * 3)
      throw new Error(`packed ${result.objects.length} objects, expected ${commits * 3}`);
  }
  return parent[0];
});

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort };
  if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port));
});
void bus.connect(workerEndpoint(self as unknown as WorkerLike));
