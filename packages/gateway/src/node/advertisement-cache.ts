/**
 * Ref advertisements kept per (repository, service, protocol version), checked against the refs on
 * disk on every read: real git may change a repository directly (`git update-ref`, a push to the
 * bare repository), and a v0-only client shown an old tip fetches nothing and has its next push
 * refused, so no read may answer from an older state than the disk's at the time of the read.
 *
 * The check is a stamp of the files git renames into place when it changes a ref: `HEAD`,
 * `packed-refs` and every directory under `refs/` (a loose ref update renames `<ref>.lock` over
 * `<ref>`, which changes the mtime and ctime of the ref's own directory only, however deep; a new
 * directory changes its parent's). Stat-ing the directories recorded in the stamp is enough: any
 * directory that appeared since changed one of them.
 *
 * File times are coarse (a clock tick, or a second on some file systems), so two updates in one
 * tick can leave the same stamp. A stamp is trusted only once every mtime in it is older than the
 * moment it was taken by a margin of at least twice that granularity (git's "racily clean"
 * rule); until then every read reloads. The margin is `settleMs` when the stamp shows sub-second
 * times (Linux file systems: a clock tick of at most 10 ms), `coarseSettleMs` when every time in
 * it is a whole second (file systems that keep seconds, or two of them).
 *
 * A small stamp is checked synchronously (`peek`: a few `stat` calls, no promise; one check serves
 * every request answered in the same synchronous run, such as the pipelined requests of one socket
 * read, which were all sent before it; the stats it reads also serve the other advertisements of
 * the repository in that run; a caller that changes the refs itself between two calls
 * in one synchronous run must let a microtask pass in between), a large one
 * or a changed one through `get`, where concurrent requests for one key share one check: a request
 * that arrives while a check is running waits for the next one, which starts after it, so no
 * request is answered from a check that began before it arrived. Our own ref updates `drop` the
 * repository's entries at once, as do the updates of other gateways on the same root that a shared
 * event log reports (a file system whose attributes lag, such as NFS with attribute caching, can
 * hide those from the check).
 */
import { type Stats, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** What the files behind a repository's refs looked like at one moment. */
export interface RefsStamp {
  readonly paths: readonly string[];
  /** Per path: mtime, ctime (ms, fractional), inode and size; NaN for a missing path. */
  readonly ids: Float64Array;
  /** The newest mtime in the stamp, ms since the epoch. */
  readonly newestMs: number;
  /** When the stamp was taken (before the first stat), ms since the epoch. */
  readonly takenAt: number;
  /** Some time in the stamp has a fraction of a second: the file system keeps sub-second times. */
  readonly fine: boolean;
}

export interface AdvertisementCacheOptions {
  /**
   * How much older than its stamp the refs' file times must be for the stamp to be trusted, ms,
   * on a file system with sub-second times (default 100).
   */
  settleMs?: number;
  /** The same on a file system that keeps whole seconds (default 4 000). */
  coarseSettleMs?: number;
  /** Entries kept at most (default 1 000). */
  maxEntries?: number;
  /** Stamps of at most this many paths are checked synchronously (default 64). */
  maxSyncPaths?: number;
}

/** Directories under `refs/` a stamp records at most; past it the stamp is never trusted. */
const MAX_DIRS = 4096;
const MAX_DEPTH = 16;

const FIELDS = 4;

function record(ids: number[], s: Stats | undefined): void {
  if (s === undefined) ids.push(Number.NaN, Number.NaN, Number.NaN, Number.NaN);
  else ids.push(s.mtimeMs, s.ctimeMs, s.ino, s.size);
}

/** Whether a path's stat matches what the stamp recorded for it (NaN, a missing path, matches a missing path). */
function matches(ids: Float64Array, at: number, s: Stats | undefined): boolean {
  if (s === undefined) return Number.isNaN(ids[at]!);
  return ids[at] === s.mtimeMs && ids[at + 1] === s.ctimeMs && ids[at + 2] === s.ino && ids[at + 3] === s.size;
}

/** Reads a stamp of a repository's refs (HEAD, packed-refs, each directory under refs/). */
export async function readRefsStamp(gitDir: string): Promise<RefsStamp> {
  // taken before the first stat, so a time read by any of them is at most this recent
  const takenAt = Date.now();
  const paths: string[] = [join(gitDir, 'HEAD'), join(gitDir, 'packed-refs')];
  const ids: number[] = [];
  let newest = 0;
  let complete = true;
  const add = async (path: string): Promise<Stats | undefined> => {
    const s = await stat(path).catch(() => undefined);
    record(ids, s);
    if (s !== undefined && s.mtimeMs > newest) newest = s.mtimeMs;
    return s;
  };
  await add(paths[0]!);
  await add(paths[1]!);
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (paths.length >= MAX_DIRS + 2 || depth > MAX_DEPTH) {
      complete = false;
      return;
    }
    paths.push(dir);
    const s = await add(dir);
    if (s === undefined || !s.isDirectory()) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name), depth + 1);
  };
  await walk(join(gitDir, 'refs'), 0);
  // an incomplete stamp could miss a change: make it never settle
  const newestMs = complete ? newest : Number.POSITIVE_INFINITY;
  let fine = false;
  for (let i = 0; i < ids.length; i += FIELDS) if (ids[i]! % 1000 !== 0 && !Number.isNaN(ids[i]!)) fine = true;
  return { paths, ids: Float64Array.from(ids), newestMs, takenAt, fine };
}

