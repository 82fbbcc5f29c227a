/**
 * Node's file system in the shape `GitFs` wants: `fs.promises` as it is (isomorphic-git's shape,
 * with `rename` and `open(path, 'wx')`, so lock files are real O_EXCL files that real git
 * respects), plus `readRange`, a positional read through a file handle.
 */
import * as fs from 'node:fs';
import type { FsLike, FsPromisesLike } from './fs.js';

export function nodeFs(): FsLike {
  const p = fs.promises;
  const promises: FsPromisesLike & { chmod(path: string, mode: number): Promise<void> } = {
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
  return { promises };
}
