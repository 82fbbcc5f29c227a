/**
 * References: the `RefStore` interface that the servers and clients work on, a memory
 * implementation, and git's ref-name rules.
 *
 * Ref names follow git-check-ref-format(1):
 *   1. no path component begins with `.` or ends with `.lock`;
 *   2. at least one `/` (so `refs/...`), unless the name is `HEAD`;
 *   3. no `..`;
 *   4. no ASCII control characters, space, `~`, `^`, `:`;
 *   5. no `?`, `*`, `[`;
 *   6. no leading or trailing `/`, no `//`;
 *   7. does not end with `.`;
 *   8. no `@{`;
 *   9. is not `@`;
 *  10. no `\`.
 *
 * Stores also refuse a name longer than `MAX_REF_NAME_BYTES`, or with a component longer than
 * `MAX_REF_COMPONENT_BYTES` (UTF-8): git sets no such bound, but a loose ref is a file, and its
 * lock file and a temporary file beside it must fit the common 255-byte file-name limit; a ref one
 * store accepts must be one every other (and real git's files) can hold.
 *
 * Updates are compare-and-swap: each `RefUpdate` carries the value the caller believes the ref
 * has (`old`), and the store applies it only when that holds. `atomic` applies all or none. Two
 * names of which one is a directory of the other (`refs/heads/a` and `refs/heads/a/b`) cannot both
 * exist: creating one while the other exists, or writing both in one batch, is refused.
 * `update` resolves with one result per update and does not throw for a failure of one ref
 * (a lock held, a storage error): that ref is rejected with a message saying why.
 */
import { isObjectId as isPackObjectId } from '@gitport/pack/internal/object';
import { ProtocolError } from './errors.js';

/** 40 lowercase hex digits (sha1); the same type as @gitport/pack's `ObjectId`. */
export type ObjectId = string;

/** 40 lowercase hex digits (the pack package's check). */
export const isObjectId: (value: string) => boolean = isPackObjectId;

/** A direct ref (`refs/...` pointing at an object). `HEAD` is reported by `readSymbolic`/`resolve`. */
export interface Ref {
  name: string;
  oid: ObjectId;
}

/** What a ref name currently is. */
export type RefValue = { kind: 'direct'; oid: ObjectId } | { kind: 'symbolic'; target: string } | { kind: 'missing' };

/**
 * One compare-and-swap step. `old`: `undefined` skips the check, `null` requires the ref to be
 * absent (create), an id requires that value. `new`: an id to set, `null` to delete.
 */
export interface RefUpdate {
  name: string;
  old?: ObjectId | null;
  new: ObjectId | null;
}

export type RefUpdateResult =
  | { name: string; status: 'ok'; old: ObjectId | null; new: ObjectId | null }
  | { name: string; status: 'rejected'; reason: RefRejection; message: string };

/**
 * Why a store refused one update: `stale` (the old value did not hold), `invalid-name` (a bad
 * name or id, or a directory/file clash with another ref), `atomic` (another update of an atomic
 * batch failed), `symbolic`, `locked` (another writer holds the ref, or a crashed one left its
 * lock: the message names the lock), `failed` (the storage failed: the message says how).
 */
export type RefRejection = 'stale' | 'invalid-name' | 'atomic' | 'symbolic' | 'locked' | 'failed';

export interface RefStore {
  /** Direct refs whose names start with `prefix` (all when omitted), sorted by name (bytewise). */
  list(prefix?: string): Promise<Ref[]>;
  /** The raw value of one name (symbolic refs are not followed). */
  read(name: string): Promise<RefValue>;
  /** Follows symbolic refs (`HEAD` -> `refs/heads/main` -> id); `undefined` when unborn or missing. */
  resolve(name: string): Promise<ObjectId | undefined>;
  /** Compare-and-swap updates of direct refs; `atomic` applies all or none. */
  update(updates: readonly RefUpdate[], options?: { atomic?: boolean }): Promise<RefUpdateResult[]>;
  /** Points a symbolic ref (normally `HEAD`) at `target`. */
  setSymbolic(name: string, target: string): Promise<void>;
  /**
   * Optional: the first refs of a store that holds none, written in one step (what git does on
   * clone: its initial ref transaction writes every ref into packed-refs at once). Resolves
   * false, changing nothing, when the store already holds a direct ref or a name is not a valid
   * `refs/...` name once (the caller then goes through `update`, which says why per ref).
   */
  initialize?(refs: readonly Ref[]): Promise<boolean>;
  /**
   * Optional: `initialize` in two steps, for a caller that knows the refs before their objects
   * are stored (a clone knows them once the remote has listed its refs, and then takes the pack).
   * Checks and claims what `initialize` does, and resolves undefined where it would answer false;
   * the refs appear only at `commit()`. One of `commit()` and `abort()` must follow: the claim
   * keeps other writers of the store's shared ref file out until then (for as long as it takes).
   */
  prepareInitialize?(refs: readonly Ref[]): Promise<PreparedRefs | undefined>;
}

