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
 * under `packed-refs.lock`, before the loose file goes. A lock that already exists means another
 * writer (us or git) holds the ref: the update is refused (`locked`, naming the lock), like git's
 * "cannot lock ref"; unlike git, a lock older than the stale bound is taken as left by a writer
 * that died, removed, and the lock taken again once (see stale-files.ts).
 *
 * Directories follow git's files backend: a ref `a` and a ref `a/b` cannot both exist; an empty
 * directory where a ref's file belongs is no clash (it is removed); deleting a ref, or giving up
 * a lock, removes the parent directories left empty, up to `refs/<kind>/`.
 *
 * An atomic batch moves nothing until every lock is held and every check passed, and then writes
 * each ref through a temporary file (`.tmp-<name>`, a name git never reads as a ref) while its
 * lock is still held, so that a failure part-way can put every moved ref back before any other
 * writer can see or take it.
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
import { batchNameClashes, isValidRefName, refNameSizeProblem } from '@gitport/protocol/internal/ref-store';
import { GitportError, isGitportError } from './errors.js';
import { errorCode, type FsLike, type FsPromisesLike, type FsStat, GitFs, joinPath, type ListedEntry } from './fs.js';
import { DEFAULT_STALE_AFTER_MS, REF_TEMP_PREFIX as TEMP_PREFIX } from './stale-files.js';

/** The protocol package's RefStore (the interface the servers and clients work on). */
export type RefStoreLike = RefStore;

const OID = /^[0-9a-f]{40}$/;
const MAX_SYMREF_DEPTH = 5;
/** Loose refs read at once while listing (bounded: each read holds a file descriptor). */
const CONCURRENT_READS = 32;
const decoder = new TextDecoder();

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

export interface FsRefStoreOptions {
  /**
   * How old (by its mtime) a ref lock must be to count as left by a writer that died: an update
   * that meets one removes it and takes the lock again, once. Default 10 minutes.
   */
  staleAfterMs?: number;
}

export class FsRefStore implements RefStore {
  readonly fs: GitFs;
  readonly gitDir: string;
  #packed: PackedRefs | undefined;
  readonly #staleAfterMs: number;

  constructor(fs: FsLike | FsPromisesLike | GitFs, gitDir: string, options: FsRefStoreOptions = {}) {
    this.fs = fs instanceof GitFs ? fs : new GitFs(fs);
    this.gitDir = gitDir.replace(/\/+$/, '');
    this.#staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
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
    // a name no store accepts cannot exist (and may be too long for the fs to look up)
    if (!isValidRefName(name, { allowOneLevel: true }) || refNameSizeProblem(name)) return { kind: 'missing' };
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
   * Compare-and-swap updates. Each ref is locked (`<ref>.lock`, exclusive) and checked against
   * `old` under the lock. Without `atomic`, refs are independent: each is committed by renaming
   * its lock over it. With `atomic`, every lock is taken and every check passes before anything
   * moves; then packed-refs loses the deleted refs and each ref is written (through a temporary
   * file, its lock still held), and if any step fails every ref already moved gets its old value
   * back, under its lock, before the locks go. A failure of one ref (a lock held, a directory in
   * the way, an fs error) rejects it with a message; `update` does not throw for it.
   *
   * As git does, an empty directory where the ref's file belongs is removed (it is no clash), a
   * deleted ref's empty parent directories are removed (sparing `refs/` and `refs/<kind>/`), and
   * so are those a lock needed once the lock goes unused. A lock older than `staleAfterMs` was left
   * by a writer that died: it is removed and the lock taken again, once.
   */
  async update(updates: readonly RefUpdate[], options: { atomic?: boolean } = {}): Promise<RefUpdateResult[]> {
    const atomic = options.atomic === true;
    const results: (RefUpdateResult | undefined)[] = new Array(updates.length);
    const held: Held[] = [];
    try {
      this.#validate(updates, results);
      for (let i = 0; i < updates.length && !(atomic && results.some(Boolean)); i++) {
        if (results[i]) continue;
        const outcome = await this.#lock(updates[i]!, i);
        if ('status' in outcome) results[i] = outcome;
        else held.push(outcome);
      }
      if (!(atomic && results.some(Boolean))) {
        const packed = await this.packedRefs();
        for (const h of held) {
          const rejection = await this.#check(h, packed);
          if (rejection) results[h.index] = rejection;
        }
        if (!(atomic && results.some(Boolean))) await this.#commit(held, results, packed, atomic);
      }
    } catch (error) {
      // not one ref's failure (packed-refs unreadable, say): nothing of it was committed
      const message = `cannot update refs: ${this.#describe(error)}`;
      for (let i = 0; i < updates.length; i++) {
        if (!results[i] || (atomic && results[i]!.status === 'ok'))
          results[i] = reject(updates[i]!.name, 'failed', message);
      }
    } finally {
      await this.#release(held);
    }
    if (atomic && results.some((r) => r?.status === 'rejected')) {
      return Array.from(results, (r, i) =>
        r?.status === 'rejected' ? r : reject(updates[i]!.name, 'atomic', 'atomic transaction failed'),
      );
    }
    return results as RefUpdateResult[];
  }

  /** Rejects what needs no look at the disk: names, ids, a ref twice, names that clash in the batch. */
  #validate(updates: readonly RefUpdate[], results: (RefUpdateResult | undefined)[]): void {
    const seen = new Set<string>();
    updates.forEach((update, i) => {
      const { name } = update;
      if (!isValidRefName(name) || !name.startsWith('refs/')) {
        results[i] = reject(name, 'invalid-name', `invalid ref name ${JSON.stringify(name.slice(0, 200))}`);
        return;
      }
      const tooLong = refNameSizeProblem(name);
      if (tooLong !== undefined) results[i] = reject(name, 'invalid-name', tooLong);
      else if (update.new !== null && !OID.test(update.new)) {
        results[i] = reject(name, 'invalid-name', `invalid object id ${String(update.new).slice(0, 80)}`);
      } else if (seen.has(name)) results[i] = reject(name, 'stale', 'ref updated twice in one transaction');
      seen.add(name);
    });
    for (const [i, other] of batchNameClashes(updates)) {
      const { name } = updates[i]!;
      results[i] ??= reject(
        name,
        'invalid-name',
        `cannot process ${name} and ${other} at the same time (directory/file)`,
      );
    }
  }

