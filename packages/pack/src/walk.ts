/**
 * History walks over an object store: a commit cache, a date-ordered walk with "uninteresting"
 * propagation (what `git rev-list A ^B` computes, in the manner of revision.c's limit_list),
 * ancestry checks and merge bases, and the object enumeration of a pack:
 * reachable(wants) - reachable(haves), with shallow commits whose parents are not walked.
 */
import { parseCommitLinks } from './commit.js';
import { PackError, throwIfAborted } from './errors.js';
import { filteredTreeWalk } from './filtered-walk.js';
import { bytesToHex, type ObjectId, type ObjectType } from './object.js';
import { filterKeeps, type ObjectFilter } from './object-filter.js';
import { OidSet } from './oid-set.js';
import type { ObjectStore } from './store.js';
import { parseTagTarget } from './tag.js';

export interface CommitInfo {
  oid: ObjectId;
  tree: ObjectId;
  parents: ObjectId[];
  /** Committer time, seconds. */
  time: number;
}

/** Parsed commit links, cached per store (bounded). */
export class CommitCache {
  readonly #map = new Map<ObjectId, CommitInfo>();
  constructor(
    readonly store: ObjectStore,
    readonly maxEntries = 200_000,
  ) {}

  async get(oid: ObjectId): Promise<CommitInfo> {
    const hit = this.#map.get(oid);
    if (hit) return hit;
    const obj = this.store.readSync?.(oid) ?? (await this.store.read(oid));
    if (!obj) throw new PackError('OBJECT_NOT_FOUND', `commit ${oid} is missing`);
    if (obj.type !== 'commit') throw new PackError('OBJECT_BAD_TYPE', `${oid} is a ${obj.type}, not a commit`);
    const info = { oid, ...parseCommitLinks(obj.data) };
    if (this.#map.size >= this.maxEntries) this.#map.delete(this.#map.keys().next().value!);
    this.#map.set(oid, info);
    return info;
  }
}

/** A max-heap of commits by time (newest first), ties by insertion order. */
export class CommitQueue {
  readonly #heap: { c: CommitInfo; seq: number }[] = [];
  #seq = 0;
  get size(): number {
    return this.#heap.length;
  }
  some(predicate: (c: CommitInfo) => boolean): boolean {
    return this.#heap.some((e) => predicate(e.c));
  }
  #less(a: { c: CommitInfo; seq: number }, b: { c: CommitInfo; seq: number }): boolean {
    return a.c.time > b.c.time || (a.c.time === b.c.time && a.seq < b.seq);
  }
  push(c: CommitInfo): void {
    const h = this.#heap;
    h.push({ c, seq: this.#seq++ });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }
  pop(): CommitInfo | undefined {
    const h = this.#heap;
    if (h.length === 0) return undefined;
    const top = h[0]!.c;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

export interface WalkOptions {
  /** Commits whose ancestors (themselves included) are excluded. */
  hide?: Iterable<ObjectId>;
  /** Commits whose parents are not walked. */
  shallow?: Iterable<ObjectId>;
  signal?: AbortSignal;
  cache?: CommitCache;
}

export interface WalkResult {
  /** Commits reachable from the starts and not from `hide`, newest first. */
  commits: CommitInfo[];
  /** Hidden commits adjacent to the result (the parents of result commits that are hidden, and reachable hidden starts). */
  boundary: ObjectId[];
}

const UNINTERESTING = 1;
const QUEUED = 2;
const POPPED = 4;

/**
 * `git rev-list starts ^hide` with the boundary: a date-ordered walk that stops once only
 * hidden commits remain queued. Hidden ids missing from the store are ignored.
 */
export async function walkCommits(
  store: ObjectStore,
  starts: Iterable<ObjectId>,
  options: WalkOptions = {},
): Promise<WalkResult> {
  const cache = options.cache ?? new CommitCache(store);
  const shallow = new Set(options.shallow ?? []);
  const flags = new Map<ObjectId, number>();
  const parentsOf = new Map<ObjectId, readonly ObjectId[]>();
  const queue = new CommitQueue();
  let interestingQueued = 0;
  /** Marks a known commit and its known ancestors hidden. */
  const hideKnown = (oid: ObjectId) => {
    const stack = [oid];
    while (stack.length > 0) {
      const o = stack.pop()!;
      const f = flags.get(o);
      if (f === undefined || f & UNINTERESTING) continue;
      flags.set(o, f | UNINTERESTING);
      if (!(f & POPPED)) interestingQueued--;
      else for (const p of parentsOf.get(o) ?? []) stack.push(p);
    }
  };
  const enqueue = async (oid: ObjectId, hidden: boolean) => {
    const f = flags.get(oid);
    if (f !== undefined) {
      if (hidden) hideKnown(oid);
      return;
    }
    let c: CommitInfo;
    try {
      c = await cache.get(oid);
    } catch (error) {
      if (hidden) return;
      throw error;
    }
    flags.set(oid, QUEUED | (hidden ? UNINTERESTING : 0));
    if (!hidden) interestingQueued++;
    queue.push(c);
  };
  for (const h of options.hide ?? []) await enqueue(h, true);
  for (const s of starts) await enqueue(s, false);
  const popped: CommitInfo[] = [];
  while (queue.size > 0 && interestingQueued > 0) {
    throwIfAborted(options.signal);
    const c = queue.pop()!;
    const f = flags.get(c.oid)!;
    flags.set(c.oid, f | POPPED);
    const hidden = (f & UNINTERESTING) !== 0;
    if (!hidden) interestingQueued--;
    popped.push(c);
    // shallow commits bound both walks: the receiver has no parents of its shallow commits
    if (shallow.has(c.oid)) continue;
    parentsOf.set(c.oid, c.parents);
    for (const p of c.parents) await enqueue(p, hidden);
  }
  const commits = popped.filter((c) => !((flags.get(c.oid) ?? 0) & UNINTERESTING));
  const boundary = new Set<ObjectId>();
  for (const c of commits) {
    if (shallow.has(c.oid)) continue;
    for (const p of c.parents) if ((flags.get(p) ?? 0) & UNINTERESTING) boundary.add(p);
  }
  return { commits, boundary: [...boundary] };
}

/** Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor). */
export async function isAncestor(
  store: ObjectStore,
  ancestor: ObjectId,
  descendant: ObjectId,
  options: { signal?: AbortSignal; cache?: CommitCache } = {},
): Promise<boolean> {
  if (ancestor === descendant) return true;
  const cache = options.cache ?? new CommitCache(store);
  const target = await cache.get(ancestor);
  const seen = new Set<ObjectId>([descendant]);
  const queue = new CommitQueue();
  queue.push(await cache.get(descendant));
  while (queue.size > 0) {
    throwIfAborted(options.signal);
    const c = queue.pop()!;
    if (c.oid === ancestor) return true;
    if (c.time < target.time - 86_400) continue; // generous clock-skew slop
    for (const p of c.parents) {
      if (seen.has(p)) continue;
      seen.add(p);
      queue.push(await cache.get(p));
    }
  }
  return false;
}

/** The best common ancestors of two commits (like `git merge-base --all`), painting down by date. */
export async function mergeBase(
  store: ObjectStore,
  a: ObjectId,
  b: ObjectId,
  options: { signal?: AbortSignal; cache?: CommitCache } = {},
): Promise<ObjectId[]> {
  if (a === b) return [a];
  const cache = options.cache ?? new CommitCache(store);
  const ONE = 1;
  const TWO = 2;
  const STALE = 4;
  const RESULT = 8;
  const flags = new Map<ObjectId, number>();
  const queue = new CommitQueue();
  // queue entries per commit, and how many entries are of commits not (yet) stale: flags only
  // gain bits, so a commit turning stale takes all its queued entries out of the count at once
  const queued = new Map<ObjectId, number>();
  let nonStale = 0;
  const push = async (oid: ObjectId) => {
    const c = await cache.get(oid);
    queued.set(oid, (queued.get(oid) ?? 0) + 1);
    if (!((flags.get(oid) ?? 0) & STALE)) nonStale++;
    queue.push(c);
  };
  flags.set(a, ONE);
  flags.set(b, TWO);
  await push(a);
  await push(b);
  const result: ObjectId[] = [];
  while (nonStale > 0) {
    throwIfAborted(options.signal);
    const c = queue.pop()!;
    queued.set(c.oid, queued.get(c.oid)! - 1);
    const own = flags.get(c.oid) ?? 0;
    if (!(own & STALE)) nonStale--;
    let paint = own & (ONE | TWO | STALE);
    if ((paint & (ONE | TWO)) === (ONE | TWO)) {
      if (!(own & RESULT)) {
        flags.set(c.oid, own | RESULT);
        result.push(c.oid);
      }
      paint |= STALE;
    }
    for (const p of c.parents) {
      const pf = flags.get(p) ?? 0;
      if ((pf & paint) === paint) continue;
      flags.set(p, pf | paint);
      if (paint & STALE && !(pf & STALE)) nonStale -= queued.get(p) ?? 0;
      await push(p);
    }
  }
  // results that are ancestors of other results are not "best"
  const candidates = result;
  const best: ObjectId[] = [];
  for (const r of candidates) {
    let redundant = false;
    for (const o of candidates) {
      if (o !== r && (await isAncestor(store, r, o, { cache }))) {
        redundant = true;
        break;
      }
    }
    if (!redundant) best.push(r);
  }
  return best;
}

/** git's pack name hash: the last characters of the path weigh most, whitespace ignored. */
export function nameHash(path: Uint8Array | string): number {
  const bytes = typeof path === 'string' ? new TextEncoder().encode(path) : path;
  let h = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    h = ((h >>> 2) + (c << 24)) >>> 0;
  }
  return h;
}

export interface PackObject {
  oid: ObjectId;
  type: ObjectType;
  nameHash: number;
}

export interface Enumeration {
  /** Objects to send: commits (newest first), tags, then trees and blobs in traversal order. */
  objects: PackObject[];
  /**
   * Trees and blobs of the first `edgeCommits` boundary commits with their name hashes: what
   * the receiver has at the paths of the objects sent, the thin pack's delta bases to try (git's
   * preferred bases).
   */
  edges: PackObject[];
  /** Commits the walk stopped at (the receiver has them), newest first. */
  boundary: ObjectId[];
  /** The trees and blobs of every boundary commit: the receiver has them (they are not sent). */
  uninteresting: OidSet;
}

export interface EnumerateOptions {
  wants: readonly ObjectId[];
  haves?: readonly ObjectId[];
  shallow?: readonly ObjectId[];
  /** Annotated tags to add when the object they point at is sent (include-tag). */
  tags?: readonly ObjectId[];
  /** Collect the boundary trees and blobs as `edges` (for thin packs). */
  edges?: boolean;
  /**
   * Boundary commits whose trees give `edges` (default 10, git's delta window): git adds the
   * trees of at most `window` edge commits as preferred bases.
   */
  edgeCommits?: number;
  /** Partial clone: leave out what the filter leaves out (objects named in `wants` are always sent). */
  filter?: ObjectFilter;
  signal?: AbortSignal;
  cache?: CommitCache;
}

/** reachable(wants) - reachable(haves): the objects of a pack. */
export async function enumerateObjects(store: ObjectStore, options: EnumerateOptions): Promise<Enumeration> {
  const signal = options.signal;
  const cache = options.cache ?? new CommitCache(store);
  const objects: PackObject[] = [];
  const sent = new Set<ObjectId>();
  const tagObjects: PackObject[] = [];
  const commitStarts: ObjectId[] = [];
  const looseTrees: { oid: ObjectId; path: Uint8Array }[] = [];
  const looseBlobs: ObjectId[] = [];
  const typeOf = async (oid: ObjectId): Promise<ObjectType> => {
    const h = store.readHeader ? await store.readHeader(oid) : await store.read(oid);
    if (!h) throw new PackError('OBJECT_NOT_FOUND', `object ${oid} is missing`);
    return h.type;
  };
  // the objects the request names: the wants, and every object their tags peel to (a filter
  // keeps them, as git keeps every object of a wanted tag's chain, its end included)
  const given = new Set<ObjectId>();
  // peel wanted tags
  for (let oid of options.wants) {
    for (let guard = 0; ; guard++) {
      if (guard > 100) throw new PackError('OBJECT_CORRUPT', `tag chain too long at ${oid}`);
      given.add(oid);
      const type = await typeOf(oid);
      if (type === 'tag') {
        if (!sent.has(oid)) {
          sent.add(oid);
          tagObjects.push({ oid, type, nameHash: 0 });
        }
        oid = parseTagTarget((await store.read(oid))!.data);
        continue;
      }
      if (type === 'commit') commitStarts.push(oid);
      else if (type === 'tree') looseTrees.push({ oid, path: new Uint8Array(0) });
      else looseBlobs.push(oid);
      break;
    }
  }
  const haveCommits: ObjectId[] = [];
  for (let h of options.haves ?? []) {
    // peel annotated tags; ids the store does not have are ignored (the receiver may know more)
    for (let guard = 0; guard < 100; guard++) {
      const header = store.readHeader ? await store.readHeader(h) : await store.read(h);
      if (header?.type === 'commit') haveCommits.push(h);
      if (header?.type !== 'tag') break;
      h = parseTagTarget((await store.read(h))!.data);
    }
  }
  const walk = await walkCommits(store, commitStarts, {
    hide: haveCommits,
    shallow: options.shallow,
    signal,
    cache,
  });
  // objects the receiver has, as far as the pack is concerned: everything in the trees of the
  // boundary commits (the hidden parents of the commits sent), git's edges; the trees of the
  // other `haves` are not walked, their objects are either under the boundary or few
  const boundary = walk.boundary;
  const edgeCommits = options.edgeCommits ?? 10;
  const excluded = new OidSet();
  const edges: PackObject[] = [];
  /** Continues git's name hash over `bytes[start..end]` (a running state: dir/name continues dir's). */
  const hashMore = (h: number, bytes: Uint8Array, start: number, end: number, slash: boolean): number => {
    if (slash) h = ((h >>> 2) + (0x2f << 24)) >>> 0;
    for (let i = start; i < end; i++) {
      const c = bytes[i]!;
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
      h = ((h >>> 2) + (c << 24)) >>> 0;
    }
    return h;
  };
  const walkTree = async (
    root: ObjectId,
    rootPath: Uint8Array,
    seen: OidSet,
    /** Told of each object not seen before; none: the objects are only marked seen. */
    onObject: ((o: PackObject) => void) | undefined,
  ): Promise<void> => {
    if (!seen.add(root)) return;
    const rootHash = hashMore(0, rootPath, 0, rootPath.length, false);
    // trees to read, depth first, in three parallel stacks (no object per tree)
    const oids: ObjectId[] = [root];
    const hashes: number[] = [rootHash];
    const roots: boolean[] = [rootPath.length === 0];
    onObject?.({ oid: root, type: 'tree', nameHash: rootHash });
    let read = 0;
    while (oids.length > 0) {
      if ((++read & 255) === 0) throwIfAborted(signal);
      const oid = oids.pop()!;
      const hash = hashes.pop()!;
      const isRoot = roots.pop()!;
      const tree = store.readSync?.(oid) ?? (await store.read(oid));
      if (!tree) throw new PackError('OBJECT_NOT_FOUND', `tree ${oid} is missing`);
      if (tree.type !== 'tree') throw new PackError('OBJECT_BAD_TYPE', `${oid} is a ${tree.type}, not a tree`);
      const data = tree.data;
      const n = data.length;
      // subtrees are pushed as met, then their run reversed: read in the tree's order
      const first = oids.length;
      // the entries in place (as forEachTreeEntryRaw reads them, its checks included): ids
      // already seen (most entries of most trees) are checked where they lie, never hex-encoded
      let pos = 0;
      while (pos < n) {
        let mode = 0;
        let p = pos;
        for (let c = data[p]!; p < n && c !== 0x20; c = data[++p]!) {
          const d = c - 0x30;
          if (d < 0 || d > 7) throw new PackError('PARSE_TREE', `bad mode at ${pos}`);
          mode = mode * 8 + d;
        }
        if (p === pos || p >= n) throw new PackError('PARSE_TREE', `bad entry at ${pos}`);
        const nameStart = p + 1;
        let nul = nameStart;
        while (nul < n && data[nul] !== 0) nul++;
        if (nul === n || nul === nameStart || nul + 21 > n) {
          throw new PackError('PARSE_TREE', `truncated entry at ${pos}`);
        }
        const idAt = nul + 1;
        pos = idAt + 20;
        if (mode === 0o160000 || !seen.addBytes(data, idAt)) continue;
        // a blob only marked seen needs neither its id as text nor its name hash
        if (onObject === undefined && mode !== 0o40000) continue;
        const child = bytesToHex(data, idAt, idAt + 20);
        const h = hashMore(hash, data, nameStart, nul, !isRoot);
        if (mode === 0o40000) {
          onObject?.({ oid: child, type: 'tree', nameHash: h });
          oids.push(child);
          hashes.push(h);
          roots.push(false);
        } else {
          onObject?.({ oid: child, type: 'blob', nameHash: h });
        }
      }
      for (let i = first, j = oids.length - 1; i < j; i++, j--) {
        const o = oids[i]!;
        oids[i] = oids[j]!;
        oids[j] = o;
        const x = hashes[i]!;
        hashes[i] = hashes[j]!;
        hashes[j] = x;
      }
    }
  };
  const collect = (o: PackObject) => {
    edges.push(o);
  };
  for (let i = 0; i < boundary.length; i++) {
    let c: CommitInfo;
    try {
      c = await cache.get(boundary[i]!);
    } catch {
      continue;
    }
    await walkTree(c.tree, new Uint8Array(0), excluded, options.edges && i < edgeCommits ? collect : undefined);
  }
  for (const c of walk.commits) {
    if (sent.has(c.oid)) continue;
    sent.add(c.oid);
    objects.push({ oid: c.oid, type: 'commit', nameHash: 0 });
  }
  // include-tag: annotated tags whose target chain ends at an object we send
  for (const t of options.tags ?? []) {
    if (sent.has(t)) continue;
    let oid = t;
    const chain: ObjectId[] = [];
    for (let guard = 0; guard < 100; guard++) {
      const obj = await store.read(oid);
      if (obj?.type !== 'tag') break;
      chain.push(oid);
      oid = parseTagTarget(obj.data);
    }
    if (chain.length > 0 && sent.has(oid)) {
      for (const c of chain) {
        if (!sent.has(c)) {
          sent.add(c);
          tagObjects.push({ oid: c, type: 'tag', nameHash: 0 });
        }
      }
    }
  }
  if (options.filter) {
    const filter = options.filter;
    const kept = objects.filter((o) => given.has(o.oid) || filterKeeps(filter, 'commit'));
    const keptTags = tagObjects.filter((o) => given.has(o.oid) || filterKeeps(filter, 'tag'));
    const filtered = filteredTreeWalk(store, filter, excluded, (o) => kept.push(o), signal);
    kept.push(...keptTags);
    for (const c of walk.commits) await filtered.walk(c.tree, 0);
    for (const t of looseTrees) {
      filtered.given(t.oid, 'tree');
      await filtered.walk(t.oid, 0);
    }
    for (const b of looseBlobs) filtered.given(b, 'blob');
    return { objects: kept, edges: [], boundary, uninteresting: excluded };
  }
  objects.push(...tagObjects);
  const seen = excluded.clone();
  const add = (o: PackObject) => {
    objects.push(o);
  };
  for (const c of walk.commits) await walkTree(c.tree, new Uint8Array(0), seen, add);
  for (const t of looseTrees) await walkTree(t.oid, t.path, seen, add);
  for (const b of looseBlobs) if (seen.add(b)) add({ oid: b, type: 'blob', nameHash: 0 });
  return { objects, edges, boundary, uninteresting: excluded };
}
