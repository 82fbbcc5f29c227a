/**
 * The repositories under a root directory: `<root>/<name>.git`, bare, in git's layout. Names are
 * validated before they get here; this module additionally resolves symlinks and refuses any
 * repository whose real path is not a direct child of the root's real path.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isValidRepoName } from '../repo-name.js';

export class RepositoryRoot {
  private realRoot: string | undefined;
  private readonly known = new Map<string, { dir: string | undefined; checkedAt: number }>();
  private readonly pending = new Map<string, Promise<string | undefined>>();

  constructor(
    readonly root: string,
    /** How long a lookup result is trusted, in ms. */
    readonly revalidateMs = 1000,
  ) {}

  /** The repository's directory, or undefined when it is not a bare repository inside the root. */
  async resolve(name: string): Promise<string | undefined> {
    if (!isValidRepoName(name)) return undefined;
    const now = Date.now();
    const hit = this.known.get(name);
    if (hit !== undefined && now - hit.checkedAt < this.revalidateMs) return hit.dir;
    // one lookup at a time per name: a burst of requests shares it
    let pending = this.pending.get(name);
    if (pending === undefined) {
      pending = this.lookup(name).then((dir) => {
        this.pending.delete(name);
        if (this.known.size > 10_000) this.known.clear();
        this.known.set(name, { dir, checkedAt: Date.now() });
        return dir;
      });
      this.pending.set(name, pending);
    }
    return pending;
  }

  /** Forgets cached lookups (after creating or deleting a repository). */
  forget(name?: string): void {
    if (name === undefined) this.known.clear();
    else this.known.delete(name);
  }

  private async lookup(name: string): Promise<string | undefined> {
    try {
      this.realRoot ??= await realpath(this.root);
      const dir = join(this.realRoot, `${name}.git`);
      const real = await realpath(dir);
      if (dirname(real) !== this.realRoot || basename(real) !== `${name}.git`) return undefined;
      const [head, objects, refs] = await Promise.all([
        stat(join(real, 'HEAD')),
        stat(join(real, 'objects')),
        stat(join(real, 'refs')),
      ]);
      if (!head.isFile() || !objects.isDirectory() || !refs.isDirectory()) return undefined;
      return real;
    } catch {
      return undefined;
    }
  }

  /** Names of the repositories directly under the root. */
  async list(): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.root);
    } catch {
      return [];
    }
    const names: string[] = [];
    for (const entry of entries.sort()) {
      if (!entry.endsWith('.git')) continue;
      const name = entry.slice(0, -4);
      if ((await this.resolve(name)) !== undefined) names.push(name);
    }
    return names;
  }
}

/**
 * A cheap fingerprint of a repository's refs: HEAD, packed-refs and every directory under refs/
 * (git updates a loose ref by renaming `<ref>.lock` into place, which changes its directory's
 * mtime), so a change made by real git directly on disk changes the fingerprint.
 */
export async function refsFingerprint(gitDir: string): Promise<string> {
  const parts: string[] = [];
  const add = async (path: string) => {
    try {
      const s = await stat(path, { bigint: true });
      parts.push(`${s.mtimeNs}:${s.size}:${s.ino}`);
      return s;
    } catch {
      parts.push('-');
      return undefined;
    }
  };
  await add(join(gitDir, 'HEAD'));
  await add(join(gitDir, 'packed-refs'));
  const walk = async (dir: string, depth: number): Promise<void> => {
    const s = await add(dir);
    if (s === undefined || depth > 8) return;
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name), depth + 1);
  };
  await walk(join(gitDir, 'refs'), 0);
  return parts.join('|');
}
