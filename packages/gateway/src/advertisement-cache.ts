/**
 * Ref advertisements kept per (repository, service, protocol). An entry is trusted for
 * `revalidateMs`, then checked against a fingerprint of the refs on disk (real git may change the
 * repository directly) and reloaded only when that changed; our own ref updates drop it at once.
 * Concurrent requests for one key share one revalidation.
 *
 * An entry that is read in the second half of its trusted time is revalidated in the background
 * (refresh-ahead), so a repository under steady load keeps answering from memory instead of
 * making every request wait for the check when the entry runs out; an entry is still never
 * served longer than `revalidateMs` after its last check.
 */
import { refsFingerprint } from './repository-root.js';

interface Entry {
  bytes: Uint8Array;
  fingerprint: string;
  checkedAt: number;
  gitDir: () => Promise<string>;
  load: () => Promise<Uint8Array>;
}

export class AdvertisementCache {
  /** repository -> key -> entry */
  private readonly entries = new Map<string, Map<string, Entry>>();
  /** Revalidations in flight; a drop marks its repository's as stale (they store nothing). */
  private readonly pending = new Map<string, { promise: Promise<Uint8Array>; dropped: boolean }>();
  private size = 0;

  constructor(
    readonly revalidateMs = 1000,
    readonly maxEntries = 1000,
  ) {}

  get(repo: string, key: string, gitDir: () => Promise<string>, load: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const hit = this.entries.get(repo)?.get(key);
    if (hit !== undefined && Date.now() - hit.checkedAt < this.revalidateMs) return Promise.resolve(hit.bytes);
    return this.revalidate(repo, key, gitDir, load);
  }

  /**
   * The advertisement if it is cached and still within `revalidateMs`, without waiting for any
   * I/O (it may start a background revalidation).
   */
  peek(repo: string, key: string): Uint8Array | undefined {
    const hit = this.entries.get(repo)?.get(key);
    if (hit === undefined) return undefined;
    const age = Date.now() - hit.checkedAt;
    if (age >= this.revalidateMs) return undefined;
    if (age * 2 >= this.revalidateMs) this.refreshAhead(repo, key, hit);
    return hit.bytes;
  }

  /** Forgets every advertisement of a repository (after a ref update). */
  drop(repo: string): void {
    // requests from now on start a new load instead of joining one that began before the update
    const prefix = pendingKey(repo, '');
    for (const [key, run] of this.pending) {
      if (!key.startsWith(prefix)) continue;
      run.dropped = true;
      this.pending.delete(key);
    }
    const keys = this.entries.get(repo);
    if (keys === undefined) return;
    this.size -= keys.size;
    this.entries.delete(repo);
  }

  private refreshAhead(repo: string, key: string, entry: Entry): void {
    if (this.pending.has(pendingKey(repo, key))) return;
    this.revalidate(repo, key, entry.gitDir, entry.load).catch(() => {
      // the request that finds the entry expired tries again and reports the failure
    });
  }

  private revalidate(
    repo: string,
    key: string,
    gitDir: () => Promise<string>,
    load: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const full = pendingKey(repo, key);
    const running = this.pending.get(full);
    if (running !== undefined) return running.promise;
    const run = { promise: undefined as unknown as Promise<Uint8Array>, dropped: false };
    run.promise = (async () => {
      const now = Date.now();
      const fingerprint = await refsFingerprint(await gitDir());
      const current = this.entries.get(repo)?.get(key);
      if (current !== undefined && current.fingerprint === fingerprint) {
        if (!run.dropped) current.checkedAt = now;
        return current.bytes;
      }
      const bytes = await load();
      if (!run.dropped) this.store(repo, key, { bytes, fingerprint, checkedAt: now, gitDir, load });
      return bytes;
    })().finally(() => {
      if (this.pending.get(full) === run) this.pending.delete(full);
    });
    this.pending.set(full, run);
    return run.promise;
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

/** The cache key of a service's advertisement in one protocol (no string is built for v0). */
export function adKey(service: string, protocol: string | null): string {
  return protocol === null ? service : `${service}\0${protocol}`;
}

function pendingKey(repo: string, key: string): string {
  return `${repo}\0${key}`;
}
