/**
 * The `filter <spec>` line of an upload request (partial clone), v0 and v2: parsed once per
 * request, checked against what the server allows, and the wants it makes acceptable — with a
 * filter, a client may want any object reachable from an advertised ref (git's
 * `allowReachableSHA1InWant`; what a lazy fetch of missing blobs sends).
 */
import type { ObjectFilter, ObjectId, ObjectStore } from '@gitport/pack';
import { isPackError } from '@gitport/pack/internal/errors';
import { assertFilterSupported } from '@gitport/pack/internal/filtered-walk';
import { filterKinds, parseObjectFilter } from '@gitport/pack/internal/object-filter';
import { parseTagTarget } from '@gitport/pack/internal/tag';
import { parseTree } from '@gitport/pack/internal/tree';
import { walkCommits } from '@gitport/pack/internal/walk';
import { ProtocolError, throwIfAborted } from './errors.js';

export type FilterKind = ObjectFilter['kind'];

/** Filter kinds served by default (`sparse:oid` needs path patterns this server does not evaluate). */
export const DEFAULT_ALLOWED_FILTERS: readonly FilterKind[] = [
  'blob:none',
  'blob:limit',
  'tree',
  'object:type',
  'combine',
];

export interface FilterPolicy {
  /** Advertise and honour `filter` (git's `uploadpack.allowFilter`; default true). */
  allowFilter?: boolean;
  /** The filter kinds honoured (default `DEFAULT_ALLOWED_FILTERS`). */
  allowedFilters?: readonly FilterKind[];
  /** The deepest `tree:<depth>` honoured (git's `uploadpack.filter.tree.maxDepth`; default none). */
  maxTreeDepth?: number;
}

/** Whether the server advertises `filter`. */
export function filterAdvertised(policy: FilterPolicy): boolean {
  return policy.allowFilter !== false;
}

function maxTreeDepthOf(filter: ObjectFilter): number {
  if (filter.kind === 'tree') return filter.depth;
  if (filter.kind === 'combine') return Math.max(-1, ...filter.filters.map(maxTreeDepthOf));
  return -1;
}

/**
 * Parses one `filter` argument; a second one, a filter the server does not allow or a bad spec is
 * a `PROTOCOL_BAD_LINE` error worded as git's.
 */
export function parseFilterLine(spec: string, current: ObjectFilter | undefined, policy: FilterPolicy): ObjectFilter {
  if (!filterAdvertised(policy))
    throw new ProtocolError('PROTOCOL_BAD_LINE', 'git upload-pack: filtering capability not negotiated');
  if (current !== undefined) throw new ProtocolError('PROTOCOL_BAD_LINE', 'multiple filter-specs cannot be combined');
  let filter: ObjectFilter;
  try {
    filter = parseObjectFilter(spec);
  } catch (error) {
    if (isPackError(error)) throw new ProtocolError('PROTOCOL_BAD_LINE', error.message, { cause: error });
    throw error;
  }
  const allowed = new Set(policy.allowedFilters ?? DEFAULT_ALLOWED_FILTERS);
  for (const kind of filterKinds(filter)) {
    if (!allowed.has(kind)) throw new ProtocolError('PROTOCOL_BAD_LINE', `filter '${kind}' not supported`);
  }
  if (allowed.has('sparse:oid')) {
    try {
      assertFilterSupported(filter);
    } catch (error) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', "filter 'sparse:oid' not supported", { cause: error });
    }
  }
  if (policy.maxTreeDepth !== undefined && maxTreeDepthOf(filter) > policy.maxTreeDepth) {
    throw new ProtocolError(
      'PROTOCOL_BAD_LINE',
      `tree filter allows max depth ${policy.maxTreeDepth}, but got ${maxTreeDepthOf(filter)}`,
    );
  }
  return filter;
}

/**
 * The first of `targets` (trees or blobs) not reachable from `tips`: walks the tips' commits
 * newest first and each one's tree, and stops as soon as every target is found (a lazy fetch
 * mostly asks for objects of recent commits).
 */
export async function firstUnreachableObject(
  store: ObjectStore,
  targets: readonly ObjectId[],
  tips: readonly ObjectId[],
  signal?: AbortSignal,
): Promise<ObjectId | undefined> {
  const missing = new Set(targets);
  if (missing.size === 0) return undefined;
  const roots: ObjectId[] = [];
  const commits: ObjectId[] = [];
  for (let oid of tips) {
    for (let guard = 0; guard < 100; guard++) {
      const obj = await store.read(oid);
      if (!obj) break;
      if (obj.type === 'tag') {
        oid = parseTagTarget(obj.data);
        continue;
      }
      if (obj.type === 'commit') commits.push(oid);
      else if (obj.type === 'tree') roots.push(oid);
      missing.delete(oid);
      break;
    }
  }
  const seen = new Set<ObjectId>();
  const walkTree = async (root: ObjectId): Promise<void> => {
    const stack = [root];
    while (stack.length > 0 && missing.size > 0) {
      throwIfAborted(signal);
      const oid = stack.pop()!;
      if (seen.has(oid)) continue;
      seen.add(oid);
      missing.delete(oid);
      const tree = await store.read(oid);
      if (tree?.type !== 'tree') continue;
      for (const entry of parseTree(tree.data)) {
        if (entry.type === 'tree') stack.push(entry.oid);
        else if (entry.type === 'blob') missing.delete(entry.oid);
      }
    }
  };
  for (const root of roots) await walkTree(root);
  if (missing.size === 0) return undefined;
  const history = await walkCommits(store, commits, signal ? { signal } : {});
  for (const c of history.commits) {
    if (missing.size === 0) return undefined;
    await walkTree(c.tree);
  }
  return missing.values().next().value;
}
