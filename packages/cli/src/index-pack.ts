/**
 * `gitport index-pack --git-dir DIR --stdin [--fix-thin]`
 *
 * Mirrors `git index-pack --stdin`: reads a pack from stdin, verifies it, resolves its deltas,
 * stores `objects/pack/pack-<hash>.pack` then its `.idx`, and prints `pack\t<hash>`.
 */
import * as fs from 'node:fs';
// the import's modules alone, not the whole package: see @gitport/pack/import
import { FsObjectStore, importPack, openPackSpool } from '@gitport/pack/import';

const usage = 'usage: gitport index-pack --git-dir DIR --stdin [--fix-thin]\n';

export async function indexPack(args: readonly string[]): Promise<number> {
  let gitDir: string | undefined;
  let stdin = false;
  let fixThin = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--git-dir') {
      gitDir = args[++i];
      if (gitDir === undefined) {
        process.stderr.write(`gitport index-pack: --git-dir needs a value\n${usage}`);
        return 129;
      }
    } else if (a.startsWith('--git-dir=')) gitDir = a.slice('--git-dir='.length);
    else if (a === '--stdin') stdin = true;
    else if (a === '--fix-thin') fixThin = true;
    else if (a === '-h' || a === '--help') {
      process.stdout.write(usage);
      return 0;
    } else {
      process.stderr.write(`gitport index-pack: unknown option '${a}'\n${usage}`);
      return 129;
    }
  }
  if (!gitDir || !stdin) {
    process.stderr.write(usage);
    return 129;
  }
  const store = new FsObjectStore(fs, gitDir, { packSpool: openPackSpool });
  try {
    const { hash } = await importPack(store, readStdin(), { fixThin, reusedInput: true, cacheBytes: CACHE_BYTES });
    process.stdout.write(`pack\t${hash}\n`);
    return 0;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    process.stderr.write(
      `gitport index-pack: ${(error as Error).message}${typeof code === 'string' ? ` [${code}]` : ''}\n`,
    );
    return 128;
  } finally {
    await store.close();
  }
}

/**
 * Resolved objects kept for delta resolution: half the library's default. A delta mostly follows
 * its base closely, and bases no longer cached are read back from the pack (as git's index-pack
 * reads them back): the command favours memory, as it tells V8 to (see index.ts).
 */
const CACHE_BYTES = 512 * 1024;

/** Bytes read from stdin at a time. */
const READ_SIZE = 64 * 1024;

/**
 * Standard input in chunks read into one buffer, each valid until the next is asked for (the
 * import copies what it keeps: `reusedInput`): a stream would allocate a new buffer per chunk,
 * garbage by the next one, and those pile up between collections.
 */
async function* readStdin(): AsyncGenerator<Uint8Array> {
  const buffer = new Uint8Array(READ_SIZE);
  for (;;) {
    let n: number;
    try {
      n = await new Promise<number>((resolve, reject) =>
        fs.read(0, buffer, 0, READ_SIZE, null, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      );
    } catch (error) {
      // a non-blocking pipe with nothing in it yet (stdin as another process left it)
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      throw error;
    }
    if (n === 0) return;
    yield buffer.subarray(0, n);
  }
}
