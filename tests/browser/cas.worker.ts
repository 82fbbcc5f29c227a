/**
 * A Web Worker updating refs of a repository in OPFS, to race another worker on the same ref:
 * `{ dir, rounds }` → for each round, wait for the parent's `go`, compare-and-swap
 * refs/heads/main from the value it reads to a value of its own, and report the outcome.
 */
import { FsRefStore, OpfsFs } from 'gitport';

self.addEventListener('message', async (event: MessageEvent) => {
  const { dir, round, mine } = event.data as { dir: string; round: number; mine: string };
  try {
    const refs = new FsRefStore(new OpfsFs(), dir);
    const old = (await refs.resolve('refs/heads/main')) ?? null;
    const [result] = await refs.update([{ name: 'refs/heads/main', old, new: mine }]);
    self.postMessage({ round, status: result?.status, old });
  } catch (error) {
    self.postMessage({ round, status: 'error', message: String((error as Error).message ?? error) });
  }
});
