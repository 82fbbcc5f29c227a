/**
 * The few calls an app needs to make history without a working tree: `commit` writes files (or
 * removes them) on a branch as one new commit, `readFile` reads a file at a ref, `listFiles`
 * lists the paths of a ref's tree. They work on any repository (bare or not, on any fs),
 * building blob, tree and commit objects with `@gitport/pack`'s serializers, and move the branch
 * with a compare-and-swap, so a concurrent writer (a push, another commit) is never overwritten.
 *
 *   const oid = await commit(repo, {
 *     message: 'Add notes',
 *     author: { name: 'Ada', email: 'ada@example.com' },
 *     files: { 'notes/today.md': '# Today\n', 'old.txt': null },
 *   });
 *   const text = new TextDecoder().decode(await readFile(repo, 'main', 'notes/today.md'));
 *
 * In a non-bare repository, a commit on the checked-out branch also writes (or removes) the
 * named files in the working tree and updates `.git/index` for them, so git and isomorphic-git
 * see the tree clean; other files, and their index entries, are left alone. A commit on another
 * branch touches neither.
 */
import type { ObjectId, ObjectStore, Person, TreeEntry } from '@gitport/pack';
import { parseCommit, serializeCommit } from '@gitport/pack/internal/commit';
import { parseTagTarget } from '@gitport/pack/internal/tag';
import { parseTree, serializeTree } from '@gitport/pack/internal/tree';
import type { RefStore } from '@gitport/protocol';
import { updateWorkTree } from './checkout.js';
import { GitportError, toGitportError } from './errors.js';
import type { GitFs } from './fs.js';
import { isPromisorStore, type LazyReadOptions, localObjects } from './promisor.js';

/** What `commit` and `readFile` need of a repository (a `GitRepository` fits). */
export interface RepositoryLike {
  readonly objects: ObjectStore;
  readonly refs: RefStore;
}

export interface Signature {
  name: string;
  email: string;
  /** Seconds since the epoch; default now. */
  timestamp?: number;
  /** Minutes east of UTC (`+0100` is 60); default 0. */
  timezoneOffset?: number;
}

export interface CommitOptions {
  message: string;
  author: Signature;
  /** Default: the author. */
  committer?: Signature;
  /** The branch to commit on (`main` or `refs/heads/main`); default HEAD's branch. */
  branch?: string;
  /**
   * Path (`/`-separated, relative to the root) to new content (a string is UTF-8), or `null` to
   * remove the file. Paths not named keep their content from the branch's last commit.
   */
  files: Readonly<Record<string, string | Uint8Array | null>>;
  /** Paths among `files` to record as executable (mode 100755). */
  executable?: readonly string[];
}

export interface CommitResult {
  oid: ObjectId;
  /** The branch's full name. */
  ref: string;
  /** The commit it was on; undefined for the branch's first commit. */
  parent: ObjectId | undefined;
}

const encoder = new TextEncoder();

/** Creates one commit on a branch; rejects with COMMIT_CONFLICT when the branch moved meanwhile. */
export async function commit(repository: RepositoryLike, options: CommitOptions): Promise<CommitResult> {
  try {
    const ref = await branchRef(repository, options.branch);
    const parent = await repository.refs.resolve(ref);
    const baseTree = parent === undefined ? undefined : await treeOf(repository.objects, parent);
    const changes = new Map<string, Change>();
    const executable = new Set(options.executable ?? []);
    for (const [path, content] of Object.entries(options.files)) {
      const parts = splitPath(path);
      changes.set(parts.join('/'), {
        parts,
        content: typeof content === 'string' ? encoder.encode(content) : content,
        executable: executable.has(path),
      });
    }
    checkNoFileUnderFile(changes);
    const tree =
      (await applyChanges(repository.objects, baseTree, [...changes.values()], 0)) ??
      (await writeTree(repository.objects, []));
    const author = person(options.author);
    const data = serializeCommit({
      tree,
      parents: parent === undefined ? [] : [parent],
      author,
      committer: options.committer ? person(options.committer) : author,
      extraHeaders: [],
      message: options.message.endsWith('\n') ? options.message : `${options.message}\n`,
    });
    const oid = await repository.objects.write('commit', data);
    const [result] = await repository.refs.update([{ name: ref, old: parent ?? null, new: oid }]);
    if (result?.status !== 'ok') {
      const message = result?.status === 'rejected' ? result.message : 'not updated';
      throw new GitportError('COMMIT_CONFLICT', `${ref} was not updated: ${message}`, { data: { oid, ref } });
    }
    const work = repository as Partial<{ fs: GitFs; gitDir: string; bare: boolean }>;
    if (work.bare === false && work.fs && work.gitDir) {
      const head = await repository.refs.read('HEAD');
      if (head.kind === 'symbolic' && head.target === ref) {
        await updateWorkTree(repository as Parameters<typeof updateWorkTree>[0], oid, [...changes.keys()]);
      }
    }
    return { oid, ref, parent };
  } catch (error) {
    throw toGitportError(error);
  }
}

