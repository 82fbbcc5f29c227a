/**
 * The worker that goes through a gitport gateway over HTTP: clones into OPFS with a working tree,
 * commits a file and pushes it back with the token the page hands over.
 */
import { commit, OpfsFs, remote } from 'gitport';

const author = { name: 'Web', email: 'web@example.com', timestamp: 1_700_000_200 };

self.onmessage = async (event: MessageEvent<{ url: string; token: string }>) => {
  try {
    const { url, token } = event.data;
    const origin = remote(url, { onAuth: () => ({ username: 'web', password: token }) });
    const fs = new OpfsFs();
    const repo = await origin.clone(fs, '/over-http', { bare: false });
    const files = await fs.promises.readdir('/over-http');
    const made = await commit(repo, { message: 'from the web', author, files: { 'web.txt': 'web\n' } });
    await origin.push(repo, { refspecs: ['main:main'] });
    postMessage({ ok: true, files, pushed: made.oid });
  } catch (error) {
    postMessage({ ok: false, error: String(error), code: (error as { code?: string }).code });
  }
};
