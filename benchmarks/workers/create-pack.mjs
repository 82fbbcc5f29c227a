/**
 * `createPack` of @gitport/pack (built) in a process of its own, pack to stdout:
 *
 *   node create-pack.mjs <git dir> <reuse: 0|1>   (stdin: one `<oid>` or `^<oid>` per line)
 *
 * for benchmarks/scale.bench.ts's "computing deltas" rows, which the `gitport pack-objects`
 * command has no option for (it always reuses stored deltas).
 */
import * as fs from 'node:fs';
import { bitmapServing, createPack, FsObjectStore } from '@gitport/pack';
import { readRevs } from './revs-from-stdin.mjs';

const [gitDir, reuse] = process.argv.slice(2);
const { wants, haves } = await readRevs();
const store = new FsObjectStore(fs, gitDir, { bitmaps: bitmapServing });
try {
  for await (const chunk of createPack(store, { wants, haves }, { reuse: reuse === '1' })) {
    if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once('drain', r));
  }
} finally {
  await store.close();
}
