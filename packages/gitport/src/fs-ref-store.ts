/**
 * References on disk in git's layout (gitrepository-layout(5), git-update-ref(1)):
 *
 *   <gitDir>/HEAD                 "ref: refs/heads/main\n" (symbolic) or "<oid>\n" (detached)
 *   <gitDir>/refs/<...>           loose refs, "<oid>\n"
 *   <gitDir>/packed-refs          "# pack-refs with: peeled fully-peeled sorted \n"
 *                                 "<oid> SP <refname> LF"  then optionally  "^<peeled oid> LF"
 *
 * A loose ref shadows the packed one of the same name. Updates follow git's lock-file convention,
 * so real git running on the same repository is safe: `<ref>.lock` is created exclusively (O_EXCL),
 * the current value is compared with the expected old one while the lock is held, the new value
 * is written into the lock and the lock renamed over the ref. A delete also rewrites packed-refs
 * under `packed-refs.lock`. A lock that already exists means another writer (us or git) holds
 * the ref: the update is refused, like git's "cannot lock ref".
 *
 * The parsed packed-refs file is cached and revalidated on every use by (mtime, size, inode),
 * because real git may repack refs at any time; loose refs are read from disk each time.
 */

import type {
  ObjectId,
  PreparedRefs,
  Ref,
  RefRejection,
  RefStore,
  RefUpdate,
  RefUpdateResult,
  RefValue,
} from '@gitport/protocol';
import { GitportError } from './errors.js';
import { errorCode, type FsLike, type FsPromisesLike, GitFs, joinPath, type ListedEntry } from './fs.js';

/** The protocol package's RefStore (the interface the servers and clients work on). */
export type RefStoreLike = RefStore;

const OID = /^[0-9a-f]{40}$/;
const MAX_SYMREF_DEPTH = 5;
/** Loose refs read at once while listing (bounded: each read holds a file descriptor). */
const CONCURRENT_READS = 32;
const decoder = new TextDecoder();

