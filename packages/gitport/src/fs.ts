/**
 * The injected file system, in the shape isomorphic-git uses (`fs.promises.readFile`, `writeFile`,
 * `unlink`, `readdir`, `mkdir`, `rmdir`, `stat`, `lstat`), so Node's `fs`, `@isomorphic-git/lightning-fs`
 * and the OPFS and memory adapters of this package all fit, plus two optional extras that
 * repositories use when present:
 *   - `rename(from, to)`: git's lock-file convention (`<ref>.lock` written, then renamed over the ref);
 *     without it the lock's content is copied over the target and the lock removed;
 *   - `open(path, 'wx')` (exclusive create, Node's semantics): the lock itself. Without it, exclusive
 *     creation is emulated under a lock held by this process (and, in browsers, by the Web Locks API,
 *     which spans every worker and tab of the origin), which is the mechanism on file systems that
 *     real git never shares.
 *   - `readRange(path, offset, length)`: a positional read for large packs and blobs.
 *   - `readdirTypes(path)`: a listing that tells directories from files (Node's
 *     `readdir(path, { withFileTypes: true })`), so a walk need not try each entry to find out.
 *
 * `GitFs` normalises all of them: missing files read as `undefined`, parents are created on write,
 * `ENOENT`/`EEXIST` are recognised by their `code`, and bytes are always `Uint8Array`.
 */
import type { FileHandleLike, FsLike, FsPromisesLike, FsStat } from '@gitport/pack';
import { GitportError } from './errors.js';

export type { DirEntry, FileHandleLike, FsLike, FsPromisesLike, FsStat } from '@gitport/pack';

/** An entry of `GitFs.listEntries`: `unknown` where the file system does not say (or for a link). */
export interface ListedEntry {
  name: string;
  kind: 'file' | 'dir' | 'unknown';
}

export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

const isMissing = (error: unknown) => {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'NotFoundError';
};

export function dirname(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? (path.startsWith('/') ? '/' : '.') : path.slice(0, i);
}

export function joinPath(...parts: string[]): string {
  const joined = parts.filter((p) => p.length > 0).join('/');
  return joined.replace(/\/+/g, '/');
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function toBytes(data: Uint8Array | string): Uint8Array {
  if (typeof data === 'string') return encoder.encode(data);
  // Node returns a Buffer (a Uint8Array subclass), lightning-fs a Uint8Array with its own
  // toString: present a plain view of the same bytes (no copy).
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

interface WebLocks {
  request<T>(name: string, callback: () => Promise<T>): Promise<T>;
}

function webLocks(): WebLocks | undefined {
  const nav = (globalThis as { navigator?: { locks?: WebLocks } }).navigator;
  return nav?.locks && typeof nav.locks.request === 'function' ? nav.locks : undefined;
}

/** A small in-process mutex per key: a chain of promises. */
class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const next = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => next);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}

const mutexes = new WeakMap<object, KeyedMutex>();

/** Tries of an exclusive create whose parent directory went away between mkdir and open. */
const CREATE_ATTEMPTS = 4;

export interface GitFsOptions {
  /** Name for Web Locks (when exclusive create is emulated); defaults to 'gitport'. */
  lockNamespace?: string;
}

/** A GitFs's lock namespace, private to it otherwise (for gitFsAfter). */
let lockNamespaceOf: (fs: GitFs) => string;

/** The normalised file system repositories use. */
export class GitFs {
  readonly raw: FsPromisesLike;
  readonly #mutex: KeyedMutex;
  readonly #lockNamespace: string;

  static {
    lockNamespaceOf = (fs) => fs.#lockNamespace;
  }

  constructor(fs: FsLike | FsPromisesLike, options: GitFsOptions = {}) {
    this.raw = 'promises' in fs && typeof fs.promises === 'object' ? fs.promises : (fs as FsPromisesLike);
    let mutex = mutexes.get(this.raw);
    if (!mutex) mutexes.set(this.raw, (mutex = new KeyedMutex()));
    this.#mutex = mutex;
    this.#lockNamespace = options.lockNamespace ?? 'gitport';
  }

