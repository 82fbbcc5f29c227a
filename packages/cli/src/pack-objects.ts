/**
 * `gitport pack-objects --git-dir DIR (--all | --revs) [--window N] [--depth N] [--no-delta] [--thin] --stdout`
 *
 * Mirrors `git pack-objects --stdout`: `--revs` reads rev lines from stdin (`<oid>` to include,
 * `^<oid>` to exclude, a ref name resolves through the repository's refs); `--all` packs every
 * ref (loose refs, packed-refs and HEAD). The pack goes to stdout.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { bitmapServing, createPack, FsObjectStore, isObjectId, type ObjectId, readPackIndexFile } from '@gitport/pack';

const usage =
  'usage: gitport pack-objects --git-dir DIR (--all | --revs) [--window N] [--depth N] [--no-delta] [--thin] --stdout\n';

function fail(message: string, code = 128): number {
  process.stderr.write(`gitport pack-objects: ${message}\n`);
  return code;
}

export async function packObjects(args: readonly string[]): Promise<number> {
  let gitDir: string | undefined;
  let all = false;
  let revs = false;
  let stdout = false;
  let deltas = true;
  let thin = false;
  let window: number | undefined;
  let depth: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = (name: string) => {
      const inline = a.startsWith(`${name}=`) ? a.slice(name.length + 1) : undefined;
      if (inline !== undefined) return inline;
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${name} needs a value`);
      return v;
    };
    const number = (name: string) => {
      const v = Number(value(name));
      if (!Number.isInteger(v) || v < 0) throw new UsageError(`${name} needs a non-negative integer`);
      return v;
    };
    try {
      if (a === '--git-dir' || a.startsWith('--git-dir=')) gitDir = value('--git-dir');
      else if (a === '--all') all = true;
      else if (a === '--revs') revs = true;
      else if (a === '--stdout') stdout = true;
      else if (a === '--no-delta') deltas = false;
      else if (a === '--thin') thin = true;
      else if (a === '--window' || a.startsWith('--window=')) window = number('--window');
      else if (a === '--depth' || a.startsWith('--depth=')) depth = number('--depth');
      else if (a === '-q' || a === '--quiet') continue;
      else if (a === '-h' || a === '--help') {
        process.stdout.write(usage);
        return 0;
      } else throw new UsageError(`unknown option '${a}'`);
    } catch (error) {
      if (error instanceof UsageError) {
        process.stderr.write(`gitport pack-objects: ${error.message}\n${usage}`);
        return 129;
      }
      throw error;
    }
  }
  if (!gitDir || !stdout || all === revs) {
    process.stderr.write(usage);
    return 129;
  }
  const store = new FsObjectStore(fs, gitDir, { bitmaps: bitmapServing, indexReader: readPackIndexFile });
  try {
    const refs = await readRefs(gitDir);
    const wants: ObjectId[] = [];
    const haves: ObjectId[] = [];
    if (all) {
      for (const oid of refs.values()) wants.push(oid);
    }
    if (revs) {
      const text = new TextDecoder().decode(await readAll(process.stdin));
      for (const raw of text.split('\n')) {
        const line = raw.trim();
        if (line === '' || line === '--not') continue;
        if (line === '--all') {
          for (const oid of refs.values()) wants.push(oid);
          continue;
        }
        const exclude = line.startsWith('^');
        const name = exclude ? line.slice(1) : line;
        const oid = isObjectId(name) ? name : resolveRef(refs, name);
        if (!oid) return fail(`bad revision '${name}'`);
        (exclude ? haves : wants).push(oid);
      }
    }
    const pack = createPack(
      store,
      { wants: [...new Set(wants)], haves },
      {
        deltas,
        thin,
        ...(window !== undefined ? { window } : {}),
        ...(depth !== undefined ? { depth } : {}),
        // each chunk is written out before the next is asked for (below): the pack's reused
        // ranges are read into two buffers in turn instead of a new buffer per read, which would
        // stay in memory until a collection finds it dead
        borrow: true,
      },
    );
    for await (const chunk of pack) {
      // the write's callback: the stream is done with the chunk (it may be written again)
      await new Promise<void>((resolve, reject) =>
        process.stdout.write(chunk, (error) => (error ? reject(error) : resolve())),
      );
    }
    return 0;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return fail(`${(error as Error).message}${typeof code === 'string' ? ` [${code}]` : ''}`);
  } finally {
    await store.close();
  }
}

class UsageError extends Error {}

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? new TextEncoder().encode(c) : (c as Uint8Array));
  return Buffer.concat(chunks);
}

/** Refs of a repository on disk: packed-refs, then loose refs (which win), then HEAD. */
export async function readRefs(gitDir: string): Promise<Map<string, ObjectId>> {
  const refs = new Map<string, ObjectId>();
  try {
    const packed = await fs.promises.readFile(join(gitDir, 'packed-refs'), 'utf8');
    for (const line of packed.split('\n')) {
      if (line.startsWith('#') || line.startsWith('^') || line.length < 42) continue;
      const oid = line.slice(0, 40);
      if (isObjectId(oid)) refs.set(line.slice(41), oid);
    }
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOENT') throw error;
  }
  const walk = async (rel: string): Promise<void> => {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(join(gitDir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const name = `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(name);
      else if (e.isFile()) {
        const text = (await fs.promises.readFile(join(gitDir, name), 'utf8')).trim();
        if (isObjectId(text)) refs.set(name, text);
      }
    }
  };
  await walk('refs');
  try {
    const head = (await fs.promises.readFile(join(gitDir, 'HEAD'), 'utf8')).trim();
    if (/^[0-9a-f]{40}$/.test(head)) refs.set('HEAD', head);
    else if (head.startsWith('ref: ')) {
      const target = refs.get(head.slice(5));
      if (target) refs.set('HEAD', target);
    }
  } catch {
    /* no HEAD: nothing to add */
  }
  return refs;
}

function resolveRef(refs: Map<string, ObjectId>, name: string): ObjectId | undefined {
  for (const candidate of [name, `refs/${name}`, `refs/tags/${name}`, `refs/heads/${name}`, `refs/remotes/${name}`]) {
    const oid = refs.get(candidate);
    if (oid) return oid;
  }
  return undefined;
}
