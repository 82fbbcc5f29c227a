/**
 * Pack creation over a real repository without reachability bitmaps, the path a server takes on
 * a repository that took pushes since its last repack: the object walk equals `git rev-list
 * --objects`; the stored entries `locateStoredOf` gives in columns equal what `readRawOf` says
 * object by object; packs written from those columns (whole history, and thin incremental) are
 * accepted by `git index-pack --strict` and `git fsck`, and are the same bytes as packs written
 * through `readRaw` alone. The store reads the pack at positions through a small page cache, so
 * that entries lie across pages that come and go.
 */
import * as fs from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createPack,
  enumerateObjects,
  FsObjectStore,
  locateStoredOf,
  type ObjectStore,
  readHeaderOf,
  readRawOf,
} from '@gitport/pack';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory, HISTORY_PRESETS } from '../history.js';
import { collect } from './helpers.js';

let sandbox: GitSandbox;
let repo: string;
let refs: string[];
let head: string;

/** A store reading packs at positions through a page cache much smaller than the pack. */
const pagedStore = () => new FsObjectStore(fs, repo, { pageCacheBytes: 2 * 1024 * 1024 });

/** The store without `locateStored`: the writer asks `readRaw` object by object. */
function withoutColumns(store: FsObjectStore): ObjectStore {
  return {
    has: (oid) => store.has(oid),
    read: (oid) => store.read(oid),
    write: (type, data) => store.write(type, data),
    readHeader: (oid) => readHeaderOf(store, oid),
    readRaw: (oid) => readRawOf(store, oid),
  };
}

const listed = async (args: string[]) =>
  new Set(
    (await sandbox.git(['-c', 'pack.useBitmaps=false', '--git-dir', repo, 'rev-list', '--objects', ...args]))
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(0, 40)),
  );
const resolve = (rev: string) => sandbox.git(['--git-dir', repo, 'rev-parse', rev]);

/** Objects in a pack, from its header. */
const packCount = (pack: Uint8Array) => new DataView(pack.buffer, pack.byteOffset + 8, 4).getUint32(0);

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-stored-reuse-');
  const history = await ensureHistory(HISTORY_PRESETS.small);
  repo = sandbox.path('repo.git');
  await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, repo]);
  for (const f of await readdir(join(repo, 'objects', 'pack'))) {
    if (f.endsWith('.bitmap')) await rm(join(repo, 'objects', 'pack', f));
  }
  // a push since the repack (a loose commit): no stored pack holds exactly what is asked for
  const tree = await resolve('refs/heads/main^{tree}');
  const pushed = await sandbox.git(['--git-dir', repo, 'commit-tree', tree, '-p', 'refs/heads/main', '-m', 'pushed']);
  await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', pushed]);
  head = pushed;
  refs = (await sandbox.git(['--git-dir', repo, 'for-each-ref', '--format=%(objectname)'])).split('\n');
}, 300_000);

afterAll(async () => {
  await sandbox?.cleanup();
});

describe('object walk without bitmaps', () => {
  it('every ref: the objects of git rev-list --objects --all, each once', async () => {
    const store = pagedStore();
    const e = await enumerateObjects(store, { wants: refs });
    await store.close();
    const ours = new Set(e.objects.map((o) => o.oid));
    expect(ours.size).toBe(e.objects.length);
    expect(ours).toEqual(await listed(['--all']));
  });

  it.each([
    ['main', 'main~1'],
    ['main', 'main~50'],
    ['main~10', 'main~300'],
  ])('%s ^%s: the objects of git rev-list --objects', async (want, have) => {
    const store = pagedStore();
    const e = await enumerateObjects(store, { wants: [await resolve(want)], haves: [await resolve(have)] });
    await store.close();
    const ours = new Set(e.objects.map((o) => o.oid));
    expect(ours.size).toBe(e.objects.length);
    expect(ours).toEqual(await listed([want, `^${have}`]));
  });
});

describe('stored entries in columns', () => {
  it('locateStoredOf gives, object by object, what readRawOf gives', async () => {
    const store = pagedStore();
    const oids = [...(await listed(['--all']))];
    // an id no pack holds (the loose commit) and one the store does not have at all
    oids.push(head, 'f'.repeat(40));
    const columns = (await locateStoredOf(store, oids))!;
    let deltas = 0;
    for (let i = 0; i < oids.length; i++) {
      const raw = await readRawOf(store, oids[i]!);
      if (!raw) {
        expect(columns.pack[i], oids[i]).toBe(-1);
        continue;
      }
      const at = raw.stored!;
      expect(columns.sources[columns.pack[i]!]).toBe(at.source);
      expect(columns.offset[i]).toBe(at.offset);
      expect(columns.offset[i]! + columns.headerLength[i]!).toBe(at.dataOffset);
      expect(columns.end[i]).toBe(at.end);
      expect(columns.code[i]).toBe(at.code);
      expect(columns.size[i]).toBe(raw.size);
      if (raw.kind === 'delta') {
        deltas++;
        expect(columns.baseOid(i)).toBe(raw.base);
        if (at.baseDistance !== undefined) expect(columns.offset[i]! - columns.baseOffset[i]!).toBe(at.baseDistance);
      }
    }
    expect(columns.pack[oids.length - 2]).toBe(-1);
    expect(columns.pack[oids.length - 1]).toBe(-1);
    expect(deltas).toBeGreaterThan(oids.length / 2);
    await store.close();
  });
});

describe('packs written from stored entries', () => {
  it('every ref: git index-pack --strict and git fsck accept it, and readRaw alone writes the same bytes', async () => {
    const store = pagedStore();
    const pack = await collect(createPack(store, { wants: refs }));
    const plain = await collect(createPack(withoutColumns(store), { wants: refs }));
    await store.close();
    expect(Buffer.from(pack).equals(Buffer.from(plain))).toBe(true);
    expect(packCount(pack)).toBe((await listed(['--all'])).size);
    const dest = sandbox.path('all.git');
    await sandbox.git(['init', '--bare', '--quiet', dest]);
    await sandbox.git(['--git-dir', dest, 'index-pack', '--strict', '--stdin'], { input: pack });
    await sandbox.git(['--git-dir', dest, 'update-ref', 'refs/heads/main', head]);
    await sandbox.git(['--git-dir', dest, 'fsck', '--strict', '--no-dangling']);
  });

  it('thin incremental: completed by git index-pack --fix-thin in a clone that has the rest', async () => {
    const have = await resolve('main~40');
    const store = pagedStore();
    const selection = { wants: [head], haves: [have] };
    const pack = await collect(createPack(store, selection, { thin: true }));
    const plain = await collect(createPack(withoutColumns(store), selection, { thin: true }));
    await store.close();
    expect(Buffer.from(pack).equals(Buffer.from(plain))).toBe(true);
    expect(packCount(pack)).toBe((await listed(['main', `^${have}`])).size);
    const client = sandbox.path('client.git');
    await sandbox.git(['clone', '--bare', '--quiet', '--single-branch', '--no-tags', `file://${repo}`, client]);
    await sandbox.git(['--git-dir', client, 'update-ref', 'refs/heads/main', have]);
    await sandbox.git(['--git-dir', client, 'repack', '-adq']);
    await sandbox.git(['--git-dir', client, 'prune', '--expire=now']);
    await sandbox.git(['--git-dir', client, 'index-pack', '--strict', '--stdin', '--fix-thin'], { input: pack });
    await sandbox.git(['--git-dir', client, 'update-ref', 'refs/heads/main', head]);
    await sandbox.git(['--git-dir', client, 'fsck', '--strict', '--no-dangling']);
  });
});
