/**
 * Node's file system in the shape `GitFs` wants: `fs.promises` (isomorphic-git's shape, with
 * `rename` and `open(path, 'wx')`, so lock files are real O_EXCL files that real git respects),
 * plus `readRange`, a positional read, and `readdirTypes`, a typed listing.
 *
 * Two ways to make the calls:
 *   - asynchronous (`fs.promises`): each call is a round trip to libuv's thread pool, and the
 *     event loop stays free meanwhile;
 *   - synchronous (`fs.*Sync` behind the same promise API): no thread-pool round trip, which on
 *     a busy or virtualised machine costs far more than the system call itself (a clone makes a
 *     few dozen such calls), but the thread waits on the disk.
 * The default is synchronous in a worker thread, whose event loop exists for this work, and
 * asynchronous on the main thread, which must keep answering; `sync` chooses.
 */
import * as fs from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { openPackSpool } from '@gitport/pack/internal/pack-spool';
import type { FileHandleLike, FsLike, FsPromisesLike } from './fs.js';

export interface NodeFsOptions {
  /** Synchronous system calls behind the promise API (default: in worker threads only). */
  sync?: boolean;
}

type NodeFsPromises = FsPromisesLike & {
  chmod(path: string, mode: number): Promise<void>;
  readRange(path: string, offset: number, length: number): Promise<Uint8Array>;
};

export function nodeFs(options: NodeFsOptions = {}): FsLike {
  const promises = (options.sync ?? !isMainThread) ? syncPromises() : asyncPromises();
  // the default object store over this fs spools incoming packs to disk (see repository.ts)
  return { promises: Object.assign(promises, { packSpool: openPackSpool }) };
}

function asyncPromises(): NodeFsPromises {
  const p = fs.promises;
  return {
    readFile: (path, options) => p.readFile(path, options),
    writeFile: (path, data, options) => p.writeFile(path, data, options),
    unlink: (path) => p.unlink(path),
    readdir: (path) => p.readdir(path),
    readdirTypes: (path) => p.readdir(path, { withFileTypes: true }),
    mkdir: (path, options) => p.mkdir(path, options),
    rmdir: (path, options) => p.rmdir(path, options),
    stat: (path) => p.stat(path),
    lstat: (path) => p.lstat(path),
    rename: (from, to) => p.rename(from, to),
    open: (path, flags) => p.open(path, flags),
    readlink: (path) => p.readlink(path),
    symlink: (target, path) => p.symlink(target, path),
    chmod: (path: string, mode: number) => p.chmod(path, mode),
    async readRange(path, offset, length) {
      const handle = await p.open(path, 'r');
      try {
        const out = new Uint8Array(length);
        let done = 0;
        while (done < length) {
          const { bytesRead } = await handle.read(out, done, length - done, offset + done);
          if (bytesRead === 0) break;
          done += bytesRead;
        }
        return done === length ? out : out.subarray(0, done);
      } finally {
        await handle.close();
      }
    },
  };
}

/** The call's result as a settled promise: a thrown error (with its `code`) becomes a rejection. */
function settled<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Reads up to `length` bytes at `offset` of an open file; fewer at its end. */
function readFully(fd: number, offset: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = fs.readSync(fd, out, done, length - done, offset + done);
    if (n === 0) break;
    done += n;
  }
  return done === length ? out : out.subarray(0, done);
}

/** A file handle over a descriptor, with FileHandle's write, read and close, and a synchronous read. */
class SyncHandle implements FileHandleLike {
  #fd: number | undefined;
  constructor(fd: number) {
    this.#fd = fd;
  }
  #open(): number {
    if (this.#fd === undefined) {
      throw Object.assign(new Error('EBADF: file handle closed'), { code: 'EBADF', syscall: 'write' });
    }
    return this.#fd;
  }
  write(data: Uint8Array | string, offset?: number, length?: number, position?: number | null) {
    return settled(() => {
      const fd = this.#open();
      if (typeof data === 'string') return { bytesWritten: fs.writeSync(fd, data, position ?? null) };
      const from = offset ?? 0;
      return { bytesWritten: fs.writeSync(fd, data, from, length ?? data.byteLength - from, position ?? null) };
    });
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number) {
    return settled(() => ({ bytesRead: fs.readSync(this.#open(), buffer, offset, length, position) }));
  }
  readSync(buffer: Uint8Array, offset: number, length: number, position: number): number {
    return fs.readSync(this.#open(), buffer, offset, length, position);
  }
  close(): Promise<void> {
    return settled(() => {
      const fd = this.#fd;
      this.#fd = undefined;
      if (fd !== undefined) fs.closeSync(fd);
    });
  }
}

function syncPromises(): NodeFsPromises {
  return {
    readFile: (path, options) => settled(() => fs.readFileSync(path, options)),
    writeFile: (path, data, options) => settled(() => fs.writeFileSync(path, data, options)),
    unlink: (path) => settled(() => fs.unlinkSync(path)),
    readdir: (path) => settled(() => fs.readdirSync(path)),
    readdirTypes: (path) => settled(() => fs.readdirSync(path, { withFileTypes: true })),
    mkdir: (path, options) => settled(() => fs.mkdirSync(path, options)),
    rmdir: (path, options) => settled(() => fs.rmdirSync(path, options)),
    stat: (path) => settled(() => fs.statSync(path)),
    lstat: (path) => settled(() => fs.lstatSync(path)),
    rename: (from, to) => settled(() => fs.renameSync(from, to)),
    open: (path, flags) => settled(() => new SyncHandle(fs.openSync(path, flags))),
    readlink: (path) => settled(() => fs.readlinkSync(path)),
    symlink: (target, path) => settled(() => fs.symlinkSync(target, path)),
    chmod: (path: string, mode: number) => settled(() => fs.chmodSync(path, mode)),
    readRange: (path, offset, length) =>
      settled(() => {
        const fd = fs.openSync(path, 'r');
        try {
          return readFully(fd, offset, length);
        } finally {
          fs.closeSync(fd);
        }
      }),
  };
}
