/**
 * A pack that holds the same object twice is refused with PACK_DUPLICATE_OBJECT by every path
 * that stores packs (an import into a store that spools to disk, one that takes the pack from
 * memory, one that takes objects, `gitport index-pack`), and nothing of it is stored. git's own
 * verify-pack refuses such a pack (it indexes strictly), so a repository holding one could not be
 * checked; storing it with an index that dropped the repeated entry broke every later read. The
 * repository stays sound: the same objects pushed without the repetition are read by real git
 * (fsck --strict, verify-pack, log, a clone). Without `strict`, writeIdx lists every entry as
 * git's index-pack does, byte for byte.
 */
import * as fs from 'node:fs/promises';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createDelta,
  FsObjectStore,
  importPack,
  MemoryObjectStore,
  type ObjectStore,
  type ObjectStoreFs,
  openPackSpool,
  writeIdx,
  ZERO_ID,
} from '@gitport/pack';
import { connectionPair, MemoryRefStore, serveReceivePack } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeCommand } from '@gitport/test-helpers/ts-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HandEntry, handPack, hexBytes, objectId } from './hand-pack.js';

const enc = new TextEncoder();
let sandbox: GitSandbox;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-duplicates-');
});
afterAll(async () => {
  await sandbox?.cleanup();
});

interface Objects {
  a: Uint8Array;
  b: Uint8Array;
  c: Uint8Array;
  tree: Uint8Array;
  commit: Uint8Array;
  ids: { a: string; b: string; c: string; tree: string; commit: string };
}

/** A commit of three blobs, two of them deltas of the first. */
function objects(): Objects {
  const a = enc.encode('a line shared by every version of the file\n'.repeat(30));
  const b = new Uint8Array([...a, ...enc.encode('b\n')]);
  const c = new Uint8Array([...a, ...enc.encode('c\n')]);
  const ids = { a: objectId('blob', a), b: objectId('blob', b), c: objectId('blob', c), tree: '', commit: '' };
  const treeEntry = (name: string, id: string) => [...enc.encode(`100644 ${name}\0`), ...hexBytes(id)];
  const tree = Uint8Array.from([
    ...treeEntry('a.txt', ids.a),
    ...treeEntry('b.txt', ids.b),
    ...treeEntry('c.txt', ids.c),
  ]);
  ids.tree = objectId('tree', tree);
  const commit = enc.encode(
    `tree ${ids.tree}\nauthor A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\ntwice\n`,
  );
  ids.commit = objectId('commit', commit);
  return { a, b, c, tree, commit, ids };
}

/** Ways a pack can hold blob `a` more than once, each also used as a delta base. */
function duplicatePacks(o: Objects): Record<string, HandEntry[]> {
  const rest: HandEntry[] = [
    { kind: 'whole', type: 'tree', data: o.tree },
    { kind: 'whole', type: 'commit', data: o.commit },
  ];
  return {
    'twice whole, an OFS delta on the second copy': [
      { kind: 'whole', type: 'blob', data: o.a },
      { kind: 'whole', type: 'blob', data: o.a },
      { kind: 'ofs', base: 1, delta: createDelta(o.a, o.b)! },
      { kind: 'ofs', base: 0, delta: createDelta(o.a, o.c)! },
      ...rest,
    ],
    'twice whole, a REF delta on the repeated id': [
      { kind: 'whole', type: 'blob', data: o.a },
      { kind: 'ref', base: o.ids.a, delta: createDelta(o.a, o.b)! },
      { kind: 'whole', type: 'blob', data: o.a },
      { kind: 'ofs', base: 2, delta: createDelta(o.a, o.c)! },
      ...rest,
    ],
    'once whole, once rebuilt from a delta': [
      { kind: 'whole', type: 'blob', data: o.a },
      { kind: 'ofs', base: 0, delta: createDelta(o.a, o.b)! },
      { kind: 'ofs', base: 1, delta: createDelta(o.b, o.a)! },
      { kind: 'ofs', base: 2, delta: createDelta(o.a, o.c)! },
      ...rest,
    ],
  };
}

