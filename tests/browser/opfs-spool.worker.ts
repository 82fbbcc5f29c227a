/**
 * Incoming packs spooled to OPFS in a dedicated worker (opfs-spool.ts): a pack larger than the
 * spool's blocks, then a thin pack completed from the store (truncated, appended to and patched
 * before its commit) are stored as `.pack` and `.idx`, readable through a new OpfsFs; a pack
 * that fails its check, or one the store has already, leaves no file behind, no temporary file
 * either. Answers what it found.
 */
import { createDelta, createPack, createSha1, importPack } from '@gitport/pack';
import { commit, initRepository, MemoryFs, OpfsFs, openRepository, readFile } from 'gitport';

const author = { name: 'worker', email: 'worker@gitport.invalid', timestamp: 1_700_000_000 };

function randomBytes(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(length, i + 65536)));
  return bytes;
}

async function zlib(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('deflate'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A thin pack of one REF_DELTA entry: `target` as a delta on `base` (by id), which it lacks. */
async function thinPack(baseOid: string, base: Uint8Array, target: Uint8Array): Promise<Uint8Array> {
  const delta = createDelta(base, target);
  if (!delta) throw new Error('no delta');
  const header = [0x80 | (7 << 4) | (delta.length & 15)];
  for (let size = delta.length >>> 4; size > 0; size >>>= 7) header.push((size > 127 ? 0x80 : 0) | (size & 127));
  const id = new Uint8Array(baseOid.match(/../g)!.map((h) => Number.parseInt(h, 16)));
  const body = concat([
    new Uint8Array([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0, 0, 1]),
    new Uint8Array(header),
    id,
    await zlib(delta),
  ]);
  const sha = createSha1();
  sha.update(body);
  return concat([body, sha.digest()]);
}

async function collect(pack: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of pack) chunks.push(chunk.slice());
  return chunks;
}

self.onmessage = async (event: MessageEvent<{ dir: string }>) => {
  const { dir } = event.data;
  try {
    const served = await initRepository(new MemoryFs(), '/served');
    const random = randomBytes(700 * 1024);
    const first = await commit(served, { message: 'first', author, files: { 'big.bin': random, 'a.txt': 'a\n' } });

    const fs = new OpfsFs();
    const repo = await initRepository(fs, dir);
    const listPack = async () => (await fs.promises.readdir(`${dir}/objects/pack`)).sort();

    // a corrupt pack (its trailer changed) is refused and leaves nothing in objects/pack
    const corrupt = await collect(createPack(served.objects, { wants: [first.oid] }));
    const last = corrupt[corrupt.length - 1]!;
    last[last.length - 1] = last[last.length - 1]! ^ 0xff;
    const refused = await importPack(repo.objects, corrupt).then(
      () => 'stored',
      (error: { code?: string }) => error.code ?? 'uncoded',
    );
    const afterRefused = await listPack();

    const whole = await importPack(repo.objects, createPack(served.objects, { wants: [first.oid] }));
    // a base stored loose, larger than the spool's blocks: the thin pack's completion appends it
    const base = randomBytes(300 * 1024);
    const baseOid = await repo.objects.write('blob', base);
    const target = base.slice();
    target.set(new TextEncoder().encode('edited'), 1000);
    const thin = await importPack(repo.objects, [await thinPack(baseOid, base, target)], { fixThin: true });
    // a pack the store has already: its files go, the stored ones stay
    const again = await importPack(repo.objects, createPack(served.objects, { wants: [first.oid] }));
    const names = await listPack();
    // read back through a file system that keeps nothing of the writes
    const reopened = await openRepository(new OpfsFs(), dir);
    const big = await readFile(reopened, first.oid, 'big.bin');
    const edited = (await reopened.objects.read(thin.objects[0]!))?.data;
    self.postMessage({
      spools: typeof fs.promises.packSpool,
      refused,
      afterRefused,
      names,
      packs: [whole.hash, thin.hash],
      again: again.hash === whole.hash,
      thinBases: thin.thinBases,
      bigSame: big?.length === random.length && big.every((b, i) => b === random[i]),
      editedSame: edited?.length === target.length && edited.every((b, i) => b === target[i]),
    });
  } catch (error) {
    self.postMessage({ error: String(error), code: (error as { code?: string }).code });
  }
};
