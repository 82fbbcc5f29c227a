/**
 * A module Web Worker with nothing installed but gitport: no Buffer polyfill, no `global`, no
 * isomorphic-git. It hosts a repository on one bus, and from a second bus (joined by a
 * MessageChannel) clones it with a working tree into OPFS, commits, pushes and reads back.
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import {
  commit,
  host,
  initRepository,
  listFiles,
  MemoryFs,
  OpfsFs,
  readFile,
  remote,
  staticRepositories,
} from 'gitport';

const author = { name: 'worker', email: 'worker@gitport.invalid', timestamp: 1_700_000_000 };

self.onmessage = async (event: MessageEvent<{ dir: string }>) => {
  try {
    const hostBus = createBus({ id: 'host' });
    const clientBus = createBus({ id: 'client' });
    const channel = new MessageChannel();
    await Promise.all([
      hostBus.connect(messagePortEndpoint(channel.port1)),
      clientBus.connect(messagePortEndpoint(channel.port2)),
    ]);
    const served = await initRepository(new MemoryFs(), '/served');
    const first = await commit(served, {
      message: 'first',
      author,
      files: { 'README.md': '# hello\n', 'bin/run': '#!/bin/sh\n', 'docs/a/b.txt': 'deep\n' },
      executable: ['bin/run'],
    });
    host(hostBus, staticRepositories({ notes: served }));

    const fs = new OpfsFs();
    const origin = remote(clientBus, 'host', 'notes');
    const repo = await origin.clone(fs, event.data.dir, { bare: false });
    const cloned = await repo.refs.resolve('HEAD');
    const tracking = await repo.refs.resolve('refs/remotes/origin/main');
    const checkedOut = new TextDecoder().decode(
      (await fs.promises.readFile(`${event.data.dir}/docs/a/b.txt`)) as Uint8Array,
    );
    const index = (await fs.promises.readFile(`${event.data.dir}/.git/index`)) as Uint8Array;
    const config = new TextDecoder().decode(
      (await fs.promises.readFile(`${event.data.dir}/.git/config`)) as Uint8Array,
    );
    const second = await commit(repo, { message: 'second', author, files: { 'from-worker.txt': 'hi\n' } });
    const pushed = await origin.push(repo, { refspecs: ['main:main'] });
    const hostFile = new TextDecoder().decode(await readFile(served, 'main', 'from-worker.txt'));
    self.postMessage({
      buffer: typeof (globalThis as { Buffer?: unknown }).Buffer,
      first: first.oid,
      cloned,
      tracking,
      checkedOut,
      indexHead: new TextDecoder().decode(index.subarray(0, 4)),
      indexEntries: new DataView(index.buffer, index.byteOffset).getUint32(8),
      config,
      pushed: pushed.ok,
      hostHead: await served.refs.resolve('refs/heads/main'),
      second: second.oid,
      hostFile,
      files: await listFiles(served, 'main'),
    });
  } catch (error) {
    self.postMessage({ error: String(error), code: (error as { code?: string }).code });
  }
};
