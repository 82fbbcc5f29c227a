/**
 * The fs adapters in real Chromium: OPFS (File System Access API) and lightning-fs (IndexedDB),
 * each under GitFs, and the on-disk ref store over them through protocol's RefStore conformance suite.
 */

import { refStoreConformance } from '@gitport/protocol/test-ref-store-conformance';
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
}
