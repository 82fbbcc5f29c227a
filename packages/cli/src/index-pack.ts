/**
 * `gitport index-pack --git-dir DIR --stdin [--fix-thin]`
 *
 * Mirrors `git index-pack --stdin`: reads a pack from stdin, verifies it, resolves its deltas,
 * stores `objects/pack/pack-<hash>.pack` then its `.idx`, and prints `pack\t<hash>`.
 */
import * as fs from 'node:fs';
// the import's modules alone, not the whole package: see @gitport/pack/import
import { FsObjectStore, importPack } from '@gitport/pack/import';

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
  const store = new FsObjectStore(fs, gitDir);
  try {
    const input = (async function* () {
      for await (const chunk of process.stdin) {
        const b = chunk as Buffer;
        yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      }
    })();
    const { hash } = await importPack(store, input, { fixThin });
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