/** The same objects once each. */
function soundPack(o: Objects): Uint8Array {
  return handPack([
    { kind: 'whole', type: 'blob', data: o.a },
    { kind: 'ofs', base: 0, delta: createDelta(o.a, o.b)! },
    { kind: 'ref', base: o.ids.a, delta: createDelta(o.a, o.c)! },
    { kind: 'whole', type: 'tree', data: o.tree },
    { kind: 'whole', type: 'commit', data: o.commit },
  ]).pack;
}

async function bareRepo(name: string): Promise<string> {
  const gitDir = sandbox.path(`${name}.git`);
  await sandbox.git(['init', '-q', '--bare', gitDir]);
  return gitDir;
}

/** Real git reads the repository whole: fsck --strict, verify-pack of each pack, log, a clone. */
async function checkWithGit(gitDir: string, commit: string, packs: number): Promise<void> {
  await writeFile(join(gitDir, 'refs', 'heads', 'main'), `${commit}\n`);
  await sandbox.git(['--git-dir', gitDir, 'fsck', '--strict', '--no-dangling']);
  const dir = join(gitDir, 'objects', 'pack');
  const names = (await readdir(dir)).filter((n) => n.endsWith('.idx'));
  expect(names).toHaveLength(packs);
  for (const n of names) await sandbox.git(['verify-pack', join(dir, n)]);
  expect(await sandbox.git(['--git-dir', gitDir, 'log', '--format=%H %s'])).toBe(`${commit} twice`);
  const clone = `${gitDir}-clone`;
  await sandbox.git(['clone', '-q', '--no-local', gitDir, clone]);
  expect(await readFile(join(clone, 'b.txt'), 'utf8')).toMatch(/\nb\n$/);
  await sandbox.git(['-C', clone, 'fsck', '--strict']);
}

const stores: Record<string, (gitDir: string) => ObjectStore> = {
  // positional reads and writes: the pack is spooled to a temporary file as it arrives
  spooled: (gitDir) => new FsObjectStore(fs, gitDir, { packSpool: openPackSpool }),
  // none: the pack is held in memory and written whole
  'from memory': (gitDir) => {
    const { open: _open, ...withoutOpen } = fs as unknown as ObjectStoreFs;
    return new FsObjectStore(withoutOpen, gitDir);
  },
};

