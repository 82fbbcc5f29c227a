/**
 * The tree walk of a filtered pack (partial clone): which trees and blobs below the commits being
 * sent pass an `ObjectFilter`, with git's rules —
 *   - a commit's root tree is at depth 0, its entries at 1, and so on;
 *   - a tree met again at a smaller depth than before is walked again from there (`tree:<depth>`
 *     may keep at depth 1 what it left out at depth 3), and a blob left out at some depth is
 *     decided again only when met at a smaller one;
 *   - blob sizes are read (by header only) just when the filter needs them;
 *   - objects the receiver has (`excluded`) are neither sent nor walked.
 * `sparse:oid` needs path patterns this walk does not evaluate: it is refused (`FILTER_UNSUPPORTED`).
 */
import { PackError, throwIfAborted } from './errors.js';
import { bytesToHex, type ObjectId } from './object.js';
import { filterBlob, filterKinds, filterNeedsBlobSize, filterTree, type ObjectFilter } from './object-filter.js';
import type { OidSet } from './oid-set.js';
import type { ObjectStore } from './store.js';
import { readHeaderOf } from './stored-reads.js';
import { forEachTreeEntryRaw } from './tree.js';

/** A tree or blob the walk keeps, with git's name hash of its path (for delta search). */
export interface KeptObject {
  oid: ObjectId;
  type: 'tree' | 'blob';
  nameHash: number;
}

export interface FilteredTreeWalk {
  /** Walks the tree `root` (at depth 0) and reports each tree and blob the filter keeps, once. */
  walk(root: ObjectId, rootHash: number): Promise<void>;
  /** Reports an object a request names: sent whatever the filter says. */
  given(oid: ObjectId, type: 'tree' | 'blob'): void;
}

/** Throws `FILTER_UNSUPPORTED` for filters this walk cannot honour. */
export function assertFilterSupported(filter: ObjectFilter): void {
  if (filterKinds(filter).has('sparse:oid'))
    throw new PackError('FILTER_UNSUPPORTED', 'filter sparse:oid is not supported by this server');
}

/** git's pack name hash continued over `bytes[start..end]` (dir/name continues dir's state). */
function hashMore(h: number, bytes: Uint8Array, start: number, end: number, slash: boolean): number {
  if (slash) h = ((h >>> 2) + (0x2f << 24)) >>> 0;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    h = ((h >>> 2) + (c << 24)) >>> 0;
  }
  return h;
}

export function filteredTreeWalk(
  store: ObjectStore,
  filter: ObjectFilter,
  excluded: OidSet,
  onObject: (o: KeptObject) => void,
  signal?: AbortSignal,
): FilteredTreeWalk {
  assertFilterSupported(filter);
  const needsSize = filterNeedsBlobSize(filter);
  /**
   * Without `tree:<depth>` a verdict does not depend on depth, so each object is decided once:
   * the ids decided so far, starting with what the receiver has.
   */
  const settled = filterKinds(filter).has('tree') ? undefined : excluded.clone();
  /** Objects reported (sent). */
  const sent = new Set<ObjectId>();
  /** The smallest depth each tree was walked at, and each left-out blob was decided at. */
  const treeDepth = new Map<ObjectId, number>();
  const blobDepth = new Map<ObjectId, number>();
  const sizes = new Map<ObjectId, number>();
  const blobSize = async (oid: ObjectId): Promise<number> => {
    let size = sizes.get(oid);
    if (size !== undefined) return size;
    const header = await readHeaderOf(store, oid);
    if (!header) throw new PackError('OBJECT_NOT_FOUND', `blob ${oid} is missing`);
    size = header.size;
    sizes.set(oid, size);
    return size;
  };
  const visitBlob = async (oid: ObjectId, depth: number, hash: number): Promise<void> => {
    if (sent.has(oid) || excluded.has(oid)) return;
    const before = blobDepth.get(oid);
    if (before !== undefined && before <= depth) return;
    const size = needsSize ? await blobSize(oid) : 0;
    if (filterBlob(filter, depth, () => size)) {
      sent.add(oid);
      blobDepth.delete(oid);
      onObject({ oid, type: 'blob', nameHash: hash });
    } else blobDepth.set(oid, depth);
  };
  const visitTree = async (oid: ObjectId, depth: number, hash: number, isRoot: boolean): Promise<void> => {
    throwIfAborted(signal);
    if (excluded.has(oid)) return;
    const before = treeDepth.get(oid);
    if (before !== undefined && before <= depth) return;
    treeDepth.set(oid, depth);
    const verdict = filterTree(filter, depth);
    if (verdict.include && !sent.has(oid)) {
      sent.add(oid);
      onObject({ oid, type: 'tree', nameHash: hash });
    }
    if (!verdict.walk) return;
    const tree = store.readSync?.(oid) ?? (await store.read(oid));
    if (!tree) throw new PackError('OBJECT_NOT_FOUND', `tree ${oid} is missing`);
    if (tree.type !== 'tree') throw new PackError('OBJECT_BAD_TYPE', `${oid} is a ${tree.type}, not a tree`);
    const data = tree.data;
    const children: { oid: ObjectId; hash: number; tree: boolean }[] = [];
    forEachTreeEntryRaw(data, (mode, nameStart, nameEnd, idAt) => {
      // depth-free verdicts are final: an id decided once (most entries) is skipped unencoded
      if (mode === 0o160000 || (settled && !settled.addBytes(data, idAt))) return;
      children.push({
        oid: bytesToHex(data, idAt, idAt + 20),
        hash: hashMore(hash, data, nameStart, nameEnd, !isRoot),
        tree: mode === 0o40000,
      });
    });
    for (const child of children) {
      if (child.tree) await visitTree(child.oid, depth + 1, child.hash, false);
      else await visitBlob(child.oid, depth + 1, child.hash);
    }
  };
  return {
    walk: async (root, rootHash) => {
      if (settled && !settled.add(root)) return;
      await visitTree(root, 0, rootHash, rootHash === 0);
    },
    given: (oid, type) => {
      if (sent.has(oid) || excluded.has(oid)) return;
      sent.add(oid);
      onObject({ oid, type, nameHash: 0 });
    },
  };
}
