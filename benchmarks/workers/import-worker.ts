/**
 * Worker thread of benchmarks/concurrency.bench.ts: imports the pack it is sent `count` times,
 * concurrently, each into a fresh MemoryObjectStore, and replies with the objects imported.
 */
import { parentPort } from 'node:worker_threads';
import { importPack, MemoryObjectStore } from '@gitport/pack';

interface Job {
  id: number;
  pack: Uint8Array;
  count: number;
}

parentPort!.on('message', async (job: Job) => {
  try {
    const results = await Promise.all(
      Array.from({ length: job.count }, async () => {
        const store = new MemoryObjectStore();
        await importPack(store, [job.pack]);
        return store.size;
      }),
    );
    parentPort!.postMessage({ id: job.id, objects: results });
  } catch (error) {
    parentPort!.postMessage({ id: job.id, error: String((error as Error).stack ?? error) });
  }
});
parentPort!.postMessage({ ready: true });
