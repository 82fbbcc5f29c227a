/**
 * The injected file system, in the shape isomorphic-git uses (`fs.promises.readFile`, `writeFile`,
 * `unlink`, `readdir`, `mkdir`, `rmdir`, `stat`, `lstat`): Node's `fs`, lightning-fs, and OPFS
 * and in-memory adapters fit. The optional members are extras used when present (gitport's
 * `GitFs` says what each is for); object stores need only a part of it (`ObjectStoreFs`).
 */

export interface FsStat {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink?(): boolean;
  size: number;
  mtimeMs: number;
  ino?: number | bigint;
}

/** One entry of a typed listing (Node's `Dirent` fits). */
export interface DirEntry {
  name: string;
  isFile(): boolean;
  isDirectory(): boolean;
}

/** What `open()` returns: Node's FileHandle shape. */
export interface FileHandleLike {
  /** Positional read, into `buffer` from `offset` (packs are read at their entries' offsets). */
  read?(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number } | number>;
  /**
   * `read` done synchronously, returning the bytes read (Node's fs in a worker thread): a large
   * pack index then reads its ids from its file when asked instead of holding them.
   */
  readSync?(buffer: Uint8Array, offset: number, length: number, position: number): number;
  /** Sequential write, or at `position` when given (lock files, packs written as they arrive). */
  write?(
    data: Uint8Array | string,
    offset?: number,
    length?: number,
    position?: number,
  ): Promise<{ bytesWritten: number } | number>;
  /** Writes `buffers` one after another at `position` in one call (Node's FileHandle has it). */
  writev?(buffers: Uint8Array[], position?: number): Promise<{ bytesWritten: number } | number>;
  close(): Promise<void>;
}

/** `fs.promises` in the shape isomorphic-git uses. */
export interface FsPromisesLike {
  // biome-ignore lint/suspicious/noExplicitAny: the options differ between Node, lightning-fs and OPFS adapters
  readFile(path: string, options?: any): Promise<Uint8Array | string>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  writeFile(path: string, data: Uint8Array | string, options?: any): Promise<unknown>;
  unlink(path: string): Promise<unknown>;
  readdir(path: string): Promise<string[]>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  mkdir(path: string, options?: any): Promise<unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  rmdir(path: string, options?: any): Promise<unknown>;
  stat(path: string): Promise<FsStat>;
  lstat(path: string): Promise<FsStat>;
  rename?(from: string, to: string): Promise<unknown>;
  open?(path: string, flags: string): Promise<FileHandleLike>;
  readRange?(path: string, offset: number, length: number): Promise<Uint8Array>;
  readdirTypes?(path: string): Promise<DirEntry[]>;
  /** isomorphic-git binds these two; file systems without links throw. */
  readlink?(path: string): Promise<string | Uint8Array>;
  symlink?(target: string, path: string): Promise<unknown>;
}

/** isomorphic-git's fs shape: an object with `promises`. */
export interface FsLike {
  promises: FsPromisesLike;
}

/**
 * The part of `FsPromisesLike` an object store over a `.git/objects` directory uses: `rename`
 * (new files are moved into place) is required, `rmdir` and `open` are used when present, and
 * of `stat` only the size.
 */
export type ObjectStoreFs = Pick<FsPromisesLike, 'readFile' | 'writeFile' | 'unlink' | 'readdir' | 'mkdir' | 'open'> &
  Partial<Pick<FsPromisesLike, 'rmdir'>> &
  Required<Pick<FsPromisesLike, 'rename'>> & {
    stat(path: string): Promise<{ size: number }>;
  };
