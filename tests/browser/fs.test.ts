/**
 * The fs adapters in real Chromium: OPFS (File System Access API) and lightning-fs (IndexedDB),
 * each under GitFs, and the on-disk ref store over them through protocol's RefStore conformance suite.
 */

import { initialRefsConformance, refStoreConformance } from '@gitport/test-helpers/ref-store-conformance';
import LightningFS from '@isomorphic-git/lightning-fs';
import { type FsLike, FsRefStore, GitFs, MemoryFs, OpfsFs } from 'gitport';
import { describe, expect, it } from 'vitest';

let counter = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

async function opfs(): Promise<{ fs: FsLike; dir: string }> {
  const dir = `/${unique('opfs')}`;
  const fs = new OpfsFs();
  await fs.promises.mkdir(dir);
  return { fs, dir };
}

async function lightning(): Promise<{ fs: FsLike; dir: string }> {
  const fs = new LightningFS(unique('lfs'), { wipe: true }) as unknown as FsLike;
  await fs.promises.mkdir('/repo.git');
  return { fs, dir: '/repo.git' };
}

describe('OpfsFs mkdir', () => {
  it('recursive: makes missing parents, finds an existing directory, refuses a file (EEXIST, ENOTDIR)', async () => {
    const { fs, dir } = await opfs();
    await fs.promises.mkdir(`${dir}/a/b/c`, { recursive: true });
    await fs.promises.mkdir(`${dir}/a/b/c`, { recursive: true });
    await fs.promises.mkdir(`${dir}/a/b`, { recursive: true });
    expect(await fs.promises.readdir(`${dir}/a/b`)).toEqual(['c']);
    await fs.promises.writeFile(`${dir}/a/f`, 'x');
    await expect(fs.promises.mkdir(`${dir}/a/f`, { recursive: true })).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(fs.promises.mkdir(`${dir}/a/f/g`, { recursive: true })).rejects.toMatchObject({ code: 'ENOTDIR' });
    // without recursive, as before: an existing directory is EEXIST, a missing parent ENOENT
    await expect(fs.promises.mkdir(`${dir}/a/b`)).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(fs.promises.mkdir(`${dir}/x/y`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

const backends: [string, () => Promise<{ fs: FsLike; dir: string }>][] = [
  ['OPFS', opfs],
  ['lightning-fs', lightning],
  ['memory', async () => ({ fs: new MemoryFs(), dir: '/' })],
];

for (const [name, make] of backends) {
  describe(`GitFs over ${name}`, () => {
    it('reads, writes, lists, renames, removes, and reports missing files as undefined', async () => {
      const { fs, dir } = await make();
      const g = new GitFs(fs);
      expect(await g.read(`${dir}/nope`)).toBeUndefined();
      await g.write(`${dir}/a/b/c.txt`, 'hello');
      expect(await g.readText(`${dir}/a/b/c.txt`)).toBe('hello');
      const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 255);
      await g.write(`${dir}/a/big.bin`, bytes);
      expect(await g.read(`${dir}/a/big.bin`)).toEqual(bytes);
      expect(await g.readRange(`${dir}/a/big.bin`, 1000, 10)).toEqual(bytes.subarray(1000, 1010));
      expect((await g.stat(`${dir}/a/big.bin`))?.size).toBe(300_000);
      expect(await g.list(`${dir}/a`)).toEqual(['b', 'big.bin']);
      await g.rename(`${dir}/a/b/c.txt`, `${dir}/a/d.txt`);
      expect(await g.read(`${dir}/a/b/c.txt`)).toBeUndefined();
      expect(await g.readText(`${dir}/a/d.txt`)).toBe('hello');
      await g.removeTree(`${dir}/a`);
      expect(await g.exists(`${dir}/a`)).toBe(false);
    });

    it('mkdirIn makes a directory or finds it; a file in its place is left alone', async () => {
      const { fs, dir } = await make();
      const g = new GitFs(fs);
      await g.mkdirIn(`${dir}/made`);
      await g.mkdirIn(`${dir}/made`);
      await g.write(`${dir}/made/file`, 'x');
      expect(await g.list(`${dir}/made`)).toEqual(['file']);
      await g.mkdirIn(`${dir}/made/file`);
      expect(await g.readText(`${dir}/made/file`)).toBe('x');
      expect((await g.stat(`${dir}/made`))?.isDirectory()).toBe(true);
    });

    it('creates a file exclusively: of many concurrent creators exactly one wins', async () => {
      const { fs, dir } = await make();
      const g = new GitFs(fs);
      const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => g.createExclusive(`${dir}/x.lock`, `${i}`)));
      expect(wins.filter(Boolean)).toHaveLength(1);
      const winner = wins.indexOf(true);
      expect(await g.readText(`${dir}/x.lock`)).toBe(`${winner}`);
    });
  });

  refStoreConformance(`FsRefStore over ${name} in Chromium`, async () => {
    const { fs, dir } = await make();
    return { store: new FsRefStore(fs, dir) };
  });
  initialRefsConformance(`FsRefStore over ${name} in Chromium`, async () => {
    const { fs, dir } = await make();
    return { store: new FsRefStore(fs, dir) };
  });
}

describe('OpfsFs reading a file that another context replaces', () => {
  /**
   * A root directory handle (real OPFS) that, the first time a file's snapshot is taken, writes
   * the file anew right after: the snapshot goes stale before it is read, as when another worker
   * moves a lock file over a ref between the two steps of a read.
   */
  async function racingRoot(): Promise<{ root: FileSystemDirectoryHandle; raced: () => number }> {
    const opfsRoot = await navigator.storage.getDirectory();
    const dir = await opfsRoot.getDirectoryHandle(unique('race'), { create: true });
    let races = 0;
    const bind = <T extends object>(target: T, prop: string | symbol) => {
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    };
    const root = new Proxy(dir, {
      get(target, prop) {
        if (prop !== 'getFileHandle') return bind(target, prop);
        return async (name: string, options?: FileSystemGetFileOptions) => {
          const handle = await target.getFileHandle(name, options);
          if (options?.create) return handle;
          return new Proxy(handle, {
            get(file, key) {
              if (key !== 'getFile') return bind(file, key);
              return async () => {
                const snapshot = await file.getFile();
                if (races === 0) {
                  races++;
                  const writable = await file.createWritable();
                  await writable.write('replaced');
                  await writable.close();
                }
                return snapshot;
              };
            },
          });
        };
      },
    });
    return { root, raced: () => races };
  }

  it('reads the file again instead of failing', async () => {
    const { root, raced } = await racingRoot();
    const fs = new OpfsFs(root);
    await fs.promises.writeFile('/ref', 'original');
    expect(new TextDecoder().decode((await fs.promises.readFile('/ref')) as Uint8Array)).toBe('replaced');
    expect(raced()).toBe(1);
  });

  it('reads a range again too', async () => {
    const { root, raced } = await racingRoot();
    const fs = new OpfsFs(root);
    await fs.promises.writeFile('/pack', 'original');
    const range = (await fs.promises.readRange!('/pack', 2, 4)) as Uint8Array;
    expect(new TextDecoder().decode(range)).toBe('plac');
    expect(raced()).toBe(1);
  });
});

describe('OpfsFs writing files in a dedicated worker', () => {
  it('writes large, scratch and new files in place, whole, whatever the file held before; renames scratch files', async () => {
    const worker = new Worker(new URL('./opfs-write.worker.ts', import.meta.url), { type: 'module' });
    try {
      const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
        worker.onmessage = (event: MessageEvent<Record<string, unknown>>) => resolve(event.data);
        worker.onerror = (event) => reject(new Error(event.message));
        worker.postMessage({ dir: `/${unique('sync-write')}` });
      });
      expect(answer).toEqual({
        ok: true,
        checks: {
          large: true,
          shorter: true,
          longer: true,
          small: true,
          lock: true,
          'lock-shorter': true,
          tmp: true,
          'new-small': true,
          'small-rewritten': true,
          renamed: true,
          'renamed-gone': true,
        },
        // the writable cannot open a file a sync access handle holds either: the error is the browser's
        heldOutcome: 'NoModificationAllowedError',
        syncHandles: true,
      });
    } finally {
      worker.terminate();
    }
  });
});

describe('OpfsFs keeping directory handles', () => {
  it('sees a directory another context removed, and one it made again in its place', async () => {
    const { dir } = await opfs();
    const mine = new GitFs(new OpfsFs());
    const theirs = new GitFs(new OpfsFs());
    await mine.write(`${dir}/refs/heads/main`, 'one');
    expect(await mine.readText(`${dir}/refs/heads/main`)).toBe('one');
    // removed elsewhere: missing here too, and written again through fresh directories
    await theirs.removeTree(`${dir}/refs`);
    expect(await mine.read(`${dir}/refs/heads/main`)).toBeUndefined();
    expect(await mine.list(`${dir}/refs/heads`)).toEqual([]);
    await mine.write(`${dir}/refs/heads/main`, 'two');
    expect(await theirs.readText(`${dir}/refs/heads/main`)).toBe('two');
    // removed and made again elsewhere: read, listed and written here
    await theirs.removeTree(`${dir}/refs`);
    await theirs.write(`${dir}/refs/heads/other`, 'three');
    expect(await mine.readText(`${dir}/refs/heads/other`)).toBe('three');
    expect(await mine.list(`${dir}/refs/heads`)).toEqual(['other']);
    await mine.write(`${dir}/refs/heads/main`, 'four');
    expect(await theirs.list(`${dir}/refs/heads`)).toEqual(['main', 'other']);
    expect(await theirs.readText(`${dir}/refs/heads/main`)).toBe('four');
  });

  it('forgets a directory it removed itself, and a file made in its place is a file', async () => {
    const { fs, dir } = await opfs();
    const g = new GitFs(fs);
    await g.write(`${dir}/a/b/c`, 'x');
    await g.removeTree(`${dir}/a/b`);
    await g.write(`${dir}/a/b`, 'file now');
    expect((await g.stat(`${dir}/a/b`))?.isFile()).toBe(true);
    expect(await g.readText(`${dir}/a/b`)).toBe('file now');
    await expect(fs.promises.readFile(`${dir}/a/b/c`)).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});

describe('OpfsFs listing with kinds', () => {
  it('tells directories from files, sorted by name, and a missing directory is ENOENT', async () => {
    const { fs, dir } = await opfs();
    await fs.promises.mkdir(`${dir}/heads`);
    await fs.promises.writeFile(`${dir}/HEAD`, 'ref: refs/heads/main\n');
    await fs.promises.writeFile(`${dir}/heads/main`, '0'.repeat(40));
    const listed = await fs.promises.readdirTypes!(dir);
    expect(listed.map((e) => [e.name, e.isDirectory(), e.isFile()])).toEqual([
      ['HEAD', false, true],
      ['heads', true, false],
    ]);
    await expect(fs.promises.readdirTypes!(`${dir}/nope`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
