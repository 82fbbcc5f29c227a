/**
 * A Web Worker updating refs of a repository in OPFS, to race another worker on the same ref:
 * each message `{ dir, round, mine }` compare-and-swaps refs/heads/main of `dir` from the value
 * the worker reads to `mine`, and is answered `{ round, status, old }` (status 'error' with a
 * message when the update threw).
 */
import { FsRefStore, OpfsFs } from 'gitport';

// A rejection nothing handles becomes an error event on the Worker object, which fails the test at once.
self.addEventListener('unhandledrejection', (event: PromiseRejectionEvent) => {
  throw event.reason;
});

self.addEventListener('message', async (event: MessageEvent) => {
  const { dir, round, mine } = event.data as { dir: string; round: number; mine: string };
  try {
    const refs = new FsRefStore(new OpfsFs(), dir);
    const old = (await refs.resolve('refs/heads/main')) ?? null;
    const [result] = await refs.update([{ name: 'refs/heads/main', old, new: mine }]);
    self.postMessage({ round, status: result?.status, old });
  } catch (error) {
    const cause = (error as { cause?: { name?: string; message?: string } }).cause;
    const reason = cause ? ` (${cause.name}: ${cause.message})` : '';
    self.postMessage({ round, status: 'error', message: `${String((error as Error).message ?? error)}${reason}` });
  }
});
