/**
 * A clone's first view: HEAD's commit and every tree under it, taken from the pack as the import
 * resolves its objects, so that an app lists HEAD's files (`listFiles(view, 'HEAD')`) while the
 * clone still checks, indexes and writes the pack, and writes its refs and config.
 *
 *   const cloning = remote(url).clone(fs, dir, {
 *     filter: 'blob:none',
 *     onHeadView: (view) => void listFiles(view, 'HEAD').then(show),
 *   });
 *   const repository = await cloning; // the clone, complete
 *
 * The remote's listing names HEAD's commit before any pack comes; from then on each object the
 * import resolves is looked at once: HEAD's commit names the root tree, each wanted tree names
 * its subtrees. Trees that come before anything wants them (a delta resolved in the import's
 * second pass may come before its parent tree) are kept up to a budget; nothing else is copied. Once nothing wanted is missing, the view is handed over: its objects are in memory
 * (a `MemoryObjectStore`, blobs absent), its refs are the remote's (`MemoryRefStore`, HEAD
 * pointing at the remote's HEAD branch).
 *
 * When the pack never completes the view early (a `tree:0` clone has no trees, a budget
 * overrun, a remote whose HEAD is detached), the clone's own repository is the view, handed over
 * once the clone is done (`early: false`), so the callback is called once for every clone of a
 * repository with a HEAD.
 */
import type { ObjectId, ObjectStore, ObjectType } from '@gitport/pack';
import { parseCommitLinks } from '@gitport/pack/internal/commit';
import { MemoryObjectStore } from '@gitport/pack/internal/store';
import { parseTree } from '@gitport/pack/internal/tree';
import type { AdvertisedRef, RefStore } from '@gitport/protocol';
import { MemoryRefStore } from '@gitport/protocol/internal/ref-store';
import { GitportError } from './errors.js';

/**
 * The file paths under `commit`'s tree, read from `objects` (a partial clone's fetch what it
 * lacks), as listFiles walks them: its own small walk, so that the remotes without the early view
 * carry no more than this.
 */
async function readPaths(objects: ObjectStore, commit: ObjectId): Promise<string[]> {
  const read = async (oid: ObjectId, type: ObjectType) => {
    const object = await objects.read(oid);
    if (object?.type !== type) throw new GitportError('OBJECT_NOT_FOUND', `${type} ${oid} is missing`);
    return object.data;
  };
  const out: string[] = [];
  const walk = async (tree: ObjectId, prefix: string): Promise<void> => {
    for (const entry of parseTree(await read(tree, 'tree'))) {
      if (entry.type === 'tree') await walk(entry.oid, `${prefix}${entry.name}/`);
      else if (entry.type === 'blob') out.push(prefix + entry.name);
    }
  };
  await walk(parseCommitLinks(await read(commit, 'commit')).tree, '');
  return out;
}

/** `onHeadView` for the remotes without the early view: the finished clone is the view. */
export function finishedView(deliver: (view: HeadView) => void): Pick<HeadViewCollector, 'finish'> {
  return {
    async finish(repository) {
      const head = await repository.refs.resolve('HEAD');
      if (head === undefined) return;
      const paths = await readPaths(repository.objects, head);
      deliver({ objects: repository.objects, refs: repository.refs, head, paths, early: false });
    },
  };
}

/** The file paths under `commit`'s tree, from objects at hand (as listFiles walks them). */
function pathsOf(objects: MemoryObjectStore, commit: ObjectId): string[] {
  const out: string[] = [];
  const walk = (tree: ObjectId, prefix: string) => {
    for (const entry of parseTree(objects.readSync(tree)!.data)) {
      if (entry.type === 'tree') walk(entry.oid, `${prefix}${entry.name}/`);
      else if (entry.type === 'blob') out.push(prefix + entry.name);
    }
  };
  walk(parseCommitLinks(objects.readSync(commit)!.data).tree, '');
  return out;
}