describe('a pack holding an object twice', () => {
  const o = objects();
  const packs = duplicatePacks(o);

  for (const [storeName, makeStore] of Object.entries(stores)) {
    it(`is refused by a store over .git (${storeName}), which stays sound`, async () => {
      let n = 0;
      for (const [name, entries] of Object.entries(packs)) {
        const gitDir = await bareRepo(`${storeName.replace(/ /g, '-')}-${n++}`);
        const store = makeStore(gitDir);
        await expect(importPack(store, [handPack(entries).pack]), name).rejects.toMatchObject({
          code: 'PACK_DUPLICATE_OBJECT',
        });
        expect(await readdir(join(gitDir, 'objects', 'pack')).catch(() => []), name).toEqual([]);
        // the same objects, each once, go in and real git reads them; git's index-pack writes
        // the same .idx for that pack
        const { hash } = await importPack(store, [soundPack(o)]);
        await (store as FsObjectStore).close();
        await checkWithGit(gitDir, o.ids.commit, 1);
        const file = sandbox.path(`sound-${storeName.replace(/ /g, '-')}-${n}.pack`);
        await writeFile(file, soundPack(o));
        await sandbox.git(['index-pack', file]);
        const ours = await readFile(join(gitDir, 'objects', 'pack', `pack-${hash}.idx`));
        expect(ours.equals(await readFile(file.replace(/\.pack$/, '.idx')))).toBe(true);
      }
    });
  }

  it('is refused by a push (receive-pack): an unpacker error, no ref moved, nothing stored', async () => {
    for (const [name, entries] of Object.entries(packs)) {
      const gitDir = await bareRepo(`push-${name.replace(/\W+/g, '-')}`);
      const repo = { objects: new FsObjectStore(fs, gitDir), refs: new MemoryRefStore() };
      const [client, host] = connectionPair();
      const served = serveReceivePack(repo, host, { advertise: false });
      const response = (async () => {
        for await (const _ of client.input) {
          // the report is checked through the result
        }
      })();
      const command = enc.encode(`${ZERO_ID} ${o.ids.commit} refs/heads/main\0report-status\n`);
      const pkt = enc.encode((command.length + 4).toString(16).padStart(4, '0'));
      await client.write(new Uint8Array([...pkt, ...command, ...enc.encode('0000'), ...handPack(entries).pack]));
      await client.end();
      const result = await served;
      await response;
      await repo.objects.close();
      expect(result.unpack, name).toMatch(/unpacker error/);
      expect(result.unpackError, name).toMatchObject({ code: 'PACK_DUPLICATE_OBJECT' });
      expect(result.updated, name).toEqual([]);
      expect(await repo.refs.list(), name).toEqual([]);
      expect(await readdir(join(gitDir, 'objects', 'pack')).catch(() => []), name).toEqual([]);
    }
  });

  it('is refused by a store that takes objects', async () => {
    for (const [name, entries] of Object.entries(packs)) {
      const store = new MemoryObjectStore();
      await expect(importPack(store, [handPack(entries).pack]), name).rejects.toMatchObject({
        code: 'PACK_DUPLICATE_OBJECT',
      });
      expect(store.size, name).toBe(0);
    }
  });

  it('is refused by gitport index-pack, as by git index-pack --strict and git verify-pack', async () => {
    const { pack } = handPack(Object.values(packs)[0]!);
    const gitDir = await bareRepo('cli');
    const [node, ...args] = tsNodeCommand(new URL('./gitport-cli.ts', import.meta.url));
    const out = await sandbox.exec(node!, [...args, 'index-pack', '--git-dir', gitDir, '--stdin'], { input: pack });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/PACK_DUPLICATE_OBJECT/);
    expect(await readdir(join(gitDir, 'objects', 'pack'))).toEqual([]);

    const file = sandbox.path('twice.pack');
    await writeFile(file, pack);
    const strict = await sandbox.run(['index-pack', '--strict', file], { allowFailure: true });
    expect(strict.stderr).toMatch(/appears twice/);
    await sandbox.git(['index-pack', file]);
    const verify = await sandbox.run(['verify-pack', file.replace(/\.pack$/, '.idx')], { allowFailure: true });
    expect(verify.code).not.toBe(0);
    expect(verify.stderr).toMatch(/appears twice/);
  });

  it('without strict, writeIdx lists every entry as git index-pack does, byte for byte', async () => {
    const entries = Object.values(packs)[0]!;
    const { pack, offsets, crcs } = handPack(entries);
    const ids = [o.ids.a, o.ids.a, o.ids.b, o.ids.c, o.ids.tree, o.ids.commit];
    const hash = Buffer.from(pack.subarray(pack.length - 20)).toString('hex');
    const index = ids.map((oid, i) => ({ oid, offset: offsets[i]!, crc32: crcs[i]! }));
    const ours = writeIdx(index, hash);
    expect(() => writeIdx(index, hash, { strict: true })).toThrow(
      expect.objectContaining({ code: 'PACK_DUPLICATE_OBJECT' }),
    );
    const file = sandbox.path('loose.pack');
    await writeFile(file, pack);
    await sandbox.git(['index-pack', '-o', sandbox.path('loose.idx'), file]);
    expect(Buffer.from(ours).equals(await readFile(sandbox.path('loose.idx')))).toBe(true);
  });
});