/**
 * The content of `path` in the tree of `ref` (a branch, tag, full ref name or commit id);
 * undefined when the path is not a file there. Rejects with REF_NOT_FOUND for an unknown ref.
 *
 * In a partial clone opened with its promisor remote, a missing tree or blob is fetched (one
 * request per missing object on the path); `{ lazy: false }` reads only what is here and
 * rejects with OBJECT_MISSING for an object the clone left out.
 */
export async function readFile(
  repository: RepositoryLike,
  ref: string,
  path: string,
  options: LazyReadOptions = {},
): Promise<Uint8Array | undefined> {
  try {
    const objects = options.lazy === false ? localObjects(repository.objects) : repository.objects;
    const missing = (kind: string, oid: ObjectId) =>
      options.lazy === false && isPromisorStore(repository.objects)
        ? new GitportError('OBJECT_MISSING', `${kind} ${oid} (${path}) is not in this partial clone`, {
            data: { oid },
          })
        : new GitportError('OBJECT_NOT_FOUND', `${kind} ${oid} is missing`);
    let tree: ObjectId | undefined = await treeOf(objects, await resolveCommitish(repository, ref));
    const parts = splitPath(path);
    for (let i = 0; i < parts.length; i++) {
      const treeObject = await objects.read(tree!);
      if (treeObject?.type !== 'tree') throw missing('tree', tree!);
      const entries = parseTree(treeObject.data);
      const entry = entries.find((e) => e.name === parts[i]);
      if (!entry) return undefined;
      const last = i === parts.length - 1;
      if (last) {
        if (entry.type !== 'blob') return undefined;
        const blob = await objects.read(entry.oid);
        if (blob?.type !== 'blob') throw missing('blob', entry.oid);
        return blob.data;
      }
      if (entry.type !== 'tree') return undefined;
      tree = entry.oid;
    }
    return undefined;
  } catch (error) {
    throw toGitportError(error);
  }
}

/** Every file path (blobs and links) in the tree of `ref`, sorted as git lists them. */
export async function listFiles(repository: RepositoryLike, ref: string): Promise<string[]> {
  try {
    const out: string[] = [];
    const walk = async (tree: ObjectId, prefix: string): Promise<void> => {
      for (const entry of await readTree(repository.objects, tree)) {
        if (entry.type === 'tree') await walk(entry.oid, `${prefix}${entry.name}/`);
        else if (entry.type === 'blob') out.push(prefix + entry.name);
      }
    };
    await walk(await treeOf(repository.objects, await resolveCommitish(repository, ref)), '');
    return out;
  } catch (error) {
    throw toGitportError(error);
  }
}

interface Change {
  parts: string[];
  content: Uint8Array | null;
  executable: boolean;
}

/** `path` split into names; refuses what git would refuse to have in a tree. */
function splitPath(path: string): string[] {
  const parts = path.split('/');
  for (const part of parts) {
    if (part === '' || part === '.' || part === '..' || part.toLowerCase() === '.git' || part.includes('\0')) {
      throw new GitportError('COMMIT_BAD_PATH', `bad file path ${JSON.stringify(path)}`);
    }
  }
  return parts;
}

/** A path given as a file and also as a directory of another given path. */
function checkNoFileUnderFile(changes: Map<string, Change>): void {
  for (const [path, change] of changes) {
    if (change.content === null) continue;
    for (let i = 1; i < change.parts.length; i++) {
      const parent = change.parts.slice(0, i).join('/');
      if (changes.get(parent)?.content) {
        throw new GitportError(
          'COMMIT_BAD_PATH',
          `${JSON.stringify(path)} is under the file ${JSON.stringify(parent)}`,
        );
      }
    }
  }
}

