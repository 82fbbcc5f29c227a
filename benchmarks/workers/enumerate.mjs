/**
 * `enumerateObjects` of @gitport/pack (built) in a process of its own: the ids of
 * reachable(wants) - reachable(haves), one per line on stdout, as `git rev-list --objects` lists
 * them (without paths):
 *
 *   node enumerate.mjs <git dir>   (stdin: one `<oid>` or `^<oid>` per line)
 *
 * for benchmarks/scale.bench.ts's object-walk rows (the CLI has no rev-list).
 */
import { enumerateObjects, FsObjectStore } from '@gitport/pack';
import { nodeFs } from 'gitport/node';
import { readRevs } from './revs-from-stdin.mjs';

const [gitDir] = process.argv.slice(2);
const { wants, haves } = await readRevs();
// synchronous file reads, as the server's repository workers make them (`nodeFs` in a worker
// thread): the walk reads the pages of the pack it misses in place
const store = new FsObjectStore(nodeFs({ sync: true }), gitDir);
try {
  const { objects } = await enumerateObjects(store, { wants, haves });
  const lines = [];
  for (const o of objects) lines.push(o.oid);
  lines.push('');
  process.stdout.write(lines.join('\n'));
} finally {
  await store.close();
}
