/**
 * An in-memory file system in isomorphic-git's shape (`fs.promises`), with the extras `GitFs`
 * uses: `rename` (atomic), `open(path, 'wx')` (exclusive create) and `readRange`. Errors carry
 * Node's codes (`ENOENT`, `EEXIST`, `ENOTDIR`, `ENOTEMPTY`, `EISDIR`). Bytes are copied in and
 * out, so callers never share buffers with the store; what is written through a handle is kept
 * in the pieces written (copied once, never joined).
 */
import type { FileHandleLike, FsLike, FsPromisesLike, FsStat } from './fs.js';

/**
 * A file's bytes: one array, or the pieces written through a handle, kept as written: every read
 * copies out of them anyway, so joining them on close would be one more copy of the whole file.
 */
type Bytes = Uint8Array | readonly Uint8Array[];

type Node =
  | { kind: 'file'; data: Bytes; size: number; mtimeMs: number; ino: number }
  | { kind: 'dir'; mtimeMs: number; ino: number };

/**
 * Copies bytes `from` to `to` of `data` (clamped to its size, as `slice` does) into `into` at
 * `at`, by default into a new array; answers the bytes copied.
 */
function copyOut(data: Bytes, size: number, from: number, to: number, into?: Uint8Array, at = 0): Uint8Array {
  const start = Math.min(Math.max(from, 0), size);
  const end = Math.max(Math.min(to, size), start);
  if (data instanceof Uint8Array) {
    if (!into) return data.slice(start, end);
    into.set(data.subarray(start, end), at);
    return into.subarray(at, at + end - start);
  }
  const out = into ?? new Uint8Array(end - start);
  const base = into ? at : 0;
  let pieceStart = 0;
  for (const piece of data) {
    const pieceEnd = pieceStart + piece.length;
    if (pieceEnd > start && pieceStart < end) {
      const a = Math.max(start, pieceStart);
      const b = Math.min(end, pieceEnd);
      out.set(piece.subarray(a - pieceStart, b - pieceStart), base + a - start);
    }
    if (pieceEnd >= end) break;
    pieceStart = pieceEnd;
  }
  return into ? out.subarray(at, at + end - start) : out;
}

class FsError extends Error {
  constructor(
    readonly code: string,
    syscall: string,
    path: string,
  ) {
    super(`${code}: ${syscall} '${path}'`);
  }
}

