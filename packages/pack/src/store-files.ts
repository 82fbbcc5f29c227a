/**
 * The file operations of a store over an objects directory: bytes read as plain Uint8Arrays,
 * directories made once, and new files written to a temporary name, then renamed into place
 * (as git does), so that a reader never sees a file half written.
 */
import { PackError } from './errors.js';
import type { FileHandleLike, ObjectStoreFs } from './fs-like.js';
import { concatBytes } from './object.js';

export function isEnoent(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function isEexist(error: unknown): boolean {
  return (error as { code?: unknown })?.code === 'EEXIST';
}

/** A plain Uint8Array view (a Node Buffer's `slice` would not copy). */
export function toBytes(data: Uint8Array | string): Uint8Array {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  return data.constructor === Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Bytes written by a FileHandle's `write` (Node reports an object, some adapters a number). */
export function bytesWritten(result: { bytesWritten: number } | number): number {
  return typeof result === 'number' ? result : result.bytesWritten;
}

/** Bytes read by a FileHandle's `read`. */
export function bytesRead(result: { bytesRead: number } | number): number {
  return typeof result === 'number' ? result : result.bytesRead;
}

/** Tells temporary files apart within one millisecond (names are per process: stores share it). */
let tmpCounter = 0;

export class StoreFiles {
  readonly fs: ObjectStoreFs;

  constructor(fs: ObjectStoreFs) {
    this.fs = fs;
  }

  async readBytes(path: string): Promise<Uint8Array> {
    return toBytes(await this.fs.readFile(path));
  }

  /** Opens a file for positional reads; undefined when the fs has no handles with `read`. */
  async openForRead(path: string): Promise<(FileHandleLike & Pick<Required<FileHandleLike>, 'read'>) | undefined> {
    if (!this.fs.open) return undefined;
    const handle = await this.fs.open(path, 'r');
    if (handle.read) return handle as FileHandleLike & Pick<Required<FileHandleLike>, 'read'>;
    await handle.close();
    return undefined;
  }

  async mkdir(path: string): Promise<void> {
    try {
      await this.fs.mkdir(path, { recursive: true });
    } catch (error) {
      if (!isEexist(error)) throw new PackError('STORE_IO', `cannot create ${path}`, { cause: error });
    }
  }

  tmpName(dir: string, kind: string): string {
    return `${dir}/tmp_${kind}_${Date.now().toString(36)}_${(tmpCounter++).toString(36)}`;
  }

  /** Writes `data` (one buffer or chunks) to a temporary file in `dir`, then renames it to `path`. */
  async atomicWrite(path: string, data: Uint8Array | readonly Uint8Array[], dir: string): Promise<void> {
    const tmp = this.tmpName(dir, 'obj');
    try {
      if (data instanceof Uint8Array || !(await this.#writeChunks(tmp, data))) {
        await this.fs.writeFile(tmp, data instanceof Uint8Array ? data : concatBytes(data));
      }
      await this.fs.rename(tmp, path);
    } catch (error) {
      await this.fs.unlink(tmp).catch(() => undefined);
      throw new PackError('STORE_IO', `cannot write ${path}`, { cause: error });
    }
  }

  /**
   * `atomicWrite` of several files at once: every temporary file is written concurrently (a
   * browser file system takes each write as a round trip of its own), then each is renamed into
   * place in the order given, so a reader that needs the first to use the second (a pack before
   * its index) never sees the second alone. A failure removes the temporary files not renamed.
   */
  async atomicWriteAll(files: readonly { path: string; data: Uint8Array | readonly Uint8Array[] }[], dir: string) {
    const tmps = files.map(() => this.tmpName(dir, 'obj'));
    /** The file being written or renamed when a step fails. */
    let at = 0;
    let renamed = 0;
    try {
      const written = await Promise.allSettled(
        files.map(async ({ data }, i) => {
          if (data instanceof Uint8Array || !(await this.#writeChunks(tmps[i]!, data))) {
            await this.fs.writeFile(tmps[i]!, data instanceof Uint8Array ? data : concatBytes(data));
          }
        }),
      );
      at = written.findIndex((outcome) => outcome.status === 'rejected');
      if (at >= 0) throw (written[at] as PromiseRejectedResult).reason;
      for (; renamed < files.length; renamed++) {
        at = renamed;
        await this.fs.rename(tmps[renamed]!, files[renamed]!.path);
      }
    } catch (error) {
      await Promise.all(tmps.slice(renamed).map((tmp) => this.fs.unlink(tmp).catch(() => undefined)));
      throw new PackError('STORE_IO', `cannot write ${files[at]!.path}`, { cause: error });
    }
  }

  /** Writes chunks one by one through a file handle when the fs has one; false otherwise. */
  async #writeChunks(path: string, chunks: readonly Uint8Array[]): Promise<boolean> {
    if (!this.fs.open) return false;
    const handle = await this.fs.open(path, 'w');
    try {
      if (!handle.write) return false;
      for (const c of chunks) {
        let done = 0;
        while (done < c.length) {
          const n = bytesWritten(await handle.write(c, done, c.length - done));
          if (n <= 0) throw new PackError('STORE_IO', `short write to ${path}`);
          done += n;
        }
      }
      return true;
    } finally {
      await handle.close();
    }
  }
}
