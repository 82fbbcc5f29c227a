/**
 * Checking out a commit's tree into a fresh working tree, and the index (`.git/index`) that
 * says the working tree matches it, so real git and isomorphic-git see a clean tree.
 *
 * Only what the web platform has: no Buffer, no Node globals. Files are written with the
 * injected fs; the executable bit goes through `writeFile(..., { mode })` (and `chmod` where the
 * fs has it), symbolic links through `symlink` where the fs has it (otherwise a file holding the
 * link target, as git does with `core.symlinks = false`), submodules (gitlinks) become empty
 * directories, as git leaves them before `git submodule update`.
 *
 * The index, version 2 (Documentation/gitformat-index.adoc):
 *
 *   header   = "DIRC" version(4) entry-count(4)
 *   entry    = ctime-s(4) ctime-ns(4) mtime-s(4) mtime-ns(4) dev(4) ino(4) mode(4) uid(4) gid(4)
 *              size(4) oid(20) flags(2) path NUL-padding   ; the entry is padded with 1..8 NULs
 *                                                          ; to a multiple of 8 bytes
 *   trailer  = SHA-1 of everything before it
 *
 * Entries are sorted by path bytes; flags hold the path length (capped at 0xfff), stage 0.
 * Stat fields come from the fs's `lstat` where it reports them (Node's does); a field the fs does
 * not report is 0, which only makes git re-read that file once to compare it.
 */
import type { ObjectId } from '@gitport/pack';
import { parseCommitLinks } from '@gitport/pack/internal/commit';
import { hexToBytes } from '@gitport/pack/internal/object';
import { parseTree } from '@gitport/pack/internal/tree';
import { sha1 } from '@gitport/pack/sha1';
import { GitportError } from './errors.js';
import { dirname, errorCode, joinPath } from './fs.js';
import { prefetchObjects } from './promisor.js';
import type { GitRepository } from './repository.js';

/** One path of a checked-out tree. */
interface CheckoutEntry {
  path: string;
  mode: number;
  oid: ObjectId;
}

const MODE_FILE = 0o100644;
const MODE_EXECUTABLE = 0o100755;
const MODE_SYMLINK = 0o120000;
const MODE_GITLINK = 0o160000;
/** How many files are written at once. */
const PARALLEL_WRITES = 8;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The working tree of a non-bare repository (the directory holding `.git`). */
export function workTreeOf(repository: GitRepository): string {
  if (repository.bare) throw new GitportError('REPO_BARE', `${repository.gitDir} is a bare repository`);
  return dirname(repository.gitDir);
}

/**
 * Writes the tree of `commit` into the repository's (fresh, empty) working tree and writes
 * `.git/index` to match. Files already there are overwritten; nothing else is removed.
 */
export async function checkoutCommit(repository: GitRepository, commit: ObjectId): Promise<void> {
  const dir = workTreeOf(repository);
  const entries = await flattenTree(repository, await treeOfCommit(repository, commit));
  refuseAliasedPaths(entries);
  // a partial clone fetches every blob it lacks in one request, as git's checkout does
  await prefetchObjects(
    repository.objects,
    entries.filter((entry) => entry.mode !== MODE_GITLINK).map((entry) => entry.oid),
  );
  const raw = repository.fs.raw;
  const symlinks = typeof raw.symlink === 'function';
  for (let i = 0; i < entries.length; i += PARALLEL_WRITES) {
    await Promise.all(
      entries.slice(i, i + PARALLEL_WRITES).map((entry) => writeEntry(repository, dir, entry, symlinks)),
    );
  }
  const index = encodeIndex(
    await Promise.all(
      entries.map(async (entry) => ({
        ...entry,
        stat: entry.mode === MODE_GITLINK ? undefined : await lstatOf(repository, joinPath(dir, entry.path)),
      })),
    ),
  );
  await repository.fs.write(joinPath(repository.gitDir, 'index'), index);
}

