/**
 * Compare-and-swap across contexts on a file system real git never shares: two Web Workers,
 * each with its own OpfsFs on the same origin's OPFS, race to move the same ref from the same
 * old value. The lock file is created under the Web Locks API, so exactly one wins each round.
 */
import { FsRefStore, OpfsFs } from 'gitport';
import { expect, it } from 'vitest';

it('two Web Workers racing on one ref in OPFS: exactly one compare-and-swap wins each round', async () => {
  const dir = `/cas-${Date.now().toString(36)}`;
  const fs = new OpfsFs();
  await fs.promises.mkdir(dir);
  const refs = new FsRefStore(fs, dir);
  const initial = `${'0'.repeat(39)}1`;
  await refs.update([{ name: 'refs/heads/main', old: null, new: initial }]);
  const workers = [0, 1].map(() => new Worker(new URL('./cas.worker.ts', import.meta.url), { type: 'module' }));
  try {
    for (let round = 0; round < 12; round++) {
      const before = await refs.resolve('refs/heads/main');
      const values = workers.map((_, i) => `${(round * 2 + i + 2).toString(16).padStart(40, '0')}`);
      const outcomes = await Promise.all(
        workers.map(
          (worker, i) =>
            new Promise<{ status: string; old: string }>((resolve) => {
              worker.addEventListener('message', (e) => resolve(e.data), { once: true });
              worker.postMessage({ dir, round, mine: values[i] });
            }),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'error')).toEqual([]);
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
    for (const worker of workers) worker.terminate();
  }
});
