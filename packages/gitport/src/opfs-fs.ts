/**
 * The Origin Private File System (File System Access API, `navigator.storage.getDirectory()`)
 * in isomorphic-git's fs shape. Paths are `/`-separated under the given root directory handle.
 * In a dedicated worker, `writeFile` writes in place through a sync access handle what no reader
 * may see half written: new or empty files, scratch files (`isScratchName`) and large ones (see
 * `SYNC_WRITE_MIN`); otherwise, and outside workers, it goes through `createWritable()`, which
 * writes a swap file and replaces the target on close (so readers never see half a file).
 * Scratch files' handles are kept from their write to their rename. `rename` uses
 * `FileSystemHandle.move` where the browser has it and copies otherwise; `readRange` slices the `File` (a positional read);
 * `readdirTypes` lists with each entry's kind, so a walk of refs need not open each entry to
 * find the directories.
 * Directory handles are kept once looked up (each level of a path costs a round trip to the
 * browser otherwise, for every operation); an operation that fails with NotFoundError through a
 * kept handle is tried once more along a fresh walk, so a directory another context removed (and
 * perhaps made again) is never taken for missing.
 * Where sync access handles exist, `promises.packSpool` spools incoming packs (opfs-spool.ts):
 * their files are made and opened while the pack arrives, and written once it checked out.
 * Exclusive creation is left to `GitFs`, which emulates it with Web Locks.
 */
import type { PackSpoolOpener } from '@gitport/pack';
import { GitportError } from './errors.js';
import type { DirEntry, FsLike, FsPromisesLike, FsStat } from './fs.js';
import { openOpfsSpool, type SpoolFiles } from './opfs-spool.js';