/** git-check-ref-format(1), the rules git applies to every ref it writes. */
export function isValidRefName(name: string, options: { allowOneLevel?: boolean } = {}): boolean {
  if (name.length === 0 || name === '@') return false;
  if (name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  const parts = name.split('/');
  if (parts.length < 2 && !options.allowOneLevel) return false;
  return parts.every((part) => !part.startsWith('.') && !part.endsWith('.lock'));
}

interface PackedRefs {
  key: string;
  refs: Map<string, { oid: ObjectId; peeled?: ObjectId }>;
  header: string;
}

export interface PackedRef {
  name: string;
  oid: ObjectId;
  peeled?: ObjectId;
}

export class FsRefStore implements RefStore {
  readonly fs: GitFs;
  readonly gitDir: string;
  #packed: PackedRefs | undefined;

  constructor(fs: FsLike | FsPromisesLike | GitFs, gitDir: string) {
    this.fs = fs instanceof GitFs ? fs : new GitFs(fs);
    this.gitDir = gitDir.replace(/\/+$/, '');
  }

  #path(name: string): string {
    return joinPath(this.gitDir, name);
  }

  /** The parsed packed-refs, revalidated against the file's (mtime, size, inode). */
  async packedRefs(): Promise<Map<string, { oid: ObjectId; peeled?: ObjectId }>> {
    const path = this.#path('packed-refs');
    const st = await this.fs.stat(path);
    if (!st) {
      this.#packed = undefined;
      return new Map();
    }
    const key = `${st.mtimeMs}:${st.size}:${String(st.ino ?? '')}`;
    if (this.#packed?.key === key) return this.#packed.refs;
    const text = (await this.fs.readText(path)) ?? '';
    const refs = new Map<string, { oid: ObjectId; peeled?: ObjectId }>();
    let header = '';
    let last: { oid: ObjectId; peeled?: ObjectId } | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('#')) {
        header = line;
        continue;
      }
      if (line.startsWith('^')) {
        const peeled = line.slice(1);
        if (!last || !OID.test(peeled)) throw new GitportError('REF_CORRUPT', `bad peeled line in ${path}`);
        last.peeled = peeled;
        continue;
      }
      const space = line.indexOf(' ');
      const oid = line.slice(0, space);
      const name = line.slice(space + 1);
      if (space !== 40 || !OID.test(oid) || !isValidRefName(name)) {
        throw new GitportError('REF_CORRUPT', `bad line in ${path}: ${JSON.stringify(line)}`);
      }
      last = { oid };
      refs.set(name, last);
    }
    this.#packed = { key, refs, header };
    return refs;
  }

  async #readLoose(name: string): Promise<RefValue | undefined>;
  async #readLoose(name: string, reportDirectory: true): Promise<RefValue | undefined | 'dir'>;
  async #readLoose(name: string, reportDirectory = false): Promise<RefValue | undefined | 'dir'> {
    const path = this.#path(name);
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.fs.read(path);
    } catch (error) {
      // A directory in the way (refs/heads when asking for a one-level name) reads as missing.
      const code = errorCode((error as { cause?: unknown }).cause);
      if (code === 'EISDIR' || code === 'TypeMismatchError') return reportDirectory ? 'dir' : undefined;
      throw error;
    }
    if (bytes === undefined) return undefined;
    const text = decoder.decode(bytes).trim();
    if (text.startsWith('ref:')) return { kind: 'symbolic', target: text.slice(4).trim() };
    if (OID.test(text)) return { kind: 'direct', oid: text };
    throw new GitportError('REF_CORRUPT', `ref ${name} holds ${JSON.stringify(text.slice(0, 80))}`);
  }

  async read(name: string, packedRefs?: Map<string, { oid: ObjectId }>): Promise<RefValue> {
    if (!isValidRefName(name, { allowOneLevel: true })) return { kind: 'missing' };
    const loose = await this.#readLoose(name);
    if (loose) return loose;
    const packed = (packedRefs ?? (await this.packedRefs())).get(name);
    return packed ? { kind: 'direct', oid: packed.oid } : { kind: 'missing' };
  }

  async resolve(name: string): Promise<ObjectId | undefined> {
    let current = name;
    for (let depth = 0; depth <= MAX_SYMREF_DEPTH; depth++) {
      const value = await this.read(current);
      if (value.kind === 'missing') return undefined;
      if (value.kind === 'direct') return value.oid;
      current = value.target;
    }
    throw new GitportError('REF_SYMREF_LOOP', `symbolic ref ${name} nests too deep`);
  }

  /** Direct refs under `refs/` whose names start with `prefix`, sorted bytewise. */
  async list(prefix = ''): Promise<Ref[]> {
    // Walk only the part of refs/ that the prefix can match, while packed-refs is read; then
    // packed-refs is looked at again (a stat, when it did not change): git reads loose refs before
    // packed ones, so that a ref moved into packed-refs meanwhile (git pack-refs) is seen in one
    // or the other.
    const dirPart = prefix.startsWith('refs/') ? prefix.slice(0, prefix.lastIndexOf('/')) : 'refs';
    const loose = new Map<string, ObjectId>();
    await Promise.all([this.packedRefs(), this.#walk(dirPart, prefix, loose)]);
    const packed = await this.packedRefs();
    const merged = new Map<string, ObjectId>();
    for (const [name, { oid }] of packed) {
      if (name.startsWith(prefix)) merged.set(name, oid);
    }
    // a loose ref wins over its packed entry
    for (const [name, oid] of loose) merged.set(name, oid);
    return [...merged]
      .map(([name, oid]) => ({ name, oid }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async #walk(dir: string, prefix: string, into: Map<string, ObjectId>): Promise<void> {
    const names: ListedEntry[] = [];
    for (const entry of await this.fs.listEntries(this.#path(dir))) {
      const name = `${dir}/${entry.name}`;
      if (entry.name.endsWith('.lock') || entry.name.startsWith('.')) continue;
      if (!name.startsWith(prefix) && !prefix.startsWith(`${name}/`)) continue;
      names.push({ name, kind: entry.kind });
    }
    // The entries of a directory are read several at a time (one call per ref). A directory is
    // walked: the listing says which entries are, or else the read finds out (EISDIR). The
    // listing is sorted afterwards, so arrival order does not matter.
    const visit = async ({ name, kind }: ListedEntry) => {
      if (kind === 'dir') return this.#walk(name, prefix, into);
      if (kind === 'file' && !isValidRefName(name)) return;
      if (!isValidRefName(name)) {
        // not a ref name: only a directory of refs is of interest here
        if ((await this.fs.stat(this.#path(name)))?.isDirectory()) await this.#walk(name, prefix, into);
        return;
      }
      let value: RefValue | undefined | 'dir';
      try {
        value = await this.#readLoose(name, true);
      } catch (error) {
        if ((error as { code?: string }).code !== 'REF_CORRUPT') throw error;
        return;
      }
      if (value === 'dir') {
        // the read found a directory (EISDIR): walk it, no second look needed
        await this.#walk(name, prefix, into);
        return;
      }
      if (value?.kind === 'direct') into.set(name, value.oid);
    };
    for (let i = 0; i < names.length; i += CONCURRENT_READS) {
      await Promise.all(names.slice(i, i + CONCURRENT_READS).map(visit));
    }
  }

  /** Whether the store holds any direct ref, loose or packed (both looked at once). */
  async #holdsRefs(): Promise<boolean> {
    const loose = new Map<string, ObjectId>();
    const [packed] = await Promise.all([this.packedRefs(), this.#walk('refs', '', loose)]);
    return packed.size > 0 || loose.size > 0;
  }

  /** The packed entry (with its peeled id, when packed-refs records one). */
  async peeled(name: string): Promise<ObjectId | undefined> {
    return (await this.packedRefs()).get(name)?.peeled;
  }

  async setSymbolic(name: string, target: string): Promise<void> {
    if (!isValidRefName(name, { allowOneLevel: true }) || !isValidRefName(target, { allowOneLevel: true })) {
      throw new GitportError('REF_INVALID_NAME', `invalid symbolic ref ${name} -> ${target}`);
    }
    const lock = `${this.#path(name)}.lock`;
    if (!(await this.fs.createExclusive(lock, `ref: ${target}\n`))) {
      throw new GitportError('REF_LOCKED', `cannot lock ref ${name}: ${lock} exists`);
    }
    try {
      await this.fs.rename(lock, this.#path(name));
    } catch (error) {
      await this.fs.remove(lock);
      throw error;
    }
  }

  /**
   * The first refs of a repository that holds none, in one packed-refs file: git's initial ref
   * transaction on clone (one file written instead of a lock, a write and a rename per ref).
   * `packed-refs.lock` is taken exclusively; under it the store must hold no direct ref, loose or
   * packed, else nothing is written and the answer is false (as for invalid, repeated or
   * clashing names: `update` then handles them one by one). Like git's, this assumes no other
   * writer is adding refs to the new repository meanwhile.
   */
  async initialize(refs: readonly Ref[]): Promise<boolean> {
    const claimed = await this.#claim(refs, false);
    return claimed ? claimed.commit() : false;
  }

  /**
   * `initialize` in two steps: `packed-refs.lock` is taken, written and checked now, checked again
   * and renamed into place at `commit()` (`abort()` removes it). Meanwhile the lock keeps other
   * writers of packed-refs out, as git's does (writers of loose refs take no such lock: a ref one
   * writes meanwhile makes `commit()` answer false).
   */
  prepareInitialize(refs: readonly Ref[]): Promise<PreparedRefs | undefined> {
    return this.#claim(refs, true);
  }

  /** Takes packed-refs.lock with `refs` in it (`check`: and refuses if the store holds refs). */
  async #claim(refs: readonly Ref[], check: boolean): Promise<PreparedRefs | undefined> {
    if (refs.length === 0) return { commit: async () => true, abort: async () => {} };
    const names = new Set<string>();
    for (const { name, oid } of refs) {
      if (!isValidRefName(name) || !name.startsWith('refs/') || !OID.test(oid) || names.has(name)) return undefined;
      names.add(name);
    }
    for (const name of names) {
      // refs/a beside refs/a/b: a file and a directory of one name
      for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
        if (names.has(name.slice(0, slash))) return undefined;
      }
    }
    const sorted = [...refs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const text = `# pack-refs with: sorted \n${sorted.map((r) => `${r.oid} ${r.name}\n`).join('')}`;
    const path = this.#path('packed-refs');
    const lock = `${path}.lock`;
    if (!(await this.fs.createExclusive(lock, text))) return undefined;
    let state: 'held' | 'committed' | 'released' = 'held';
    const release = async () => {
      await this.fs.remove(lock);
      state = 'released';
    };
    try {
      if (check && (await this.#holdsRefs())) {
        await release();
        return undefined;
      }
    } catch (error) {
      // the original failure is the one to report, whether or not the lock goes
      await release().catch(() => {});
      throw error;
    }
    return {
      commit: async () => {
        if (state === 'committed') return true;
        if (state === 'released') throw new GitportError('REF_LOCKED', `${lock} was given up: nothing to commit`);
        try {
          // under the lock, right before the refs appear: the store must still hold none
          if (await this.#holdsRefs()) {
            await release();
            return false;
          }
          await this.fs.rename(lock, path);
        } catch (error) {
          await release().catch(() => {});
          throw error;
        }
        state = 'committed';
        this.#packed = undefined;
        return true;
      },
      abort: async () => {
        if (state === 'held') await release();
      },
    };
  }

  /**
   * Compare-and-swap updates. Each ref is locked (`<ref>.lock`, exclusive), checked against `old`
   * under the lock, then committed by renaming the lock over it. With `atomic`, every lock is
   * taken and every check passes before anything is committed; otherwise refs are independent.
   */
  async update(updates: readonly RefUpdate[], options: { atomic?: boolean } = {}): Promise<RefUpdateResult[]> {
    const results: RefUpdateResult[] = new Array(updates.length);
    const locked: number[] = [];
    const seen = new Set<string>();
    let packed: Map<string, { oid: ObjectId }> | undefined;
    try {
      for (let i = 0; i < updates.length; i++) {
        const update = updates[i]!;
        const rejection = await this.#prepare(update, seen);
        if (rejection) {
          results[i] = rejection;
          continue;
        }
        locked.push(i);
        packed ??= await this.packedRefs();
        const current = await this.read(update.name, packed);
        const value = current.kind === 'direct' ? current.oid : null;
        if (current.kind === 'symbolic') {
          results[i] = reject(update.name, 'symbolic', 'cannot update a symbolic ref directly');
        } else if (update.old !== undefined && update.old !== value) {
          results[i] = reject(update.name, 'stale', 'incorrect old value provided');
        } else if (value === null && update.new !== null && (await this.#conflicts(update.name, packed))) {
          results[i] = reject(update.name, 'invalid-name', 'a ref with a conflicting name exists (directory/file)');
        } else {
          results[i] = { name: update.name, status: 'ok', old: value, new: update.new };
        }
      }
      const failed = results.some((r) => r.status === 'rejected');
      if (options.atomic && failed) {
        for (let i = 0; i < results.length; i++) {
          if (results[i]!.status === 'ok') results[i] = reject(updates[i]!.name, 'atomic', 'atomic transaction failed');
        }
      }
      const deletes = locked.filter((i) => results[i]!.status === 'ok' && updates[i]!.new === null);
      if (deletes.length > 0) await this.#removePacked(deletes.map((i) => updates[i]!.name));
      for (const i of locked) {
        const result = results[i]!;
        if (result.status !== 'ok') continue;
        const name = updates[i]!.name;
        const lock = `${this.#path(name)}.lock`;
        if (result.new === null) {
          await this.fs.remove(this.#path(name));
          await this.fs.remove(lock);
        } else {
          await this.fs.rename(lock, this.#path(name));
        }
        locked.splice(locked.indexOf(i), 1, -1);
      }
    } finally {
      for (const i of locked) if (i >= 0) await this.fs.remove(`${this.#path(updates[i]!.name)}.lock`);
    }
    return results;
  }

  /** Validates one update and takes its lock (written with the new value); a rejection otherwise. */
  async #prepare(update: RefUpdate, seen: Set<string>): Promise<RefUpdateResult | undefined> {
    const { name } = update;
    if (!isValidRefName(name) || !name.startsWith('refs/')) {
      return reject(name, 'invalid-name', `invalid ref name ${JSON.stringify(name)}`);
    }
    if (update.new !== null && !OID.test(update.new))
      return reject(name, 'invalid-name', `invalid object id ${update.new}`);
    if (seen.has(name)) return reject(name, 'stale', 'ref updated twice in one transaction');
    seen.add(name);
    let created: boolean;
    try {
      created = await this.fs.createExclusive(`${this.#path(name)}.lock`, update.new === null ? '' : `${update.new}\n`);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOTDIR' || code === 'EISDIR') {
        return reject(name, 'invalid-name', 'a ref with a conflicting name exists (directory/file)');
      }
      throw error;
    }
    if (!created) return reject(name, 'stale', `cannot lock ref ${name}: it is locked by another update`);
    return undefined;
  }

  /** Whether creating `name` would clash with an existing ref `name/...` or a prefix of it. */
  async #conflicts(name: string, packed: Map<string, { oid: ObjectId }>): Promise<boolean> {
    const st = await this.fs.stat(this.#path(name));
    if (st?.isDirectory()) return true;
    for (const other of packed.keys()) {
      if (other.startsWith(`${name}/`) || name.startsWith(`${other}/`)) return true;
    }
    const parts = name.split('/');
    for (let i = 2; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if ((await this.fs.stat(this.#path(prefix)))?.isFile()) return true;
    }
    return false;
  }

  /** Rewrites packed-refs without `names` (under packed-refs.lock), when any of them is packed. */
  async #removePacked(names: string[]): Promise<void> {
    const packed = await this.packedRefs();
    if (!names.some((n) => packed.has(n))) return;
    const path = this.#path('packed-refs');
    const lock = `${path}.lock`;
    const text = (await this.fs.readText(path)) ?? '';
    const lines: string[] = [];
    let skipping = false;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('^')) {
        if (!skipping) lines.push(line);
        continue;
      }
      if (line.startsWith('#')) {
        lines.push(line);
        continue;
      }
      skipping = names.includes(line.slice(41));
      if (!skipping) lines.push(line);
    }
    if (!(await this.fs.createExclusive(lock, `${lines.join('\n')}\n`))) {
      throw new GitportError('REF_LOCKED', `cannot lock ${path}`);
    }
    try {
      await this.fs.rename(lock, path);
    } catch (error) {
      await this.fs.remove(lock);
      throw error;
    }
    this.#packed = undefined;
  }
}

function reject(name: string, reason: RefRejection, message: string): RefUpdateResult {
  return { name, status: 'rejected', reason, message };
}