/** A path's stat now, undefined when it is missing or cannot be read. */
function statNow(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/**
 * Whether the refs look as they did when the stamp was taken (synchronous: a few stat calls).
 * `seen` holds stats already read in the same synchronous run, and receives the ones read here.
 */
export function stampHoldsSync(stamp: RefsStamp, seen?: Map<string, Stats | undefined>): boolean {
  for (let i = 0; i < stamp.paths.length; i++) {
    const path = stamp.paths[i]!;
    let s: Stats | undefined;
    if (seen === undefined) s = statNow(path);
    else if (seen.has(path)) s = seen.get(path);
    else {
      s = statNow(path);
      seen.set(path, s);
    }
    if (!matches(stamp.ids, i * FIELDS, s)) return false;
  }
  return true;
}

function sameStamp(a: RefsStamp, b: RefsStamp): boolean {
  if (a.paths.length !== b.paths.length) return false;
  for (let i = 0; i < a.paths.length; i++) if (a.paths[i] !== b.paths[i]) return false;
  for (let i = 0; i < a.ids.length; i++) {
    const x = a.ids[i]!;
    const y = b.ids[i]!;
    if (x !== y && !(Number.isNaN(x) && Number.isNaN(y))) return false;
  }
  return true;
}

interface Entry {
  bytes: Uint8Array;
  stamp: RefsStamp;
}

/** One check-and-maybe-load of a key; `start` runs it (a queued run waits for the one before it). */
interface Run {
  promise: Promise<Uint8Array>;
  start: () => void;
  dropped: boolean;
}

/** The run in progress for a key and the one queued behind it. */
interface Slot {
  current: Run;
  next: Run | undefined;
}

export class AdvertisementCache {
  readonly settleMs: number;
  readonly coarseSettleMs: number;
  readonly maxEntries: number;
  readonly maxSyncPaths: number;
  /** repository -> key -> entry */
  private readonly entries = new Map<string, Map<string, Entry>>();
  private readonly slots = new Map<string, Slot>();
  /**
   * Entries checked against the disk during the current synchronous run (one socket read's
   * pipelined requests): every request answered in it was sent before that check, so the check
   * holds for all of them. Cleared at the next microtask.
   */
  private readonly verified = new Set<Entry>();
  /**
   * The stats read by those checks, by path: the entries of one repository (each service and
   * protocol version) share its paths, so one check of them serves every entry in the same run.
   */
  private readonly seen = new Map<string, Stats | undefined>();
  private readonly forgetVerified = () => {
    this.verified.clear();
    this.seen.clear();
  };
  private size = 0;
  /** stat calls made by synchronous checks (`peek`), for tests and diagnostics. */
  syncStats = 0;

  /**
   * A number (the former trust window, in ms) is accepted for compatibility and ignored: every
   * read checks the disk.
   */
  constructor(options: AdvertisementCacheOptions | number = {}) {
    const o = typeof options === 'number' ? {} : options;
    this.settleMs = o.settleMs ?? 100;
    this.coarseSettleMs = o.coarseSettleMs ?? 4000;
    this.maxEntries = o.maxEntries ?? 1000;
    this.maxSyncPaths = o.maxSyncPaths ?? 64;
  }

  /**
   * The cached bytes of `key` if the refs on disk still match them, else what `load` gives (kept
   * for later reads unless `keep` says otherwise, e.g. for an error answer).
   */
  get(
    repo: string,
    key: string,
    gitDir: () => Promise<string>,
    load: () => Promise<Uint8Array>,
    keep?: (bytes: Uint8Array) => boolean,
  ): Promise<Uint8Array> {
    const hit = this.peek(repo, key);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.revalidate(repo, key, gitDir, load, keep);
  }

  /**
   * The advertisement if it is cached, its stamp is settled and small, and the refs on disk still
   * match it (checked now, synchronously); undefined otherwise (then `get` decides).
   */
  peek(repo: string, key: string): Uint8Array | undefined {
    const hit = this.entries.get(repo)?.get(key);
    if (hit === undefined) return undefined;
    if (this.verified.has(hit)) return hit.bytes;
    if (!this.settled(hit.stamp) || hit.stamp.paths.length > this.maxSyncPaths) return undefined;
    // the memo of this run is forgotten at the next microtask, like `verified`
    if (this.verified.size === 0 && this.seen.size === 0) queueMicrotask(this.forgetVerified);
    const before = this.seen.size;
    const holds = stampHoldsSync(hit.stamp, this.seen);
    this.syncStats += this.seen.size - before;
    if (!holds) return undefined;
    this.verified.add(hit);
    return hit.bytes;
  }

  /** Forgets every advertisement of a repository (after a ref update). */
  drop(repo: string): void {
    // requests from now on start a new run instead of waiting behind one that began before the update
    const prefix = slotKey(repo, '');
    for (const [key, slot] of [...this.slots]) {
      if (!key.startsWith(prefix)) continue;
      slot.current.dropped = true;
      this.slots.delete(key);
      // requests queued behind the dropped run get a run of their own, starting now
      if (slot.next !== undefined) {
        this.slots.set(key, { current: slot.next, next: undefined });
        slot.next.start();
      }
    }
    const keys = this.entries.get(repo);
    if (keys === undefined) return;
    this.size -= keys.size;
    this.entries.delete(repo);
  }

  /** Forgets every advertisement of every repository (after losing track of ref updates). */
  clear(): void {
    const repos = new Set(this.entries.keys());
    for (const key of this.slots.keys()) repos.add(key.slice(0, key.indexOf('\0')));
    for (const repo of repos) this.drop(repo);
  }

  private settled(stamp: RefsStamp): boolean {
    return stamp.newestMs < stamp.takenAt - (stamp.fine ? this.settleMs : this.coarseSettleMs);
  }

  private revalidate(
    repo: string,
    key: string,
    gitDir: () => Promise<string>,
    load: () => Promise<Uint8Array>,
    keep: ((bytes: Uint8Array) => boolean) | undefined,
  ): Promise<Uint8Array> {
    const full = slotKey(repo, key);
    const slot = this.slots.get(full);
    if (slot !== undefined) {
      slot.next ??= this.makeRun(repo, key, full, gitDir, load, keep);
      return slot.next.promise;
    }
    const run = this.makeRun(repo, key, full, gitDir, load, keep);
    this.slots.set(full, { current: run, next: undefined });
    run.start();
    return run.promise;
  }

  private makeRun(
    repo: string,
    key: string,
    full: string,
    gitDir: () => Promise<string>,
    load: () => Promise<Uint8Array>,
    keep: ((bytes: Uint8Array) => boolean) | undefined,
  ): Run {
    let resolve!: (bytes: Uint8Array) => void;
    let reject!: (error: unknown) => void;
    const run: Run = {
      promise: new Promise<Uint8Array>((res, rej) => {
        resolve = res;
        reject = rej;
      }),
      dropped: false,
      start: () => {
        this.check(repo, key, run, gitDir, load, keep)
          .then(resolve, reject)
          .finally(() => {
            const slot = this.slots.get(full);
            if (slot?.current !== run) return;
            if (slot.next === undefined) {
              this.slots.delete(full);
              return;
            }
            slot.current = slot.next;
            slot.next = undefined;
            slot.current.start();
          });
      },
    };
    // a queued run nobody awaits any more must not report an unhandled rejection
    run.promise.catch(() => {});
    return run;
  }

  private async check(
    repo: string,
    key: string,
    run: Run,
    gitDir: () => Promise<string>,
    load: () => Promise<Uint8Array>,
    keep: ((bytes: Uint8Array) => boolean) | undefined,
  ): Promise<Uint8Array> {
    const stamp = await readRefsStamp(await gitDir());
    const current = this.entries.get(repo)?.get(key);
    if (current !== undefined && this.settled(current.stamp) && sameStamp(current.stamp, stamp)) return current.bytes;
    const bytes = await load();
    if (!run.dropped && (keep === undefined || keep(bytes))) this.store(repo, key, { bytes, stamp });
    return bytes;
  }

  private store(repo: string, key: string, entry: Entry): void {
    let keys = this.entries.get(repo);
    if (keys?.has(key) !== true && this.size >= this.maxEntries) {
      this.entries.clear();
      this.size = 0;
      keys = undefined;
    }
    if (keys === undefined) {
      keys = new Map();
      this.entries.set(repo, keys);
    }
    if (!keys.has(key)) this.size++;
    keys.set(key, entry);
  }
}

/** The cache key of a service's advertisement in one protocol version (no string is built for v0). */
export function adKey(service: string, protocol: string | null): string {
  return protocol === null ? service : `${service}\0${protocol}`;
}

function slotKey(repo: string, key: string): string {
  return `${repo}\0${key}`;
}
