/**
 * Files that a writer which died (a crash, a killed worker, a full disk) leaves in a repository,
 * and their removal once they are old enough that no live writer can own them.
 *
 *   <gitDir>/refs/**\/<name>.lock, HEAD.lock, packed-refs.lock
 *                                   git's ref locks (and FsRefStore's); one left behind refuses
 *                                   every later update of its ref ("cannot lock ref")
 *   <gitDir>/refs/**\/.tmp-<name>   FsRefStore's temporary file of an atomic update
 *   <gitDir>/objects/pack/tmp_pack_*, tmp_idx_*, tmp_obj_*
 *                                   an incoming pack and its index being written (git's
 *                                   index-pack and the pack package's FsObjectStore), and the
 *                                   store's temporary files of packs it writes whole
 *   <gitDir>/objects/tmp_obj_*, objects/<xx>/tmp_obj_*
 *                                   loose objects being written (git's and the store's)
 *
 *   <gitDir>/objects/tmp_objdir-incoming-*
 *                                   a push's quarantine (git's receive-pack and the pack
 *                                   package's), removed whole once nothing inside it is recent
 *
 * git itself leaves all of these: a lock until someone removes it by hand, temporary files until
 * `git gc` prunes them (after two weeks). A live writer keeps a ref lock for moments and touches
 * a temporary pack as data arrives, so anything older than the bound (default 10 minutes) is
 * taken as abandoned. A quarantine directory's own mtime does not move while a push writes deep
 * inside it, so it is judged by the newest mtime of anything it holds.
 */
import { errorCode, type GitFs, joinPath } from './fs.js';

/** The default age after which a lock or a temporary file counts as abandoned. */
export const DEFAULT_STALE_AFTER_MS = 10 * 60 * 1000;

/** The prefix of FsRefStore's temporary ref files (a component git never reads as a ref). */
export const REF_TEMP_PREFIX = '.tmp-';

export interface StaleFileOptions {
  /** Age (by mtime) from which a file counts as abandoned; default `DEFAULT_STALE_AFTER_MS`. */
  staleAfterMs?: number;
  /** The clock (milliseconds since the epoch); default `Date.now`. */
  now?: () => number;
}

export interface StaleFileReport {
  /** Removed files, relative to the git directory. */
  removed: string[];
  /** Files that were stale but could not be removed (or directories that could not be read). */
  failed: { path: string; error: unknown }[];
}

const OBJECT_TEMP = /^tmp_(?:pack|idx|obj)_/;
const QUARANTINE = /^tmp_objdir-incoming-/;
const LOOSE_DIR = /^[0-9a-f]{2}$/;

/**
 * Removes the stale locks and temporary files of the repository at `gitDir` (see the module
 * comment), and the ref directories that removing them leaves empty (sparing `refs/<kind>`).
 * Never throws for one file: what could not be removed is reported.
 */
export async function removeStaleFiles(
  fs: GitFs,
  gitDir: string,
  options: StaleFileOptions = {},
): Promise<StaleFileReport> {
  const bound = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  const now = options.now ?? Date.now;
  const report: StaleFileReport = { removed: [], failed: [] };

  /** Removes `relative` when it is a file older than the bound; whether it did. */
  const removeIfStale = async (relative: string): Promise<boolean> => {
    const path = joinPath(gitDir, relative);
    try {
      const st = await fs.stat(path);
      if (!st?.isFile() || now() - st.mtimeMs <= bound) return false;
      await fs.remove(path);
      report.removed.push(relative);
      return true;
    } catch (error) {
      report.failed.push({ path: relative, error });
      return false;
    }
  };
  const list = async (relative: string) => {
    try {
      return await fs.listEntries(joinPath(gitDir, relative));
    } catch (error) {
      if (errorCode(error) !== 'ENOTDIR') report.failed.push({ path: relative, error });
      return [];
    }
  };

  for (const name of ['HEAD.lock', 'packed-refs.lock']) await removeIfStale(name);

  /** Walks a refs directory; whether it is empty afterwards (then removed, below `refs/<kind>`). */
  const walkRefs = async (relative: string, depth: number): Promise<boolean> => {
    let left = 0;
    for (const entry of await list(relative)) {
      const child = `${relative}/${entry.name}`;
      const isTemp = entry.name.endsWith('.lock') || entry.name.startsWith(REF_TEMP_PREFIX);
      const isDir =
        entry.kind === 'dir' ||
        (entry.kind === 'unknown' && (await fs.stat(joinPath(gitDir, child)).catch(() => undefined))?.isDirectory());
      if (isDir) {
        if (!(await walkRefs(child, depth + 1))) left++;
      } else if (!(isTemp && (await removeIfStale(child)))) {
        left++;
      }
    }
    if (left > 0 || depth < 2) return false;
    return fs.removeEmptyDir(joinPath(gitDir, relative));
  };
  await walkRefs('refs', 0);

  for (const entry of await list('objects/pack')) {
    if (OBJECT_TEMP.test(entry.name)) await removeIfStale(`objects/pack/${entry.name}`);
  }
  /** The newest mtime of `path` and of everything below it. */
  const newestMtime = async (path: string): Promise<number> => {
    const st = await fs.stat(path);
    if (!st) return 0;
    let newest = st.mtimeMs;
    if (st.isDirectory()) {
      for (const name of await fs.list(path)) newest = Math.max(newest, await newestMtime(joinPath(path, name)));
    }
    return newest;
  };
  const removeQuarantineIfStale = async (relative: string) => {
    const path = joinPath(gitDir, relative);
    try {
      if (now() - (await newestMtime(path)) <= bound) return;
      await fs.removeTree(path);
      report.removed.push(relative);
    } catch (error) {
      report.failed.push({ path: relative, error });
    }
  };

  for (const entry of await list('objects')) {
    if (QUARANTINE.test(entry.name) && entry.kind !== 'file') {
      await removeQuarantineIfStale(`objects/${entry.name}`);
    } else if (OBJECT_TEMP.test(entry.name)) {
      await removeIfStale(`objects/${entry.name}`);
    } else if (LOOSE_DIR.test(entry.name) && entry.kind !== 'file') {
      for (const inner of await list(`objects/${entry.name}`)) {
        if (OBJECT_TEMP.test(inner.name)) await removeIfStale(`objects/${entry.name}/${inner.name}`);
      }
    }
  }
  return report;
}