/** Refs ready to appear at once (`RefStore.prepareInitialize`). */
export interface PreparedRefs {
  /**
   * The refs appear, all at once; false when the store got refs since the claim (then nothing is
   * written and the claim is released). Called again after it answered true, it answers true;
   * once the claim is released (it answered false, `abort()`, or it failed), it throws.
   */
  commit(): Promise<boolean>;
  /** Releases the claim, writing nothing; nothing to do after a commit or a first abort. */
  abort(): Promise<void>;
}

const MAX_SYMREF_DEPTH = 5;

/** git-check-ref-format's rules; `allowOneLevel` permits names without `/` such as `HEAD`. */
export function isValidRefName(name: string, options: { allowOneLevel?: boolean } = {}): boolean {
  if (name.length === 0 || name === '@') return false;
  if (name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
    switch (name[i]) {
      case ' ':
      case '~':
      case '^':
      case ':':
      case '?':
      case '*':
      case '[':
      case '\\':
        return false;
    }
  }
  const parts = name.split('/');
  if (parts.length < 2 && !options.allowOneLevel) return false;
  for (const part of parts) {
    if (part.startsWith('.') || part.endsWith('.lock')) return false;
  }
  return true;
}

/** Asserts `isValidRefName`; throws ProtocolError `REF_INVALID_NAME`. */
export function assertValidRefName(name: string, options: { allowOneLevel?: boolean } = {}): void {
  if (!isValidRefName(name, options)) {
    throw new ProtocolError('REF_INVALID_NAME', `invalid ref name ${JSON.stringify(name)}`, { data: { name } });
  }
}

/** The longest ref name (UTF-8 bytes) a store accepts. */
export const MAX_REF_NAME_BYTES = 1024;
/** The longest component of a ref name (UTF-8 bytes) a store accepts: 255 less room for `.lock` and a temporary prefix. */
export const MAX_REF_COMPONENT_BYTES = 240;

const nameEncoder = new TextEncoder();

/** Why a ref name is too long for a store (`MAX_REF_NAME_BYTES`, `MAX_REF_COMPONENT_BYTES`); undefined when it fits. */
export function refNameSizeProblem(name: string): string | undefined {
  // a UTF-16 code unit is at most 3 UTF-8 bytes: short names need no encoding
  if (name.length * 3 <= MAX_REF_COMPONENT_BYTES) return undefined;
  const total = nameEncoder.encode(name).byteLength;
  if (total > MAX_REF_NAME_BYTES) return `ref name too long (${total} bytes, at most ${MAX_REF_NAME_BYTES})`;
  for (const part of name.split('/')) {
    const size = nameEncoder.encode(part).byteLength;
    if (size > MAX_REF_COMPONENT_BYTES) {
      return `ref name component too long (${size} bytes, at most ${MAX_REF_COMPONENT_BYTES})`;
    }
  }
  return undefined;
}

/**
 * For each update of a batch that writes a ref (`new` not null) and whose name is a directory of
 * another name of the batch, or has one as its directory: that other name. Such a pair cannot be
 * written at once (git: "cannot process 'a' and 'a/b' at the same time").
 */
export function batchNameClashes(updates: readonly RefUpdate[]): Map<number, string> {
  const names = new Set<string>();
  const under = new Map<string, string>();
  for (const { name } of updates) {
    names.add(name);
    for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
      const prefix = name.slice(0, slash);
      if (!under.has(prefix)) under.set(prefix, name);
    }
  }
  const clashes = new Map<number, string>();
  updates.forEach(({ name, new: value }, i) => {
    if (value === null) return;
    const below = under.get(name);
    if (below !== undefined) {
      clashes.set(i, below);
      return;
    }
    for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
      const prefix = name.slice(0, slash);
      if (names.has(prefix)) {
        clashes.set(i, prefix);
        return;
      }
    }
  });
  return clashes;
}

/** Compares strings bytewise by UTF-16 code unit order, which equals git's C-locale order for ASCII names. */
export function compareRefNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * An in-memory RefStore. Updates are synchronous inside one microtask, so concurrent callers see
 * each compare-and-swap as one indivisible step.
 */
export class MemoryRefStore implements RefStore {
  readonly #direct = new Map<string, ObjectId>();
  readonly #symbolic = new Map<string, string>();
  #sorted: Ref[] | undefined;

