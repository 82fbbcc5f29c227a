/**
 * Child process for the large-blob test: imports the pack file at argv[2] into the repository at
 * argv[3] through FsObjectStore, streaming it from disk, and prints a JSON line with the result
 * and the peak memory (heapUsed + arrayBuffers) seen while importing.
 */
import * as fs from 'node:fs';
import { FsObjectStore, importPack } from '@gitport/pack';

const [packPath, repo] = process.argv.slice(2);
const base = process.memoryUsage();
let peak = 0;
const sample = () => {
  const m = process.memoryUsage();
  peak = Math.max(peak, m.heapUsed + m.arrayBuffers - (base.heapUsed + base.arrayBuffers));
};
async function* source() {
  for await (const chunk of fs.createReadStream(packPath!, { highWaterMark: 1 << 20 })) {
    sample();
    const b = chunk as Buffer;
    yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
}
const store = new FsObjectStore(fs, repo!);
const result = await importPack(store, source(), {
  onProgress: sample,
});
sample();
await store.close();
process.stdout.write(`${JSON.stringify({ ...result, peak })}\n`);
