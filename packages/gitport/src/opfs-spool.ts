/**
 * An incoming pack for `OpfsFs` in a dedicated worker (`PackSpool` of @gitport/pack): its bytes
 * gather in memory as they arrive (as a browser's store gathers an incoming pack without a
 * spool), while the temporary files of the pack and of its .idx are made and opened through
 * sync access handles, each a round trip to the browser, meanwhile rather than once the pack
 * has come. The commit then writes each in one call (a sync access handle's write costs more per
 * call than per byte) while the store gets ready, closes them and renames them into place,
 * `.pack` then `.idx`, as git does. The pack is not written
 * while it arrives: a sync access handle writes on the worker's thread and would hold back the
 * import.
 * The files are made as soon as the pack directory can be (a new repository's layout is being
 * written meanwhile); nothing of them is visible before the renames, which wait for the store
 * to be ready. Should the files not open, the commit writes them as any file.
 */
import type { IndexEntries, PackSpool, PackSpoolHost } from '@gitport/pack';
import { PackError } from '@gitport/pack/internal/errors';
import { PackIndex, writeIdx } from '@gitport/pack/internal/idx';
import { concatBytes } from '@gitport/pack/internal/object';

/** Bytes per block the pack gathers in. */
const BLOCK = 256 * 1024;

/** A sync access handle, as far as the spool uses it. */
export interface SpoolHandle {
  truncate(size: number): void;
  write(data: Uint8Array, options: { at: number }): number;
  close(): void;
}