  /** Takes one ref's lock (written with the new value), breaking a stale one once; a rejection otherwise. */
  async #lock(update: RefUpdate, index: number): Promise<Held | RefUpdateResult> {
    const { name } = update;
    const path = this.#path(name);
    const lock = `${path}.lock`;
    for (let attempt = 0; ; attempt++) {
      let created: boolean;
      try {
        created = await this.fs.createExclusive(lock, update.new === null ? '' : `${update.new}\n`);
      } catch (error) {
        await this.#pruneParents(name);
        const code = errorCode(error);
        if (code === 'ENOTDIR' || code === 'EISDIR') {
          return reject(
            name,
            'invalid-name',
            `a ref with a conflicting name exists: cannot create ${name} (directory/file)`,
          );
        }
        return reject(name, 'failed', `cannot lock ref ${name}: ${this.#describe(error)}`);
      }
      if (created) return { index, name, path, lock, new: update.new, expected: update.old, old: null };
      if (attempt > 0 || !(await this.#breakStaleLock(lock))) {
        return reject(name, 'locked', this.#lockedMessage(name, `${name}.lock`));
      }
    }
  }

  #lockedMessage(name: string, lock: string): string {
    const minutes = Math.round(this.#staleAfterMs / 60_000);
    const bound = minutes >= 1 ? `${minutes} min` : `${Math.round(this.#staleAfterMs / 1000)} s`;
    return `cannot lock ref ${name}: ${lock} exists; another update holds it, or one that crashed left it (then it is stale, and is removed once older than ${bound})`;
  }

  /**
   * Removes `lock` when it is older than the stale bound (true: take it again). Breaking locks is
   * serialised within this context, and the lock is looked at again under that, so two updates
   * that meet one stale lock do not remove each other's new one.
   */
  async #breakStaleLock(lock: string): Promise<boolean> {
    try {
      const seen = await this.fs.stat(lock);
      if (!seen) return true;
      if (!this.#isStale(seen)) return false;
      return await this.fs.withLock(`stale:${lock}`, async () => {
        const again = await this.fs.stat(lock);
        if (!again) return true;
        if (again.ino !== seen.ino || again.mtimeMs !== seen.mtimeMs) return false;
        await this.fs.remove(lock);
        return true;
      });
    } catch {
      // a lock that cannot even be looked at is reported as held
      return false;
    }
  }

  #isStale(st: FsStat): boolean {
    return Date.now() - st.mtimeMs > this.#staleAfterMs;
  }

