/**
 * Compare-and-swap across contexts on a file system real git never shares: two Web Workers,
 * each with its own OpfsFs on the same origin's OPFS, race to move the same ref from the same
 * old value. The lock file is created under the Web Locks API, so exactly one wins each round.
 * A worker that fails (it does not load, or throws outside its handler) fails the test at once;
 * the test removes its OPFS directory whatever the outcome.
 */
import { FsRefStore, OpfsFs } from 'gitport';
import { expect, it } from 'vitest';

interface Outcome {
  round: number;
  status: string;
  old: string | null;
  message?: string;
}

it('two Web Workers racing on one ref in OPFS: exactly one compare-and-swap wins each round', async ({
  onTestFinished,
}) => {
  const name = `cas-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const dir = `/${name}`;
  const root = await navigator.storage.getDirectory();
  const fs = new OpfsFs(root);
  const workers: Worker[] = [];
  /** Stops the workers and removes the test's directory (also when the test times out). */
  const cleanUp = async () => {
    for (const worker of workers.splice(0)) worker.terminate();
    await root.removeEntry(name, { recursive: true }).catch((error: unknown) => {
      if ((error as DOMException).name !== 'NotFoundError') throw error;
    });
  };
  onTestFinished(cleanUp);
  try {
    await fs.promises.mkdir(dir);
    const refs = new FsRefStore(fs, dir);
    const initial = `${'0'.repeat(39)}1`;
    await refs.update([{ name: 'refs/heads/main', old: null, new: initial }]);
    // Rejects as soon as either worker reports an error event (a failed load, an uncaught
    // exception) or a message it cannot deserialize.
    let failed!: (error: Error) => void;
    const failure = new Promise<never>((_, reject) => {
      failed = reject;
    });
    failure.catch(() => {});
    for (let i = 0; i < 2; i++) {
      const worker = new Worker(new URL('./cas.worker.ts', import.meta.url), { type: 'module' });
      worker.addEventListener('error', (event) => {
        event.preventDefault();
        failed(new Error(`CAS worker ${i} failed: ${event.message || 'it did not load'}`));
      });
      worker.addEventListener('messageerror', () => failed(new Error(`CAS worker ${i} sent an unreadable message`)));
      workers.push(worker);
    }
    for (let round = 0; round < 12; round++) {
      const before = await refs.resolve('refs/heads/main');
      const values = workers.map((_, i) => `${(round * 2 + i + 2).toString(16).padStart(40, '0')}`);
      const outcomes = await Promise.race([
        failure,
        Promise.all(
          workers.map(
            (worker, i) =>
              new Promise<Outcome>((resolve) => {
                worker.addEventListener('message', (e: MessageEvent<Outcome>) => resolve(e.data), { once: true });
                worker.postMessage({ dir, round, mine: values[i] });
              }),
          ),
        ),
      ]);
      expect(outcomes.filter((o) => o.status === 'error')).toEqual([]);
      expect(outcomes.map((o) => o.round)).toEqual([round, round]);
      // Both read `before` and raced: one wins; or one ran entirely after the other (it read
      // the winner's value and won too, from a different old value): never two from the same old.
      const fromBefore = outcomes.filter((o) => o.status === 'ok' && o.old === before);
      expect(fromBefore).toHaveLength(1);
      const after = await refs.resolve('refs/heads/main');
      expect(values).toContain(after);
      const names = await fs.promises.readdir(`${dir}/refs/heads`);
      expect(names).toEqual(['main']);
    }
  } finally {
    await cleanUp();
  }
  await expect(root.getDirectoryHandle(name)).rejects.toMatchObject({ name: 'NotFoundError' });
});