class OpfsError extends Error {
  constructor(
    readonly code: string,
    syscall: string,
    path: string,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${syscall} '${path}'`, options);
  }
}

type DirHandle = FileSystemDirectoryHandle & {
  keys(): AsyncIterable<string>;
  entries(): AsyncIterable<[string, FileSystemHandle]>;
};
type FileHandle = FileSystemFileHandle & {
  move?(parent: FileSystemDirectoryHandle, name: string): Promise<void>;
};

/**
 * Files from this size on are written in place through a sync access handle where the context
 * has one (dedicated workers): one sequential write instead of a swap file copied over the
 * target on close. gitport writes such files (packs, their indexes) to temporary names and
 * renames them into place, so no reader sees one half written.
 */
const SYNC_WRITE_MIN = 256 * 1024;

/**
 * Whether a file name is one gitport (as git) writes whole and then renames into place, or holds
 * as a lock: `tmp_*` (object store files) and `*.lock`. Nobody reads such a file while it is
 * written, so it is written in place through a sync access handle whatever its size.
 */
const isScratchName = (name: string) => name.startsWith('tmp_') || name.endsWith('.lock');

/** Directory handles kept at most (the cache is emptied when full). */
const DIR_CACHE_MAX = 4096;

interface SyncAccessHandle {
  getSize(): number;
  truncate(size: number): void;
  write(data: Uint8Array, options: { at: number }): number;
  close(): void;
}

function syncAccessOpener(handle: FileSystemFileHandle): (() => Promise<SyncAccessHandle>) | undefined {
  const open = (handle as { createSyncAccessHandle?: () => Promise<SyncAccessHandle> }).createSyncAccessHandle;
  return typeof open === 'function' ? () => open.call(handle) : undefined;
}

function writeAll(access: SyncAccessHandle, bytes: Uint8Array, at: number, name: string): void {
  let done = 0;
  while (done < bytes.length) {
    const n = access.write(bytes.subarray(done), { at: at + done });
    if (n <= 0) throw new OpfsError('EIO', 'write', name);
    done += n;
  }
}

/**
 * Writes `data` as the whole file through a sync access handle; false where there is none (a
 * window, another browser) or the file is open elsewhere, and, unless `always`, when the file
 * already holds bytes (the caller then replaces it through a swap file, which readers never see
 * half written). A new file written in place costs two round trips to the browser that wait,
 * against four for a writable stream: a repository's layout and its ref locks are new files.
 */
async function writeInPlace(handle: FileSystemFileHandle, data: Uint8Array, always: boolean): Promise<boolean> {
  const open = syncAccessOpener(handle);
  if (!open) return false;
  let access: SyncAccessHandle;
  try {
    access = await open();
  } catch {
    return false;
  }
  try {
    if (!always && access.getSize() > 0) return false;
    // sized first: a file the write itself grows costs more to write
    access.truncate(data.length);
    writeAll(access, data, 0, handle.name);
  } finally {
    access.close();
  }
  return true;
}

/**
 * Whether directory handles follow their path (the File System standard's locators, as
 * Chromium's do): a kept handle then reaches a directory another context removed and made again,
 * and NotFoundError through it means the entry is missing, with no fresh walk to try. Learnt once
 * per realm by a probe in the origin's root (a directory made, removed, made again, then written
 * through its first handle and read through a new one); until then, and wherever the probe fails,
 * a NotFoundError through a kept handle is tried again along a fresh walk.
 */
let handlesFollowPaths = false;
let probeStarted = false;

async function probeHandles(root: FileSystemDirectoryHandle): Promise<void> {
  const name = `.gitport-probe-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  try {
    const first = await root.getDirectoryHandle(name, { create: true });
    await root.removeEntry(name);
    const again = await root.getDirectoryHandle(name, { create: true });
    await first.getFileHandle('probe', { create: true });
    await again.getFileHandle('probe');
    handlesFollowPaths = true;
  } catch {
    // an entry-based handle (or no probe possible): the fresh walk stays
  } finally {
    await root.removeEntry(name, { recursive: true }).catch(() => {});
  }
}

/** Reads of a file that keeps being replaced while it is read, before the error is let through. */
const READ_ATTEMPTS = 5;

function split(path: string): string[] {
  return path.split('/').filter((p) => p !== '' && p !== '.');
}

const errorName = (error: unknown) => (error as { name?: string } | undefined)?.name;

const translate = (error: unknown, syscall: string, path: string): Error => {
  if (error instanceof OpfsError) return error;
  const name = errorName(error);
  if (name === 'NotFoundError') return new OpfsError('ENOENT', syscall, path, { cause: error });
  if (name === 'TypeMismatchError') return new OpfsError('ENOTDIR', syscall, path, { cause: error });
  if (name === 'InvalidModificationError') return new OpfsError('ENOTEMPTY', syscall, path, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
};

export class OpfsFs implements FsLike {
  readonly #root: Promise<FileSystemDirectoryHandle>;
  /** Directory handles by path below the root (`a/b`), as looked up. */
  readonly #dirs = new Map<string, FileSystemDirectoryHandle>();
  /**
   * Handles of scratch files (`isScratchName`) written here and not yet renamed or removed, by
   * path below the root: the rename that follows each such write needs no lookup of its own.
   */
  readonly #scratch = new Map<string, FileSystemFileHandle>();
  /** With `packSpool` where sync access handles exist (dedicated workers): see opfs-spool.ts. */
  readonly promises: FsPromisesLike & { packSpool?: PackSpoolOpener };

  /** `root` defaults to the origin's OPFS root directory. */
  constructor(root?: FileSystemDirectoryHandle | Promise<FileSystemDirectoryHandle>) {
    const storage = (
      globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } }
    ).navigator?.storage;
    if (root === undefined && typeof storage?.getDirectory !== 'function') {
      throw new GitportError('OPFS_UNSUPPORTED', 'navigator.storage.getDirectory is not available here');
    }
    this.#root = Promise.resolve(root ?? storage!.getDirectory!());
    if (!probeStarted && typeof storage?.getDirectory === 'function') {
      probeStarted = true;
      storage
        .getDirectory()
        .then(probeHandles)
        .catch(() => {});
    }
    const self = this;
    this.promises = {
      async readFile(path: string, options?: { encoding?: string } | string) {
        const bytes = await self.#read(path, 'open', (file) => file);
        const encoding = typeof options === 'string' ? options : options?.encoding;
        return encoding === 'utf8' || encoding === 'utf-8' ? new TextDecoder().decode(bytes) : bytes;
      },
      async writeFile(path: string, data: Uint8Array | string) {
        const { handle, scratch } = await self.#createFile(path);
        const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
        if (await writeInPlace(handle, bytes, scratch || bytes.length >= SYNC_WRITE_MIN)) return;
        const writable = await handle.createWritable();
        await writable.write(bytes as Uint8Array<ArrayBuffer>);
        await writable.close();
      },
      async unlink(path: string) {
        const parts = split(path);
        const name = parts.pop()!;
        self.#scratch.delete([...parts, name].join('/'));
        await self.#file(path, 'unlink');
        try {
          await self.#within(parts, 'unlink', path, (dir) => dir.removeEntry(name));
        } catch (error) {
          throw translate(error, 'unlink', path);
        }
      },
      async readdir(path: string) {
        try {
          return await self.#within(split(path), 'scandir', path, async (dir) => {
            const names: string[] = [];
            for await (const name of (dir as DirHandle).keys()) names.push(name);
            return names.sort();
          });
        } catch (error) {
          throw translate(error, 'scandir', path);
        }
      },
      async readdirTypes(path: string): Promise<DirEntry[]> {
        let entries: DirEntry[];
        try {
          entries = await self.#within(split(path), 'scandir', path, async (dir) => {
            const listed: DirEntry[] = [];
            for await (const [name, handle] of (dir as DirHandle).entries()) {
              const directory = handle.kind === 'directory';
              listed.push({ name, isDirectory: () => directory, isFile: () => !directory });
            }
            return listed;
          });
        } catch (error) {
          throw translate(error, 'scandir', path);
        }
        return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      },
      async mkdir(path: string, options?: { recursive?: boolean }) {
        const parts = split(path);
        const name = parts.pop();
        if (!name) {
          if (options?.recursive) return;
          throw new OpfsError('EEXIST', 'mkdir', path);
        }
        if (options?.recursive) {
          // as Node's: an existing directory is fine, so one call makes it or finds it; a
          // missing parent is made first
          const create = () =>
            self
              .#within(parts, 'mkdir', path, (dir) => dir.getDirectoryHandle(name, { create: true }))
              .catch((error: unknown) => {
                // the walk's own errors come translated; the entry itself a file: it exists
                if (errorName(error) === 'TypeMismatchError') throw new OpfsError('EEXIST', 'mkdir', path);
                throw translate(error, 'mkdir', path);
              });
          let made: FileSystemDirectoryHandle;
          try {
            made = await create();
          } catch (error) {
            if ((error as { code?: string }).code !== 'ENOENT' || parts.length === 0) throw error;
            await self.promises.mkdir(parts.join('/'), { recursive: true });
            made = await create();
          }
          self.#keep([...parts, name].join('/'), made);
          return;
        }
        const made = await self
          .#within(parts, 'mkdir', path, async (dir) => {
            try {
              await dir.getDirectoryHandle(name);
              throw new OpfsError('EEXIST', 'mkdir', path);
            } catch (error) {
              if (error instanceof OpfsError) throw error;
              if (errorName(error) === 'TypeMismatchError') throw new OpfsError('EEXIST', 'mkdir', path);
            }
            return dir.getDirectoryHandle(name, { create: true });
          })
          .catch((error: unknown) => {
            throw translate(error, 'mkdir', path);
          });
        self.#keep([...parts, name].join('/'), made);
      },
      async rmdir(path: string) {
        const parts = split(path);
        const name = parts.pop();
        if (!name) throw new OpfsError('EBUSY', 'rmdir', path);
        try {
          await self.#within(parts, 'rmdir', path, async (parent) => {
            // a missing entry is ENOENT, a file ENOTDIR (as Node says)
            await parent.getDirectoryHandle(name);
            await parent.removeEntry(name);
          });
        } catch (error) {
          throw translate(error, 'rmdir', path);
        } finally {
          self.#forget([...parts, name].join('/'));
          self.#scratch.clear();
        }
      },
      async stat(path: string): Promise<FsStat> {
        const parts = split(path);
        if (parts.length === 0) return dirStat();
        const name = parts.pop()!;
        try {
          const file = await self.#within(parts, 'stat', path, async (dir) =>
            (await dir.getFileHandle(name)).getFile(),
          );
          return {
            isFile: () => true,
            isDirectory: () => false,
            isSymbolicLink: () => false,
            type: 'file',
            size: file.size,
            mtimeMs: file.lastModified,
            ctimeMs: file.lastModified,
            mode: 0o100644,
            dev: 1,
            ino: 0,
            uid: 1,
            gid: 1,
          } as FsStat;
        } catch (error) {
          if (errorName(error) !== 'TypeMismatchError') throw translate(error, 'stat', path);
        }
        return dirStat();
      },
      async lstat(path: string) {
        return self.promises.stat(path);
      },
      async rename(from: string, to: string) {
        const key = split(from).join('/');
        const kept = self.#scratch.get(key) as FileHandle | undefined;
        self.#scratch.delete(key);
        const handle = kept ?? ((await self.#file(from, 'rename')) as FileHandle);
        const parts = split(to);
        const name = parts.pop()!;
        if (typeof handle.move === 'function') {
          try {
            await self.#within(parts, 'rename', to, (target) => handle.move!(target, name));
          } catch (error) {
            // a kept handle of a file another context removed meanwhile: looked up afresh
            if (kept && errorName(error) === 'NotFoundError') return self.promises.rename!(from, to);
            throw translate(error, 'rename', to);
          }
          return;
        }
        const bytes = (await self.promises.readFile(from)) as Uint8Array;
        await self.promises.writeFile(to, bytes);
        await self.promises.unlink(from);
      },
      async readlink(path: string) {
        await self.#file(path, 'readlink');
        throw new OpfsError('EINVAL', 'readlink', path);
      },
      async symlink(_target: string, path: string) {
        throw new OpfsError('ENOSYS', 'symlink', path);
      },
      async readRange(path: string, offset: number, length: number) {
        return self.#read(path, 'read', (file) => file.slice(offset, offset + length));
      },
    };
    if (typeof (globalThis as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function') {
      const files: SpoolFiles = {
        makeDirs: (path) => self.#makeDirs(split(path)),
        open: (path) => self.#openSync(path),
        writeFile: async (path, data) => {
          await self.promises.writeFile(path, data);
        },
        rename: async (from, to) => {
          await self.promises.rename!(from, to);
        },
        unlink: async (path) => {
          await self.promises.unlink(path);
        },
      };
      this.promises.packSpool = async (host) => openOpfsSpool(host, files);
    }
  }

  /**
   * Makes the directories of `parts`, each level made or found in one call (no lookup that finds
   * it missing first), and keeps their handles.
   */
  async #makeDirs(parts: string[]): Promise<void> {
    let dir = await this.#root;
    let key = '';
    for (const part of parts) {
      key = key === '' ? part : `${key}/${part}`;
      try {
        dir = await dir.getDirectoryHandle(part, { create: true });
      } catch (error) {
        throw translate(error, 'mkdir', parts.join('/'));
      }
      this.#keep(key, dir);
    }
  }

  /**
   * The file at `path`, made if missing; a scratch file's handle is kept for the rename that
   * follows it.
   */
  async #createFile(path: string): Promise<{ handle: FileSystemFileHandle; scratch: boolean }> {
    const parts = split(path);
    const name = parts.pop();
    if (!name) throw new OpfsError('EISDIR', 'open', path);
    let handle: FileSystemFileHandle;
    try {
      handle = await this.#within(parts, 'open', path, (dir) => dir.getFileHandle(name, { create: true }));
    } catch (error) {
      throw translate(error, 'open', path);
    }
    const scratch = isScratchName(name);
    if (scratch) this.#keepScratch([...parts, name].join('/'), handle);
    return { handle, scratch };
  }

  /** A sync access handle on the file at `path`, made if missing (see `#createFile`). */
  async #openSync(path: string): Promise<SyncAccessHandle> {
    const { handle } = await this.#createFile(path);
    const open = syncAccessOpener(handle);
    if (!open) throw new OpfsError('ENOSYS', 'open', path);
    return open();
  }

  #keepScratch(key: string, file: FileSystemFileHandle): void {
    if (this.#scratch.size >= DIR_CACHE_MAX) this.#scratch.clear();
    this.#scratch.set(key, file);
  }

  #keep(key: string, dir: FileSystemDirectoryHandle): void {
    if (this.#dirs.size >= DIR_CACHE_MAX) this.#dirs.clear();
    this.#dirs.set(key, dir);
  }

  /** Drops the kept handles of `key` and of everything below it. */
  #forget(key: string): void {
    const below = `${key}/`;
    for (const k of this.#dirs.keys()) if (k === key || k.startsWith(below)) this.#dirs.delete(k);
  }

  /**
   * The directory at `parts` (browser errors as thrown), each level from the kept handles unless
   * `fresh`; `used` learns whether a kept handle was taken.
   */
  async #walk(parts: string[], fresh: boolean, used?: { kept: boolean }): Promise<FileSystemDirectoryHandle> {
    let dir = await this.#root;
    let key = '';
    for (const part of parts) {
      key = key === '' ? part : `${key}/${part}`;
      const kept = fresh ? undefined : this.#dirs.get(key);
      if (kept) {
        dir = kept;
        if (used) used.kept = true;
        continue;
      }
      try {
        dir = await dir.getDirectoryHandle(part);
      } catch (error) {
        // a fresh walk that finds a level missing: what was kept of it and below is stale
        if (fresh) this.#forget(key);
        throw error;
      }
      this.#keep(key, dir);
    }
    return dir;
  }

  /**
   * `fn` on the directory at `parts`: a failed walk throws the error translated for `syscall`,
   * `fn`'s own errors go through as thrown. NotFoundError after a kept handle was taken may come
   * from a directory another context removed (in browsers whose handles name an entry rather
   * than a path, even once it is made again): the walk is then done afresh from the root,
   * keeping the handles it finds, and `fn` runs once more on it. A missing entry so costs one
   * walk, as every operation did before handles were kept; not where handles follow their path
   * (`handlesFollowPaths`), as the kept one then names the directory there now.
   */
  async #within<T>(
    parts: string[],
    syscall: string,
    path: string,
    fn: (dir: FileSystemDirectoryHandle) => Promise<T>,
  ): Promise<T> {
    const used = { kept: false };
    let dir: FileSystemDirectoryHandle | undefined;
    try {
      dir = await this.#walk(parts, false, used);
      return await fn(dir);
    } catch (error) {
      if (!used.kept || errorName(error) !== 'NotFoundError' || handlesFollowPaths) {
        throw dir === undefined ? translate(error, syscall, path) : error;
      }
    }
    let fresh: FileSystemDirectoryHandle;
    try {
      fresh = await this.#walk(parts, true);
    } catch (error) {
      throw translate(error, syscall, path);
    }
    return fn(fresh);
  }

  /**
   * The bytes of `part(file)` for the file at `path`. A `File` is a snapshot: when another
   * context replaces the file (a lock file moved over it) between taking the snapshot and reading
   * it, the read fails with NotReadableError; the file is then looked up and read again.
   */
  async #read(path: string, syscall: string, part: (file: File) => Blob): Promise<Uint8Array> {
    for (let attempt = 1; ; attempt++) {
      const file = await (await this.#file(path, syscall)).getFile();
      try {
        return new Uint8Array(await part(file).arrayBuffer());
      } catch (error) {
        if (errorName(error) !== 'NotReadableError' || attempt === READ_ATTEMPTS) {
          throw translate(error, syscall, path);
        }
      }
    }
  }

  async #file(path: string, syscall: string): Promise<FileSystemFileHandle> {
    const parts = split(path);
    const name = parts.pop();
    if (!name) throw new OpfsError('EISDIR', syscall, path);
    try {
      return await this.#within(parts, syscall, path, (dir) => dir.getFileHandle(name));
    } catch (error) {
      if (errorName(error) === 'TypeMismatchError') throw new OpfsError('EISDIR', syscall, path);
      throw translate(error, syscall, path);
    }
  }
}

function dirStat(): FsStat {
  const stat = { isFile: () => false, isDirectory: () => true, isSymbolicLink: () => false, type: 'dir', size: 0 };
  return { ...stat, mtimeMs: 0, ctimeMs: 0, mode: 0o040755, dev: 1, ino: 0, uid: 1, gid: 1 } as FsStat;
}
