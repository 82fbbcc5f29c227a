/**
 * `enumerateObjects` of @gitport/pack (built) in a process of its own: the ids of
 * reachable(wants) - reachable(haves), one per line on stdout, as `git rev-list --objects` lists
 * them (without paths):
 *
 *   node enumerate.mjs <git dir>   (stdin: one `<oid>` or `^<oid>` per line)
 *
 * for benchmarks/scale.bench.ts's object-walk rows (the CLI has no rev-list).
 */
import * as fs from 'node:fs';
import { enumerateObjects, FsObjectStore, syncPageReads } from '@gitport/pack';
import { readRevs } from './revs-from-stdin.mjs';

/**
 * Node's `fs.promises`, except that files opened for reading also read synchronously, as the
 * server's repository workers read them (`nodeFs` in a worker thread): the walk reads the pack
 * pages it misses in place.
 */
const syncReadFs = {
  ...fs.promises,
  async open(path, flags) {
    if (flags !== 'r') return fs.promises.open(path, flags);
    const fd = fs.openSync(path, 'r');
    return {
      async read(buffer, offset, length, position) {
        return { bytesRead: fs.readSync(fd, buffer, offset, length, position) };
      },
      readSync: (buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
      async close() {
        fs.closeSync(fd);
      },
    };
  },
};

const [gitDir] = process.argv.slice(2);
const { wants, haves } = await readRevs();
const store = new FsObjectStore(syncReadFs, gitDir, { pageReads: syncPageReads });
try {
  const { objects } = await enumerateObjects(store, { wants, haves });
  const lines = [];
  for (const o of objects) lines.push(o.oid);
  lines.push('');
  process.stdout.write(lines.join('\n'));
} finally {
  await store.close();
}