  constructor(initial: { refs?: Iterable<Ref> | Record<string, ObjectId>; head?: string } = {}) {
    const refs = initial.refs ?? [];
    const entries: Ref[] =
      Symbol.iterator in refs
        ? [...(refs as Iterable<Ref>)]
        : Object.entries(refs as Record<string, ObjectId>).map(([name, oid]) => ({ name, oid }));
    for (const { name, oid } of entries) {
      assertValidRefName(name);
      if (!isObjectId(oid)) throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid object id ${oid}`);
      this.#direct.set(name, oid);
    }
    this.#symbolic.set('HEAD', initial.head ?? 'refs/heads/main');
  }

  async list(prefix = ''): Promise<Ref[]> {
    const sorted = this.#sortedRefs();
    if (prefix === '') return sorted.map((r) => ({ ...r }));
    return sorted.filter((r) => r.name.startsWith(prefix)).map((r) => ({ ...r }));
  }

  async read(name: string): Promise<RefValue> {
    const target = this.#symbolic.get(name);
    if (target !== undefined) return { kind: 'symbolic', target };
    const oid = this.#direct.get(name);
    return oid === undefined ? { kind: 'missing' } : { kind: 'direct', oid };
  }

  async resolve(name: string): Promise<ObjectId | undefined> {
    let current = name;
    for (let depth = 0; depth <= MAX_SYMREF_DEPTH; depth++) {
      const target = this.#symbolic.get(current);
      if (target === undefined) return this.#direct.get(current);
      current = target;
    }
    return undefined;
  }

  async update(updates: readonly RefUpdate[], options: { atomic?: boolean } = {}): Promise<RefUpdateResult[]> {
    const results: RefUpdateResult[] = updates.map((u) => this.#check(u));
    const seen = new Set<string>();
    for (let i = 0; i < updates.length; i++) {
      const name = (updates[i] as RefUpdate).name;
      if (seen.has(name) && results[i]?.status === 'ok') {
        results[i] = { name, status: 'rejected', reason: 'stale', message: 'ref updated twice in one transaction' };
      }
      seen.add(name);
    }
    for (const [i, other] of batchNameClashes(updates)) {
      const name = (updates[i] as RefUpdate).name;
      if (results[i]?.status === 'ok') {
        results[i] = {
          name,
          status: 'rejected',
          reason: 'invalid-name',
          message: `cannot process ${name} and ${other} at the same time (directory/file)`,
        };
      }
    }
    const failed = results.some((r) => r.status === 'rejected');
    if (options.atomic && failed) {
      return results.map((r) =>
        r.status === 'ok'
          ? { name: r.name, status: 'rejected', reason: 'atomic', message: 'atomic transaction failed' }
          : r,
      );
    }
    for (let i = 0; i < updates.length; i++) {
      const result = results[i] as RefUpdateResult;
      if (result.status !== 'ok') continue;
      if (result.new === null) this.#direct.delete(result.name);
      else this.#direct.set(result.name, result.new);
      this.#sorted = undefined;
    }
    return results;
  }

  /** An existing direct ref that `name` cannot exist beside: a directory of it, or one inside it. */
  #clash(name: string): string | undefined {
    for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
      const prefix = name.slice(0, slash);
      if (this.#direct.has(prefix)) return prefix;
    }
    // the first name after `name/` in sorted order is inside it if any is
    const sorted = this.#sortedRefs();
    const inside = `${name}/`;
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (compareRefNames((sorted[mid] as Ref).name, inside) < 0) low = mid + 1;
      else high = mid;
    }
    const next = sorted[low]?.name;
    return next?.startsWith(inside) ? next : undefined;
  }

  #sortedRefs(): Ref[] {
    this.#sorted ??= [...this.#direct]
      .map(([name, oid]) => ({ name, oid }))
      .sort((a, b) => compareRefNames(a.name, b.name));
    return this.#sorted;
  }

  async setSymbolic(name: string, target: string): Promise<void> {
    assertValidRefName(name, { allowOneLevel: true });
    assertValidRefName(target, { allowOneLevel: true });
    this.#direct.delete(name);
    this.#symbolic.set(name, target);
  }

  #check(update: RefUpdate): RefUpdateResult {
    const { name } = update;
    if (!isValidRefName(name) || !name.startsWith('refs/')) {
      return { name, status: 'rejected', reason: 'invalid-name', message: `invalid ref name ${JSON.stringify(name)}` };
    }
    const tooLong = refNameSizeProblem(name);
    if (tooLong !== undefined) return { name, status: 'rejected', reason: 'invalid-name', message: tooLong };
    if (this.#symbolic.has(name)) {
      return { name, status: 'rejected', reason: 'symbolic', message: 'cannot update a symbolic ref directly' };
    }
    if (update.new !== null && !isObjectId(update.new)) {
      return { name, status: 'rejected', reason: 'invalid-name', message: `invalid object id ${update.new}` };
    }
    const current = this.#direct.get(name) ?? null;
    if (update.old !== undefined && update.old !== current) {
      return { name, status: 'rejected', reason: 'stale', message: 'incorrect old value provided' };
    }
    const clash = current === null && update.new !== null ? this.#clash(name) : undefined;
    if (clash !== undefined) {
      return {
        name,
        status: 'rejected',
        reason: 'invalid-name',
        message: `${clash} exists: cannot create ${name} (directory/file)`,
      };
    }
    return { name, status: 'ok', old: current, new: update.new };
  }
}