  /** Whether exclusive creation is the file system's own (shared with real git) or emulated. */
  get nativeExclusive(): boolean {
    return typeof this.raw.open === 'function';
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    try {
      const data = await this.raw.readFile(path);
      if (data === undefined || data === null) {
        // lightning-fs answers a read of a directory with undefined.
        if ((await this.stat(path))?.isDirectory()) {
          throw Object.assign(new Error(`EISDIR: ${path}`), { code: 'EISDIR' });
        }
        return undefined;
      }
      return toBytes(data);
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw new GitportError('FS_READ_FAILED', `cannot read ${path}`, { cause: error });
    }
  }

  async readText(path: string): Promise<string | undefined> {
    const bytes = await this.read(path);
    return bytes === undefined ? undefined : decoder.decode(bytes);
  }

  async readRange(path: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    if (this.raw.readRange) {
      try {
        return toBytes(await this.raw.readRange(path, offset, length));
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    }
    const all = await this.read(path);
    return all?.subarray(offset, offset + length);
  }

  async stat(path: string): Promise<FsStat | undefined> {
    try {
      return await this.raw.stat(path);
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== undefined;
  }

  async list(dir: string): Promise<string[]> {
    try {
      return await this.raw.readdir(dir);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  /**
   * A directory's entries with their kinds where the file system tells them (`readdirTypes`);
   * `unknown` otherwise, and for what is neither a file nor a directory (a symbolic link).
   */
  async listEntries(dir: string): Promise<ListedEntry[]> {
    if (!this.raw.readdirTypes) return (await this.list(dir)).map((name) => ({ name, kind: 'unknown' as const }));
    try {
      return (await this.raw.readdirTypes(dir)).map((e) => ({
        name: e.name,
        kind: e.isDirectory() ? 'dir' : e.isFile() ? 'file' : 'unknown',
      }));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  async mkdirp(dir: string): Promise<void> {
    if (dir === '/' || dir === '.' || dir === '') return;
    const st = await this.stat(dir);
    if (st?.isDirectory()) return;
    await this.mkdirp(dirname(dir));
    try {
      await this.raw.mkdir(dir);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }

  /**
   * Creates `dir` (an existing one is fine) through the file system's recursive mkdir, which an
   * fs that asks before it creates (OPFS) does in one call. A missing parent is made by Node's
   * fs and OPFS; others fail with ENOENT (`mkdirp` then).
   */
  async mkdirIn(dir: string): Promise<void> {
    try {
      await this.raw.mkdir(dir, { recursive: true });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }

  /** Creates one directory whose parent exists (an existing one is fine). */
  async mkdir(dir: string): Promise<void> {
    try {
      await this.raw.mkdir(dir);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }

  async write(path: string, data: Uint8Array | string): Promise<void> {
    try {
      await this.raw.writeFile(path, data);
    } catch (error) {
      if (!isMissing(error)) throw error;
      await this.mkdirp(dirname(path));
      await this.raw.writeFile(path, data);
    }
  }

  async remove(path: string): Promise<void> {
    try {
      await this.raw.unlink(path);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  async removeDir(path: string): Promise<void> {
    try {
      await this.raw.rmdir(path);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  /** Removes a directory tree (for deleting repositories). */
  async removeTree(path: string): Promise<void> {
    // lstat: a symbolic link (one a checkout wrote) is removed, never followed
    let st: FsStat | undefined;
    try {
      st = await this.raw.lstat(path);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    if (!st) return;
    if (!st.isDirectory()) return this.remove(path);
    for (const name of await this.list(path)) await this.removeTree(joinPath(path, name));
    await this.removeDir(path);
  }

  /** Renames (atomically where the fs can); without `rename`, copies then removes. */
  async rename(from: string, to: string): Promise<void> {
    if (this.raw.rename) {
      await this.raw.rename(from, to);
      return;
    }
    const data = await this.read(from);
    if (data === undefined) throw new GitportError('FS_RENAME_FAILED', `cannot rename missing ${from}`);
    await this.write(to, data);
    await this.remove(from);
  }

  /**
   * Removes `dir` if it is an empty directory: true when it is gone (or was never there), false
   * when it holds anything or is not a directory.
   */
  async removeEmptyDir(dir: string): Promise<boolean> {
    try {
      await this.raw.rmdir(dir);
      return true;
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT' || code === 'NotFoundError') return true;
      return false;
    }
  }

  /**
   * Removes the empty directories of a tree rooted at `dir`, deepest first: true when none is
   * left (the tree held no file), false when a file (or something unreadable) is in it.
   */
  async removeEmptyTree(dir: string): Promise<boolean> {
    const st = await this.stat(dir);
    if (!st) return true;
    if (!st.isDirectory()) return false;
    for (const entry of await this.listEntries(dir)) {
      if (entry.kind === 'file') return false;
      if (!(await this.removeEmptyTree(joinPath(dir, entry.name)))) return false;
    }
    return this.removeEmptyDir(dir);
  }

  /**
   * Creates `path` with `data` only if it does not exist; false when it does. Native on file
   * systems with `open(path, 'wx')`; emulated under a process mutex and Web Locks otherwise.
   * Missing parents are created; when another writer removes an empty parent meanwhile (as ref
   * stores do after deleting a ref), creation is tried again, a bounded number of times.
   */
  async createExclusive(path: string, data: Uint8Array | string): Promise<boolean> {
    if (this.raw.open) {
      let handle: FileHandleLike | undefined;
      for (let attempt = 0; handle === undefined; attempt++) {
        try {
          handle = await this.raw.open(path, 'wx');
        } catch (error) {
          const code = errorCode(error);
          if (code === 'EEXIST') return false;
          // a file where a parent directory should be (ENOTDIR) is no missing parent
          if ((code !== 'ENOENT' && code !== 'NotFoundError') || attempt >= CREATE_ATTEMPTS) throw error;
          await this.mkdirp(dirname(path));
        }
      }
      try {
        // a handle that only holds the lock: the content is written as a file
        if (handle.write) await handle.write(data);
        else await this.raw.writeFile(path, data);
      } finally {
        await handle.close();
      }
      return true;
    }
    return this.withLock(`create:${path}`, async () => {
      if (await this.exists(path)) return false;
      await this.write(path, data);
      return true;
    });
  }

  /** Runs `fn` holding a lock named `key`, within this context and (in browsers) across contexts. */
  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const locks = webLocks();
    return this.#mutex.run(key, () => (locks ? locks.request(`${this.#lockNamespace}:${key}`, fn) : fn()));
  }
}

/**
 * `fs` with each call made once `ready` resolved (and failing as it failed): for stores opened
 * over a directory that is still being made. Its locks are those of `fs`.
 */
export function gitFsAfter(fs: GitFs, ready: Promise<unknown>): GitFs {
  // every member of a file system is async: each waits alike
  const gated = new Proxy(fs.raw, {
    get(target, key) {
      const value = (target as unknown as Record<string | symbol, unknown>)[key];
      // an opener of pack spools (see repository.ts) is told when the store is ready by its
      // host, whose file calls wait: the spool takes bytes meanwhile
      if (key === 'packSpool') return value;
      return typeof value === 'function' ? (...args: unknown[]) => ready.then(() => value.apply(target, args)) : value;
    },
  });
  // (every GitFs has registered its file system's)
  mutexes.set(gated, mutexes.get(fs.raw)!);
  return new GitFs(gated, { lockNamespace: lockNamespaceOf(fs) });
}
