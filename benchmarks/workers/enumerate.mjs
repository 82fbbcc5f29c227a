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
import { enumerateObjects, FsObjectStore } from '@gitport/pack';
import { readRevs } from './revs-from-stdin.mjs';

const [gitDir] = process.argv.slice(2);
const { wants, haves } = await readRevs();
const store = new FsObjectStore(fs, gitDir);
try {
  const { objects } = await enumerateObjects(store, { wants, haves });
  const lines = [];
  for (const o of objects) lines.push(o.oid);
  lines.push('');
  process.stdout.write(lines.join('\n'));
} finally {
  await store.close();
}