  /** Under the lock: the current value, compared with the expected one, and the clashes of a new name. */
  async #check(h: Held, packed: Map<string, { oid: ObjectId }>): Promise<RefUpdateResult | undefined> {
    const { name } = h;
    let loose: RefValue | undefined | 'dir';
    try {
      loose = await this.#readLoose(name, true);
      // an empty directory (left by refs deleted before) is no clash: git removes it too
      if (loose === 'dir') {
        if (!(await this.fs.removeEmptyTree(h.path))) {
          return reject(name, 'invalid-name', `${name}/ is a directory that holds refs or files (directory/file)`);
        }
        loose = undefined;
      }
    } catch (error) {
      return reject(name, 'failed', `cannot read ref ${name}: ${this.#describe(error)}`);
    }
    if (loose?.kind === 'symbolic') return reject(name, 'symbolic', 'cannot update a symbolic ref directly');
    h.loose = loose?.kind === 'direct' ? loose.oid : undefined;
    h.old = h.loose ?? packed.get(name)?.oid ?? null;
    if (h.expected !== undefined && h.expected !== h.old) return reject(name, 'stale', 'incorrect old value provided');
    if (h.old === null && h.new !== null) {
      let clash: string | undefined;
      try {
        clash = await this.#conflicts(name, packed);
      } catch (error) {
        return reject(name, 'failed', `cannot check ref ${name}: ${this.#describe(error)}`);
      }
      if (clash !== undefined)
        return reject(name, 'invalid-name', `${clash} exists: cannot create ${name} (directory/file)`);
    }
    return undefined;
  }

  /** Applies the checked updates (those without a result yet); each gets its result. */
  async #commit(
    held: Held[],
    results: (RefUpdateResult | undefined)[],
    packed: Map<string, { oid: ObjectId }>,
    atomic: boolean,
  ): Promise<void> {
    let live = held.filter((h) => !results[h.index]);
    // deleted refs leave packed-refs first, so that no reader sees a packed value come back
    const unpack = live.filter((h) => h.new === null && packed.has(h.name));
    if (unpack.length > 0) {
      const problem = await this.#removePacked(unpack.map((h) => h.name));
      if (problem) {
        for (const h of unpack) results[h.index] = reject(h.name, problem.reason, problem.message);
        if (atomic) return;
        live = live.filter((h) => !results[h.index]);
      } else {
        for (const h of unpack) h.unpacked = true;
      }
    }
    if (!atomic) {
      for (const h of live) {
        try {
          if (h.new === null) {
            if (h.loose !== undefined) await this.fs.remove(h.path);
          } else {
            await this.fs.rename(h.lock, h.path);
            h.committed = true;
          }
          results[h.index] = { name: h.name, status: 'ok', old: h.old, new: h.new };
        } catch (error) {
          results[h.index] = reject(h.name, 'failed', `cannot update ref ${h.name}: ${this.#describe(error)}`);
        }
      }
      return;
    }
    const moved: Held[] = unpack.filter((h) => h.loose === undefined);
    for (const h of live) {
      try {
        if (h.new === null) {
          if (h.loose !== undefined) await this.fs.remove(h.path);
        } else {
          await this.#replace(h.path, `${h.new}\n`);
        }
        if (!moved.includes(h)) moved.push(h);
      } catch (error) {
        const failures = await this.#restore(moved);
        const restored = failures.length === 0 ? '' : `; restoring ${failures.join(', ')} failed`;
        results[h.index] = reject(h.name, 'failed', `cannot update ref ${h.name}: ${this.#describe(error)}${restored}`);
        return;
      }
    }
    for (const h of live) results[h.index] = { name: h.name, status: 'ok', old: h.old, new: h.new };
  }

  /** An atomic batch's rollback: each ref that moved gets its old value back (its lock is still held). */
  async #restore(moved: readonly Held[]): Promise<string[]> {
    const failures: string[] = [];
    for (const h of [...moved].reverse()) {
      try {
        // the loose file held the value readers saw; without one, the packed value shows again
        // once the written file goes, unless packed-refs lost it (a delete): then it is written
        if (h.loose !== undefined) await this.#replace(h.path, `${h.loose}\n`);
        else if (h.unpacked && h.old !== null) await this.#replace(h.path, `${h.old}\n`);
        else await this.fs.remove(h.path);
      } catch (error) {
        failures.push(`${h.name} (${this.#describe(error)})`);
      }
    }
    return failures;
  }

  /** Writes a ref's file through a temporary file beside it (a name git never reads as a ref). */
  async #replace(path: string, text: string): Promise<void> {
    const slash = path.lastIndexOf('/');
    const temp = `${path.slice(0, slash)}/${TEMP_PREFIX}${path.slice(slash + 1)}`;
    await this.fs.write(temp, text);
    try {
      await this.fs.rename(temp, path);
    } catch (error) {
      await this.fs.remove(temp).catch(() => {});
      throw error;
    }
  }

  /** Removes the locks not committed, then the directories that deleted refs and unused locks leave empty. */
  async #release(held: readonly Held[]): Promise<void> {
    for (const h of held) {
      if (h.committed) continue;
      // a lock that cannot be removed stays, and is reported as held (and stale, in time) to the next update
      await this.fs.remove(h.lock).catch(() => {});
    }
    for (const h of held) if (!h.committed) await this.#pruneParents(h.name);
  }

  /** Removes the empty directories above ref `name`, up to and sparing `refs/<kind>`. */
  async #pruneParents(name: string): Promise<void> {
    const parts = name.split('/');
    for (let depth = parts.length - 1; depth > 2; depth--) {
      const removed = await this.fs.removeEmptyDir(this.#path(parts.slice(0, depth).join('/'))).catch(() => false);
      if (!removed) return;
    }
  }

  /** Whether creating `name` would clash with an existing ref `name/...` or a directory of it: that ref. */
  async #conflicts(name: string, packed: Map<string, { oid: ObjectId }>): Promise<string | undefined> {
    for (const other of packed.keys()) {
      if (other.startsWith(`${name}/`) || name.startsWith(`${other}/`)) return other;
    }
    const parts = name.split('/');
    for (let i = 2; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if ((await this.fs.stat(this.#path(prefix)))?.isFile()) return prefix;
    }
    return undefined;
  }

  /** Describes an fs failure without the repository's absolute path (it may reach a client). */
  #describe(error: unknown): string {
    let inner = error;
    while (isGitportError(inner) && inner.cause !== undefined && errorCode(inner.cause)) inner = inner.cause;
    const text = inner instanceof Error ? inner.message : String(inner);
    return text.split(`${this.gitDir}/`).join('').slice(0, 300);
  }

  /**
   * Rewrites packed-refs without `names` under packed-refs.lock (broken once when stale, like a
   * ref's); what went wrong otherwise, nothing written.
   */
  async #removePacked(names: string[]): Promise<{ reason: RefRejection; message: string } | undefined> {
    const path = this.#path('packed-refs');
    const lock = `${path}.lock`;
    for (let attempt = 0; ; attempt++) {
      let created: boolean;
      try {
        created = await this.fs.createExclusive(lock, '');
      } catch (error) {
        return { reason: 'failed', message: `cannot lock packed-refs: ${this.#describe(error)}` };
      }
      if (created) break;
      if (attempt > 0 || !(await this.#breakStaleLock(lock))) {
        return { reason: 'locked', message: this.#lockedMessage(names.join(', ').slice(0, 200), 'packed-refs.lock') };
      }
    }
    try {
      const text = (await this.fs.readText(path)) ?? '';
      const drop = new Set(names);
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
        skipping = drop.has(line.slice(41));
        if (!skipping) lines.push(line);
      }
      await this.fs.write(lock, `${lines.join('\n')}\n`);
      await this.fs.rename(lock, path);
    } catch (error) {
      await this.fs.remove(lock).catch(() => {});
      return { reason: 'failed', message: `cannot rewrite packed-refs: ${this.#describe(error)}` };
    } finally {
      this.#packed = undefined;
    }
    return undefined;
  }
}

/** One update whose lock is held, and what the commit did with it. */
interface Held {
  index: number;
  name: string;
  path: string;
  lock: string;
  new: ObjectId | null;
  /** The caller's expected old value (`undefined`: not checked). */
  expected: ObjectId | null | undefined;
  /** The value before, as read under the lock (the loose file's, else the packed one's). */
  old: ObjectId | null;
  /** The loose file's value before, when there was one. */
  loose?: ObjectId;
  /** packed-refs lost this (deleted) ref. */
  unpacked?: boolean;
  /** The lock was renamed over the ref (nothing left to remove). */
  committed?: boolean;
}

function reject(name: string, reason: RefRejection, message: string): RefUpdateResult {
  return { name, status: 'rejected', reason, message };
}
