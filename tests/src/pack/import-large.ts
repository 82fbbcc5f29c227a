/**
 * Child process for the large-blob test: imports the pack file at argv[2] into the repository at
 * argv[3] through FsObjectStore, streaming it from disk (argv[4] `gc`: garbage collected before
 * each sample), and prints a JSON line with the result
 * and the peak memory growth seen while importing: `peak` (heapUsed + arrayBuffers) and `peakAll`
 * (heapUsed + arrayBuffers + external).
 */
import * as fs from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FsObjectStore, importPack, openPackSpool } from '@gitport/pack';

const [packPath, repo, mode] = process.argv.slice(2);
// `gc`: collect before each sample, so that the figures are what is held, not garbage not yet collected
let collect: (() => void) | undefined;
if (mode === 'gc') {
  setFlagsFromString('--expose-gc');
  collect = runInNewContext('gc') as () => void;
}
const base = process.memoryUsage();
let peak = 0;
let peakAll = 0;
const sample = () => {
  collect?.();
  const m = process.memoryUsage();
  peak = Math.max(peak, m.heapUsed + m.arrayBuffers - (base.heapUsed + base.arrayBuffers));
  peakAll = Math.max(
    peakAll,
    m.heapUsed + m.arrayBuffers + m.external - (base.heapUsed + base.arrayBuffers + base.external),
  );
};
async function* source() {
  for await (const chunk of fs.createReadStream(packPath!, { highWaterMark: 1 << 20 })) {
    sample();
    const b = chunk as Buffer;
    yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
}
const store = new FsObjectStore(fs, repo!, { packSpool: openPackSpool });
const result = await importPack(store, source(), {
  onProgress: sample,
});
sample();
await store.close();
process.stdout.write(`${JSON.stringify({ ...result, peak, peakAll })}\n`);
