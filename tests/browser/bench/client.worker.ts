/**
 * Browser clone benchmark, client side: bare gitport clones of the host's `reference`
 * repository into OPFS or into memory, timed; answers each clone's time and stored pack size.
 */
import '../worker-globals.js';
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';
import { type FsLike, GitFs, MemoryFs, OpfsFs, remote } from 'gitport';

type WorkerLike = Parameters<typeof workerEndpoint>[0];

const bus = createBus({ id: 'client' });

async function packBytes(fs: GitFs, gitDir: string): Promise<number> {
  let total = 0;
  for (const name of await fs.list(`${gitDir}/objects/pack`)) {
    if (name.endsWith('.pack')) total += (await fs.stat(`${gitDir}/objects/pack/${name}`))?.size ?? 0;
  }
  return total;
}

bus.handle('clones', async (payload) => {
  const { storage, runs, expect } = payload as { storage: 'opfs' | 'memory'; runs: number; expect: string };
  const results: { ms: number; packBytes: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const raw: FsLike = storage === 'opfs' ? new OpfsFs() : new MemoryFs();
    const fs = new GitFs(raw);
    const dir = `/bench-${storage}-${Date.now().toString(36)}-${i}.git`;
    const start = performance.now();
    const repo = await remote(bus, 'host', 'reference').clone(fs, dir);
    const ms = performance.now() - start;
    if ((await repo.refs.resolve('HEAD')) !== expect) throw new Error('clone incomplete');
    results.push({ ms, packBytes: await packBytes(fs, dir) });
    await fs.removeTree(dir);
  }
  return results;
});

self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort };
  if (data?.type === 'port' && data.port) void bus.connect(messagePortEndpoint(data.port));
});
void bus.connect(workerEndpoint(self as unknown as WorkerLike));
