/**
 * Ref advertisements kept per (repository, service, protocol). An entry is trusted for
 * `revalidateMs`, then checked against a fingerprint of the refs on disk (real git may change the
 * repository directly) and reloaded only when that changed; our own ref updates drop it at once.
 * Concurrent requests for one key share one revalidation.
 */
import { refsFingerprint } from './repository-root.js';

interface Entry {
  bytes: Uint8Array;
  fingerprint: string;
  checkedAt: number;
}

export class AdvertisementCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Uint8Array>>();

  constructor(
    readonly revalidateMs = 1000,
    readonly maxEntries = 1000,
  ) {}

  get(repo: string, key: string, gitDir: () => Promise<string>, load: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const full = `${repo}\0${key}`;
    const hit = this.entries.get(full);
    if (hit !== undefined && Date.now() - hit.checkedAt < this.revalidateMs) return Promise.resolve(hit.bytes);
    let pending = this.pending.get(full);
    if (pending === undefined) {
      pending = (async () => {
        const now = Date.now();
        const fingerprint = await refsFingerprint(await gitDir());
        const current = this.entries.get(full);
        if (current !== undefined && current.fingerprint === fingerprint) {
          current.checkedAt = now;
          return current.bytes;
        }
        const bytes = await load();
        if (this.entries.size >= this.maxEntries) this.entries.clear();
        this.entries.set(full, { bytes, fingerprint, checkedAt: now });
        return bytes;
      })().finally(() => this.pending.delete(full));
      this.pending.set(full, pending);
    }
    return pending;
  }

  /** The advertisement if it is cached and still within `revalidateMs`, without any I/O. */
  peek(repo: string, key: string): Uint8Array | undefined {
    const hit = this.entries.get(`${repo}\0${key}`);
    return hit !== undefined && Date.now() - hit.checkedAt < this.revalidateMs ? hit.bytes : undefined;
  }

  /** Forgets every advertisement of a repository (after a ref update). */
  drop(repo: string): void {
    const prefix = `${repo}\0`;
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}