/** What `clone`'s `onHeadView` is given. */
export interface HeadView {
  /** HEAD's commit and trees (early), or the clone's whole store (once it is done). */
  readonly objects: ObjectStore;
  /** Early: the remote's refs as listed, HEAD pointing at its branch; then: the clone's refs. */
  readonly refs: RefStore;
  /** HEAD's commit. */
  readonly head: ObjectId;
  /**
   * Every file path (blobs and links) of HEAD's tree, sorted as git lists them: what
   * `listFiles(view, 'HEAD')` answers, at hand without waiting for the import to let it run.
   */
  readonly paths: readonly string[];
  /** true: taken from the pack in memory while the clone goes on; false: the finished clone. */
  readonly early: boolean;
}

/** Bytes of trees kept ahead of being wanted (see the module header). */
const SPARE_BUDGET = 16 * 2 ** 20;

/** The hooks a clone gives the fetch, and what it calls once done. */
export interface HeadViewCollector {
  onRefs(refs: readonly AdvertisedRef[], head: string | undefined): void;
  onObject(oid: ObjectId, type: ObjectType, data: Uint8Array): void;
  /** After the clone: hands over `repository` as the view unless the pack already gave one. */
  finish(repository: { objects: ObjectStore; refs: RefStore }): Promise<void>;
}

/** Collects HEAD's commit and trees from a clone's pack for `deliver` (see the module header). */
export function headViewCollector(deliver: (view: HeadView) => void, budget = SPARE_BUDGET): HeadViewCollector {
  let delivered = false;
  let head: ObjectId | undefined;
  let branch: string | undefined;
  let refList: { name: string; oid: ObjectId }[] = [];
  /** Collecting: HEAD's commit is known and the view is not handed over yet. */
  let active = false;
  const view = new MemoryObjectStore();
  /** Wanted ids not received yet. */
  const missing = new Set<ObjectId>();
  const spare = new Map<ObjectId, { type: ObjectType; data: Uint8Array }>();
  let spareBytes = 0;

  /** Hands the view over once; what the callback throws is reported, the clone goes on. */
  const hand = (given: HeadView) => {
    delivered = true;
    active = false;
    spare.clear();
    try {
      deliver(given);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  };

  /** Takes a wanted object into the view and wants what it names. */
  const take = (oid: ObjectId, type: ObjectType, data: Uint8Array) => {
    missing.delete(oid);
    void view.writeHashed([{ oid, type, data }]);
    if (type === 'commit') want(parseCommitLinks(data).tree);
    else if (type === 'tree') {
      for (const entry of parseTree(data)) if (entry.type === 'tree') want(entry.oid);
    }
  };

  const want = (oid: ObjectId) => {
    if (missing.has(oid) || view.readSync(oid) !== undefined) return;
    const kept = spare.get(oid);
    if (kept === undefined) {
      missing.add(oid);
      return;
    }
    spare.delete(oid);
    spareBytes -= kept.data.length;
    take(oid, kept.type, kept.data);
  };

  return {
    onRefs(refs, target) {
      refList = refs.filter((r) => r.name !== 'HEAD' && !r.name.endsWith('^{}'));
      const tip = target === undefined ? undefined : refList.find((r) => r.name === target);
      if (tip === undefined) return;
      branch = target;
      head = tip.oid;
      missing.add(head);
      active = true;
    },
    onObject(oid, type, data) {
      if (!active) return;
      if (missing.has(oid)) {
        // the view keeps its own copy: `data` is lent
        take(oid, type, data.slice());
        if (missing.size === 0) {
          const refs = new MemoryRefStore({ refs: refList, ...(branch !== undefined ? { head: branch } : {}) });
          hand({ objects: view, refs, head: head!, paths: pathsOf(view, head!), early: true });
        }
      } else if (type === 'tree' && spareBytes + data.length <= budget) {
        // (no other commit than HEAD's is ever wanted: only trees are kept ahead)
        spare.set(oid, { type, data: data.slice() });
        spareBytes += data.length;
      }
    },
    async finish(repository) {
      active = false;
      spare.clear();
      if (delivered) return;
      const resolved = await repository.refs.resolve('HEAD');
      if (resolved === undefined) return;
      const paths = await readPaths(repository.objects, resolved);
      hand({ objects: repository.objects, refs: repository.refs, head: resolved, paths, early: false });
    },
  };
}