/** The tree at `depth` with `changes` applied; undefined when it ends up empty. */
async function applyChanges(
  objects: ObjectStore,
  base: ObjectId | undefined,
  changes: readonly Change[],
  depth: number,
): Promise<ObjectId | undefined> {
  const entries = new Map<string, TreeEntry>();
  if (base !== undefined) for (const entry of await readTree(objects, base)) entries.set(entry.name, entry);
  const below = new Map<string, Change[]>();
  for (const change of changes) {
    const name = change.parts[depth]!;
    if (change.parts.length === depth + 1) {
      if (change.content === null) {
        if (entries.get(name)?.type !== 'tree') entries.delete(name);
        continue;
      }
      const oid = await objects.write('blob', change.content);
      entries.set(name, { name, oid, type: 'blob', mode: change.executable ? '100755' : '100644' });
    } else {
      let group = below.get(name);
      if (!group) below.set(name, (group = []));
      group.push(change);
    }
  }
  for (const [name, group] of below) {
    const existing = entries.get(name);
    // a directory replaces a file of the same name only when something is written under it
    if (existing && existing.type !== 'tree' && group.every((c) => c.content === null)) continue;
    const subtree = await applyChanges(objects, existing?.type === 'tree' ? existing.oid : undefined, group, depth + 1);
    if (subtree === undefined) entries.delete(name);
    else entries.set(name, { name, oid: subtree, type: 'tree', mode: '40000' });
  }
  if (entries.size === 0) return undefined;
  return writeTree(objects, [...entries.values()]);
}

function writeTree(objects: ObjectStore, entries: readonly TreeEntry[]): Promise<ObjectId> {
  return objects.write('tree', serializeTree(entries));
}

async function readTree(objects: ObjectStore, oid: ObjectId): Promise<TreeEntry[]> {
  const object = await objects.read(oid);
  if (object?.type !== 'tree') throw new GitportError('OBJECT_NOT_FOUND', `tree ${oid} is missing`);
  return parseTree(object.data);
}

async function treeOf(objects: ObjectStore, commitOid: ObjectId): Promise<ObjectId> {
  const object = await objects.read(commitOid);
  if (object?.type !== 'commit') throw new GitportError('OBJECT_NOT_FOUND', `commit ${commitOid} is missing`);
  return parseCommit(object.data).tree;
}

/** The full branch name to commit on: `branch`, or HEAD's target. */
async function branchRef(repository: RepositoryLike, branch: string | undefined): Promise<string> {
  if (branch !== undefined) return branch.startsWith('refs/') ? branch : `refs/heads/${branch}`;
  const head = await repository.refs.read('HEAD');
  if (head.kind !== 'symbolic') {
    throw new GitportError('REF_DETACHED', 'HEAD is not on a branch: name the branch to commit on');
  }
  return head.target;
}

/** A commit id from a ref name, short branch or tag name, or id, peeling annotated tags. */
async function resolveCommitish(repository: RepositoryLike, ref: string): Promise<ObjectId> {
  let oid: ObjectId | undefined;
  if (/^[0-9a-f]{40}$/.test(ref)) oid = ref;
  for (const name of [ref, `refs/heads/${ref}`, `refs/tags/${ref}`]) {
    if (oid !== undefined) break;
    oid = await repository.refs.resolve(name).catch(() => undefined);
  }
  if (oid === undefined) throw new GitportError('REF_NOT_FOUND', `no ref ${JSON.stringify(ref)}`);
  for (let depth = 0; depth < 10; depth++) {
    const object = await repository.objects.read(oid);
    if (object?.type !== 'tag') return oid;
    oid = parseTagTarget(object.data);
  }
  throw new GitportError('REF_NOT_FOUND', `${ref} is a chain of tags too long to follow`);
}

function person(signature: Signature): Person {
  const offset = signature.timezoneOffset ?? 0;
  const abs = Math.abs(offset);
  const timezone = `${offset < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  return {
    name: signature.name,
    email: signature.email,
    timestamp: signature.timestamp ?? Math.floor(Date.now() / 1000),
    timezone,
  };
}