async function treeOfCommit(repository: GitRepository, commit: ObjectId): Promise<ObjectId> {
  const object = await repository.objects.read(commit);
  if (object?.type !== 'commit') {
    throw new GitportError('OBJECT_NOT_FOUND', `commit ${commit} is missing from ${repository.gitDir}`);
  }
  // only its tree is read: the parser of a commit's links, not of its whole text
  return parseCommitLinks(object.data).tree;
}

/** Every non-tree entry under `tree`, with its full path. */
export async function flattenTree(repository: GitRepository, tree: ObjectId, prefix = ''): Promise<CheckoutEntry[]> {
  const object = await repository.objects.read(tree);
  if (object?.type !== 'tree') {
    throw new GitportError('OBJECT_NOT_FOUND', `tree ${tree} is missing from ${repository.gitDir}`);
  }
  const out: CheckoutEntry[] = [];
  const names = new Set<string>();
  for (const entry of parseTree(object.data)) {
    if (names.has(entry.name)) {
      throw new GitportError('CHECKOUT_BAD_PATH', `tree ${tree} names ${JSON.stringify(prefix + entry.name)} twice`);
    }
    names.add(entry.name);
    // a tree from the wire is checked by the pack reader, but a path must never leave the tree
    if (entry.name === '.' || entry.name === '..' || entry.name.toLowerCase() === '.git' || entry.name.includes('\\')) {
      throw new GitportError('CHECKOUT_BAD_PATH', `refusing to check out ${JSON.stringify(prefix + entry.name)}`);
    }
    const path = prefix + entry.name;
    if (entry.type === 'tree') out.push(...(await flattenTree(repository, entry.oid, `${path}/`)));
    else out.push({ path, mode: normalMode(Number.parseInt(entry.mode, 8)), oid: entry.oid });
  }
  return out;
}

/**
 * Refuses a tree where a path runs through a symbolic link or a file of the same tree (a
 * malformed tree can list a name twice, once as a link): writing it would follow the link out of
 * the working tree.
 */
function refuseAliasedPaths(entries: readonly CheckoutEntry[]): void {
  const leaves = new Set(entries.map((entry) => entry.path));
  for (const entry of entries) {
    for (let at = entry.path.indexOf('/'); at >= 0; at = entry.path.indexOf('/', at + 1)) {
      if (leaves.has(entry.path.slice(0, at))) {
        throw new GitportError(
          'CHECKOUT_BAD_PATH',
          `refusing to check out ${JSON.stringify(entry.path)} through a file`,
        );
      }
    }
  }
}

/** The mode git keeps in the index: legacy blob modes (100664, ...) are 100644. */
function normalMode(mode: number): number {
  if (mode === MODE_SYMLINK || mode === MODE_GITLINK || mode === MODE_EXECUTABLE) return mode;
  return MODE_FILE;
}

async function writeEntry(repository: GitRepository, dir: string, entry: CheckoutEntry, symlinks: boolean) {
  const path = joinPath(dir, entry.path);
  const raw = repository.fs.raw;
  if (entry.mode === MODE_GITLINK) {
    await repository.fs.mkdirp(path);
    return;
  }
  const blob = await repository.objects.read(entry.oid);
  if (blob?.type !== 'blob') {
    throw new GitportError('OBJECT_NOT_FOUND', `blob ${entry.oid} (${entry.path}) is missing`);
  }
  await repository.fs.mkdirp(dirname(path));
  if (entry.mode === MODE_SYMLINK && symlinks) {
    try {
      await raw.symlink!(decoder.decode(blob.data), path);
      return;
    } catch (error) {
      // a file system that has the call but no links (OPFS adapters, some lightning-fs setups)
      if (errorCode(error) === 'EEXIST') throw error;
    }
  }
  const executable = entry.mode === MODE_EXECUTABLE;
  await raw.writeFile(path, blob.data, executable ? { mode: 0o755 } : undefined);
  const chmod = (raw as { chmod?: (path: string, mode: number) => Promise<unknown> }).chmod;
  if (executable && typeof chmod === 'function') await chmod.call(raw, path, 0o755);
}