/** What the spool needs of the file system it writes through (OpfsFs). */
export interface SpoolFiles {
  /** Makes the directory at `path` and its parents, or finds them. */
  makeDirs(path: string): Promise<void>;
  /** Creates the file at `path` (or finds it) and opens a sync access handle on it. */
  open(path: string): Promise<SpoolHandle>;
  writeFile(path: string, data: Uint8Array): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

export function openOpfsSpool(host: PackSpoolHost, files: SpoolFiles): PackSpool {
  const { dir } = host;
  const packTmp = host.files.tmpName(dir, 'pack');
  const idxTmp = host.files.tmpName(dir, 'idx');
  /** Every block but the last is full. */
  const blocks: Uint8Array[] = [];
  let length = 0;
  /** No more appends (committing, committed or given up). */
  let closed = false;
  /** Given up: handles that open now are closed at once. */
  let aborted = false;
  const openOne = (path: string) =>
    files.open(path).then(
      (handle) => {
        if (aborted) {
          handle.close();
          return undefined;
        }
        return handle;
      },
      () => undefined,
    );
  const dirMade = files.makeDirs(dir);
  dirMade.catch(() => {});
  const handles = dirMade.then(
    () => Promise.all([openOne(packTmp), openOne(idxTmp)]),
    () => [undefined, undefined] as const,
  );
  const tailFill = () => length - (blocks.length - 1) * BLOCK;
  const ensureOpen = () => {
    if (closed) throw new PackError('STORE_CLOSED', `the pack spool ${packTmp} is closed`);
  };
  /** Closes what opened and removes both files. */
  const release = async () => {
    closed = true;
    aborted = true;
    blocks.length = 0;
    for (const handle of await handles) handle?.close();
    await Promise.all([packTmp, idxTmp].map((path) => files.unlink(path).catch(() => undefined)));
  };
  /** Writes `parts` (`size` bytes) as the whole file: through its open handle, else as any file. */
  const writeWhole = async (handle: SpoolHandle | undefined, path: string, parts: Uint8Array[], size: number) => {
    if (!handle) return files.writeFile(path, concatBytes(parts, size));
    try {
      handle.truncate(size);
      let at = 0;
      for (const part of parts) {
        for (let done = 0; done < part.length; ) {
          const n = handle.write(part.subarray(done), { at: at + done });
          if (n <= 0) throw new PackError('STORE_IO', `short write to ${path}`);
          done += n;
        }
        at += part.length;
      }
    } finally {
      handle.close();
    }
  };
  function* pieces(): Generator<Uint8Array> {
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      yield i === blocks.length - 1 ? block.subarray(0, tailFill()) : block;
    }
  }
  return {
    get length() {
      return length;
    },
    append(bytes: Uint8Array) {
      ensureOpen();
      let pos = 0;
      while (pos < bytes.length) {
        if (blocks.length === 0 || tailFill() === BLOCK) blocks.push(new Uint8Array(BLOCK));
        const at = tailFill();
        const n = Math.min(bytes.length - pos, BLOCK - at);
        blocks[blocks.length - 1]!.set(bytes.subarray(pos, pos + n), at);
        length += n;
        pos += n;
      }
    },
    // nothing is written before the commit
    async drain() {},
    async read(offset: number, n: number) {
      ensureOpen();
      if (offset < 0 || offset + n > length) {
        throw new PackError('OBJECT_CORRUPT', `read past the end of ${packTmp}`);
      }
      const out = new Uint8Array(n);
      for (let o = 0; o < n; ) {
        const at = offset + o;
        const from = at % BLOCK;
        const take = Math.min(BLOCK - from, n - o);
        out.set(blocks[Math.floor(at / BLOCK)]!.subarray(from, from + take), o);
        o += take;
      }
      return out;
    },
    truncate(n: number) {
      ensureOpen();
      if (n >= length) return;
      blocks.length = Math.ceil(n / BLOCK);
      length = n;
      // later appends go into the last block kept, past `n`
    },
    async patch(offset: number, bytes: Uint8Array) {
      ensureOpen();
      if (offset < 0 || offset + bytes.length > length) {
        throw new PackError('STORE_IO', `patch past the end of ${packTmp}`);
      }
      for (let o = 0; o < bytes.length; ) {
        const at = offset + o;
        const from = at % BLOCK;
        const take = Math.min(BLOCK - from, bytes.length - o);
        blocks[Math.floor(at / BLOCK)]!.set(bytes.subarray(o, o + take), from);
        o += take;
      }
    },
    async *chunks() {
      ensureOpen();
      yield* pieces();
    },
    async commit(hash: string, entries: IndexEntries) {
      ensureOpen();
      closed = true;
      const base = `pack-${hash}`;
      const idx = writeIdx(entries, hash, { strict: true });
      const [packHandle, idxHandle] = await handles;
      const packPath = `${dir}/${base}.pack`;
      const idxPath = `${dir}/${base}.idx`;
      // the temporary files are written while the store gets ready (a new repository's layout,
      // the packs listed): only the renames need it
      let at = packPath;
      try {
        // one write of the whole pack: each write call costs more than the bytes it copies
        await writeWhole(
          packHandle,
          packTmp,
          [blocks.length === 1 ? blocks[0]!.subarray(0, length) : concatBytes([...pieces()], length)],
          length,
        );
        at = idxPath;
        await writeWhole(idxHandle, idxTmp, [idx], idx.length);
      } catch (error) {
        await release();
        throw new PackError('STORE_IO', `cannot write ${at}`, { cause: error });
      }
      try {
        await host.ready;
      } catch (error) {
        await release();
        throw error;
      }
      if (host.hasPack(base)) {
        await release();
        return;
      }
      try {
        await files.rename(packTmp, packPath);
      } catch (error) {
        await release();
        throw new PackError('STORE_IO', `cannot write ${packPath}`, { cause: error });
      }
      try {
        await files.rename(idxTmp, idxPath);
      } catch (error) {
        // a .pack without its .idx is ignored by readers (git gc removes it), as on git's own failures
        await files.unlink(idxTmp).catch(() => undefined);
        throw new PackError('STORE_IO', `cannot write ${idxPath}`, { cause: error });
      }
      blocks.length = 0;
      // the index just written needs no reading back nor verifying
      host.addPack(base, new PackIndex(idx), length);
    },
    async abort() {
      if (aborted || (closed && blocks.length === 0)) return;
      await release();
    },
  };
}