function normalise(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Node's Stats fields (isomorphic-git reads ctime/mtime, dev, ino, mode, uid, gid and size). */
function statOf(node: Node): FsStat & Record<string, unknown> {
  return {
    isFile: () => node.kind === 'file',
    isDirectory: () => node.kind === 'dir',
    isSymbolicLink: () => false,
    type: node.kind,
    size: node.kind === 'file' ? node.size : 0,
    mtimeMs: node.mtimeMs,
    ctimeMs: node.mtimeMs,
    mode: node.kind === 'file' ? 0o100644 : 0o040755,
    dev: 1,
    ino: node.ino,
    uid: 1,
    gid: 1,
  };
}

export class MemoryFs implements FsLike {
  readonly #nodes = new Map<string, Node>([['/', { kind: 'dir', mtimeMs: Date.now(), ino: 1 }]]);
  #ino = 1;
  #clock = 0;
  readonly promises: FsPromisesLike & { open(path: string, flags: string): Promise<FileHandleLike> };

  constructor() {
    this.promises = {
      readFile: async (path: string, options?: { encoding?: string } | string) => {
        const node = this.#file(path, 'open');
        const copy = copyOut(node.data, node.size, 0, node.size);
        const encoding = typeof options === 'string' ? options : options?.encoding;
        return encoding === 'utf8' || encoding === 'utf-8' ? decoder.decode(copy) : copy;
      },
      writeFile: async (path: string, data: Uint8Array | string) => {
        this.#put(path, typeof data === 'string' ? encoder.encode(data) : data.slice(), false);
      },
      unlink: async (path: string) => {
        const p = normalise(path);
        this.#file(p, 'unlink');
        this.#nodes.delete(p);
      },
      readdir: async (path: string) => {
        const p = normalise(path);
        const node = this.#nodes.get(p);
        if (!node) throw new FsError('ENOENT', 'scandir', path);
        if (node.kind !== 'dir') throw new FsError('ENOTDIR', 'scandir', path);
        const prefix = p === '/' ? '/' : `${p}/`;
        const names: string[] = [];
        for (const key of this.#nodes.keys()) {
          if (key !== p && key.startsWith(prefix) && !key.slice(prefix.length).includes('/')) {
            names.push(key.slice(prefix.length));
          }
        }
        return names.sort();
      },
      mkdir: async (path: string) => {
        const p = normalise(path);
        if (this.#nodes.has(p)) throw new FsError('EEXIST', 'mkdir', path);
        this.#dir(parentOf(p), 'mkdir', path);
        this.#nodes.set(p, { kind: 'dir', mtimeMs: this.#now(), ino: ++this.#ino });
      },
      rmdir: async (path: string) => {
        const p = normalise(path);
        this.#dir(p, 'rmdir', path);
        const prefix = `${p}/`;
        for (const key of this.#nodes.keys()) {
          if (key.startsWith(prefix)) throw new FsError('ENOTEMPTY', 'rmdir', path);
        }
        this.#nodes.delete(p);
      },
      stat: async (path: string) => {
        const node = this.#nodes.get(normalise(path));
        if (!node) throw new FsError('ENOENT', 'stat', path);
        return statOf(node);
      },
      lstat: async (path: string) => this.promises.stat(path),
      rename: async (from: string, to: string) => {
        const f = normalise(from);
        const t = normalise(to);
        const node = this.#nodes.get(f);
        if (!node) throw new FsError('ENOENT', 'rename', from);
        this.#dir(parentOf(t), 'rename', to);
        if (node.kind === 'dir') {
          if (this.#nodes.has(t)) throw new FsError('EEXIST', 'rename', to);
          for (const [key, value] of [...this.#nodes]) {
            if (key === f || key.startsWith(`${f}/`)) {
              this.#nodes.delete(key);
              this.#nodes.set(t + key.slice(f.length), value);
            }
          }
          return;
        }
        if (this.#nodes.get(t)?.kind === 'dir') throw new FsError('EISDIR', 'rename', to);
        this.#nodes.delete(f);
        this.#nodes.set(t, { ...node, mtimeMs: this.#now() });
      },
      open: async (path: string, flags: string) => {
        if (flags === 'r') {
          const node = this.#file(path, 'open');
          return {
            read: async (buffer: Uint8Array, offset: number, length: number, position: number) => {
              const part = copyOut(node.data, node.size, position, position + length, buffer, offset);
              return { bytesRead: part.byteLength };
            },
            write: async () => {
              throw new FsError('EBADF', 'write', path);
            },
            close: async () => {},
          };
        }
        if (flags !== 'wx' && flags !== 'w') throw new FsError('EINVAL', 'open', path);
        this.#put(path, new Uint8Array(0), flags === 'wx');
        const chunks: Uint8Array[] = [];
        return {
          // Node's FileHandle.write(buffer, offset?, length?) / write(string): sequential writes.
          write: async (data: Uint8Array | string, offset = 0, length?: number) => {
            const bytes = typeof data === 'string' ? encoder.encode(data) : data;
            const part = bytes.slice(offset, length === undefined ? undefined : offset + length);
            chunks.push(part);
            return { bytesWritten: part.byteLength };
          },
          close: async () => {
            const node = this.#nodes.get(normalise(path));
            if (node?.kind !== 'file') return;
            node.data = chunks.length === 1 ? chunks[0]! : chunks;
            node.size = chunks.reduce((n, c) => n + c.byteLength, 0);
          },
        };
      },
      readlink: async (path: string) => {
        this.#file(path, 'readlink');
        throw new FsError('EINVAL', 'readlink', path);
      },
      symlink: async (_target: string, path: string) => {
        throw new FsError('ENOSYS', 'symlink', path);
      },
      readRange: async (path: string, offset: number, length: number) => {
        const node = this.#file(path, 'read');
        return copyOut(node.data, node.size, offset, offset + length);
      },
    };
  }

  #now(): number {
    // Strictly increasing, so caches that revalidate on mtime always see a change.
    this.#clock = Math.max(this.#clock + 1, Date.now());
    return this.#clock;
  }

  #file(path: string, syscall: string): Extract<Node, { kind: 'file' }> {
    const node = this.#nodes.get(normalise(path));
    if (!node) throw new FsError('ENOENT', syscall, path);
    if (node.kind !== 'file') throw new FsError('EISDIR', syscall, path);
    return node;
  }

  #dir(path: string, syscall: string, original: string): void {
    const node = this.#nodes.get(path);
    if (!node) throw new FsError('ENOENT', syscall, original);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', syscall, original);
  }

  #put(path: string, data: Uint8Array, exclusive: boolean): void {
    const p = normalise(path);
    this.#dir(parentOf(p), 'open', path);
    const existing = this.#nodes.get(p);
    if (existing && exclusive) throw new FsError('EEXIST', 'open', path);
    if (existing?.kind === 'dir') throw new FsError('EISDIR', 'open', path);
    this.#nodes.set(p, {
      kind: 'file',
      data,
      size: data.length,
      mtimeMs: this.#now(),
      ino: existing?.ino ?? ++this.#ino,
    });
  }
}