/** The stat fields the index keeps, as far as the fs reports them. */
interface IndexStat {
  isDirectory?(): boolean;
  ctimeMs?: number;
  mtimeMs?: number;
  dev?: number | bigint;
  ino?: number | bigint;
  uid?: number | bigint;
  gid?: number | bigint;
  size?: number | bigint;
}

async function lstatOf(repository: GitRepository, path: string): Promise<IndexStat | undefined> {
  try {
    return (await repository.fs.raw.lstat(path)) as IndexStat;
  } catch {
    return undefined;
  }
}

/** `value` as git stores it: the low 32 bits of an unsigned number. */
function u32(value: number | bigint | undefined): number {
  if (value === undefined) return 0;
  if (typeof value === 'bigint') return Number(value & 0xffffffffn);
  return Number.isFinite(value) && value > 0 ? Math.floor(value) % 2 ** 32 : 0;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** The index (version 2) of `entries`, each with what its file's lstat reported. */
export function encodeIndex(
  entries: readonly (CheckoutEntry & { stat: IndexStat | undefined; fields?: readonly number[] })[],
): Uint8Array {
  const named = entries.map((entry) => ({ entry, name: encoder.encode(entry.path) }));
  named.sort((a, b) => compareBytes(a.name, b.name));
  let total = 12 + 20;
  for (const { name } of named) total += entryLength(name.length);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out.set(encoder.encode('DIRC'), 0);
  view.setUint32(4, 2);
  view.setUint32(8, named.length);
  let at = 12;
  for (const { entry, name } of named) {
    const stat = entry.stat;
    const ctime = stat?.ctimeMs ?? 0;
    const mtime = stat?.mtimeMs ?? 0;
    const fields = entry.fields ?? [
      u32(ctime / 1000),
      u32((ctime % 1000) * 1e6),
      u32(mtime / 1000),
      u32((mtime % 1000) * 1e6),
      u32(stat?.dev),
      u32(stat?.ino),
      entry.mode,
      u32(stat?.uid),
      u32(stat?.gid),
      u32(stat?.size),
    ];
    for (let i = 0; i < 10; i++) view.setUint32(at + i * 4, i === 6 ? entry.mode : (fields[i] ?? 0));
    hexToBytes(entry.oid, out, at + 40);
    view.setUint16(at + 60, Math.min(name.length, 0xfff));
    out.set(name, at + 62);
    at += entryLength(name.length);
  }
  out.set(sha1(out.subarray(0, at)), at);
  return out;
}

/** 62 fixed bytes, the path, then 1 to 8 NULs up to a multiple of 8. */
function entryLength(nameLength: number): number {
  return (62 + nameLength + 8) & ~7;
}

/** An index entry as read back: the ten stat words (mode among them), the id, the path. */
interface IndexedEntry {
  fields: number[];
  mode: number;
  oid: ObjectId;
}

/**
 * The entries of an index of version 2 or 3 by path; undefined for anything else (version 4's
 * compressed paths, unmerged entries, a damaged file): the caller then rebuilds without stat data.
 */
export function decodeIndex(bytes: Uint8Array): Map<string, IndexedEntry> | undefined {
  if (bytes.length < 32 || decoder.decode(bytes.subarray(0, 4)) !== 'DIRC') return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(4);
  if (version !== 2 && version !== 3) return undefined;
  const count = view.getUint32(8);
  const end = bytes.length - 20;
  const out = new Map<string, IndexedEntry>();
  let at = 12;
  for (let n = 0; n < count; n++) {
    if (at + 62 > end) return undefined;
    const flags = view.getUint16(at + 60);
    if ((flags & 0x3000) !== 0) return undefined;
    const extended = (flags & 0x4000) !== 0;
    if (extended && version < 3) return undefined;
    const nameAt = at + 62 + (extended ? 2 : 0);
    const nul = bytes.indexOf(0, nameAt);
    if (nul < 0 || nul >= end) return undefined;
    const fields = Array.from({ length: 10 }, (_, i) => view.getUint32(at + i * 4));
    let oid = '';
    for (let i = at + 40; i < at + 60; i++) oid += bytes[i]!.toString(16).padStart(2, '0');
    out.set(decoder.decode(bytes.subarray(nameAt, nul)), { fields, mode: fields[6]!, oid });
    at += (nameAt - at + (nul - nameAt) + 8) & ~7;
  }
  return out;
}

/**
 * Moves a working tree checked out at one commit to `commit`, which differs from it in `paths`
 * only (what `commit` wrote or removed): those files are written or removed, the index gets
 * their new entries, and every other entry keeps its stat data (so git does not re-read it).
 */
export async function updateWorkTree(
  repository: GitRepository,
  commit: ObjectId,
  paths: readonly string[],
): Promise<void> {
  const dir = workTreeOf(repository);
  const entries = await flattenTree(repository, await treeOfCommit(repository, commit));
  refuseAliasedPaths(entries);
  const byPath = new Map(entries.map((entry) => [entry.path, entry]));
  await prefetchObjects(
    repository.objects,
    paths.flatMap((path) => {
      const entry = byPath.get(path);
      return entry && entry.mode !== MODE_GITLINK ? [entry.oid] : [];
    }),
  );
  const indexPath = joinPath(repository.gitDir, 'index');
  const indexBytes = await repository.fs.read(indexPath);
  const previous = indexBytes === undefined ? undefined : decodeIndex(indexBytes);
  const symlinks = typeof repository.fs.raw.symlink === 'function';
  const changed = new Set(paths);
  for (const path of paths) {
    const target = joinPath(dir, path);
    // a file where a directory of the new path goes, or a directory where the file goes
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const ancestor = joinPath(dir, ...parts.slice(0, i));
      const st = await lstatKind(repository, ancestor);
      if (st === 'file') await repository.fs.remove(ancestor);
    }
    const kind = await lstatKind(repository, target);
    if (kind === 'dir' && byPath.get(path)?.mode !== MODE_GITLINK) await repository.fs.removeTree(target);
    else if (kind === 'file') await repository.fs.remove(target);
    const entry = byPath.get(path);
    if (entry) await writeEntry(repository, dir, entry, symlinks);
    else await pruneEmptyParents(repository, dir, path);
  }
  const index = encodeIndex(
    await Promise.all(
      entries.map(async (entry) => {
        const kept = previous?.get(entry.path);
        if (!changed.has(entry.path) && kept && kept.oid === entry.oid && kept.mode === entry.mode) {
          return { ...entry, stat: undefined, fields: kept.fields };
        }
        const fresh = changed.has(entry.path) && entry.mode !== MODE_GITLINK;
        return { ...entry, stat: fresh ? await lstatOf(repository, joinPath(dir, entry.path)) : undefined };
      }),
    ),
  );
  await repository.fs.write(indexPath, index);
}

async function lstatKind(repository: GitRepository, path: string): Promise<'file' | 'dir' | undefined> {
  const st = await lstatOf(repository, path);
  if (st === undefined) return undefined;
  return st.isDirectory?.() ? 'dir' : 'file';
}

/** Removes the directories of `path` that its removal left empty, as git does. */
async function pruneEmptyParents(repository: GitRepository, dir: string, path: string): Promise<void> {
  const parts = path.split('/');
  for (let i = parts.length - 1; i >= 1; i--) {
    if (!(await repository.fs.removeEmptyDir(joinPath(dir, ...parts.slice(0, i))))) return;
  }
}
