/**
 * The connectivity check of a push, as git's receive-pack runs it (`rev-list --objects <new tips>
 * --not --all`, check_connected): every object reachable from the new tips must be readable,
 * except what is reachable from the current refs. Reads go through the push's quarantine, so
 * the pushed objects count and nothing a refused push brought earlier does (it was discarded).
 *
 * The walk, like git's:
 * 1. commits from the tips: a commit the push did not bring ends the walk when a ref reaches it
 *    (an edge); otherwise it is walked like a new one;
 * 2. trees and blobs of the walked commits (and tips or tag targets that are trees or blobs):
 *    an entry the pack did not bring is taken as reachable from a ref when an edge commit's tree
 *    has it under the same path (the common case: unchanged files); failing that, when the edge
 *    trees hold it anywhere (marked in full, once, as git's mark_edges_uninteresting does);
 *    failing that it must exist and, for a tree, be walked too.
 * Every object walked is checked (object-check.ts) and must have the type its link says.
 */
import type { ObjectId, ObjectStore, ObjectType } from '@gitport/pack';
import type { CommitGraph } from './commit-graph.js';
import { throwIfAborted } from './errors.js';
import { checkObject, type LinkType, type ObjectVerdict } from './object-check.js';

export type ConnectivityProblem =
  | { kind: 'missing'; oid: ObjectId }
  | { kind: 'invalid'; oid: ObjectId; id: string; message: string };

interface Pending {
  oid: ObjectId;
  /** What the link says the object is; undefined for a tip. */
  type: LinkType | undefined;
  /** Trees of edge commits at the same path, for a tree (see the module comment). */
  edges?: readonly ObjectId[];
}

/** At most this many edge trees are followed path by path (past it, only the full marks). */
const MAX_PATH_EDGES = 8;

export class ConnectivityCheck {
  readonly #objects: ObjectStore;
  readonly #graph: CommitGraph;
  readonly #refTips: readonly ObjectId[];
  readonly #pushed: ReadonlyMap<ObjectId, ObjectType>;
  readonly #signal: AbortSignal | undefined;
  /** Commits the push did not bring, by whether a ref reaches them. */
  readonly #reachable = new Map<ObjectId, boolean>();
  /** Objects in the trees of edge commits marked so far. */
  readonly #uninteresting = new Set<ObjectId>();
  readonly #marked = new Set<ObjectId>();
  #steps = 0;

  constructor(
    objects: ObjectStore,
    graph: CommitGraph,
    refTips: readonly ObjectId[],
    pushed: ReadonlyMap<ObjectId, ObjectType>,
    signal?: AbortSignal,
  ) {
    this.#objects = objects;
    this.#graph = graph;
    this.#refTips = refTips;
    this.#pushed = pushed;
    this.#signal = signal;
  }

  /** The first problem found in the closure of `tips`, or undefined when it is complete. */
  async check(tips: readonly ObjectId[]): Promise<ConnectivityProblem | undefined> {
    const seen = new Set<ObjectId>();
    const walkAsNew = new Set<ObjectId>();
    const edges: ObjectId[] = [];
    const later: Pending[] = [];
    let stack: Pending[] = tips.map((oid) => ({ oid, type: undefined }));
    // 1. commits (and tags)
    while (stack.length > 0) {
      const boundary: ObjectId[] = [];
      while (stack.length > 0) {
        this.#tick();
        const link = stack.pop() as Pending;
        if (seen.has(link.oid)) continue;
        seen.add(link.oid);
        const outside = !this.#pushed.has(link.oid) && !walkAsNew.has(link.oid);
        if (link.type === 'tree' || link.type === 'blob') {
          later.push(link);
          continue;
        }
        if (link.type === 'gitlink') continue;
        let type: ObjectType | undefined = link.type;
        if (outside && type === undefined) {
          type = (await this.#header(link.oid))?.type;
          if (type === undefined) return { kind: 'missing', oid: link.oid };
          if (type === 'tree' || type === 'blob') {
            later.push({ oid: link.oid, type });
            continue;
          }
        }
        if (outside && type === 'commit') {
          const known = this.#reachable.get(link.oid);
          if (known === true) edges.push(link.oid);
          else if (known === undefined) boundary.push(link.oid);
          else {
            walkAsNew.add(link.oid);
            seen.delete(link.oid);
            stack.push(link);
          }
          continue;
        }
        const read = await this.#readChecked(link);
        if ('kind' in read) return read;
        const { object, verdict } = read;
        if (object.type === 'tree' || object.type === 'blob') {
          later.push({ oid: link.oid, type: object.type });
          continue;
        }
        for (const next of verdict.links) stack.push({ oid: next.oid, type: next.type });
      }
      if (boundary.length > 0) {
        const found = await this.#graph.reachableFrom(boundary, this.#refTips, this.#signal);
        for (const oid of boundary) {
          this.#reachable.set(oid, found.has(oid));
          seen.delete(oid);
          stack.push({ oid, type: 'commit' });
        }
      }
    }
    // 2. trees and blobs
    const edgeTrees: ObjectId[] = [];
    for (const edge of edges) {
      const c = await this.#graph.commit(edge);
      if (c) edgeTrees.push(c.tree);
    }
    const pathEdges = edgeTrees.length <= MAX_PATH_EDGES ? edgeTrees : [];
    const isEdgeTree = new Set(edgeTrees);
    // the edge trees are marked in full once, the first time the path shortcut is not enough
    let edgesMarked = false;
    stack = later.map((p) => (p.type === 'tree' ? { ...p, edges: pathEdges } : p));
    const treesSeen = new Set<ObjectId>();
    while (stack.length > 0) {
      this.#tick();
      const link = stack.pop() as Pending;
      if (treesSeen.has(link.oid)) continue;
      treesSeen.add(link.oid);
      if (!this.#pushed.has(link.oid)) {
        if (isEdgeTree.has(link.oid) || this.#uninteresting.has(link.oid)) continue;
        if (!edgesMarked) {
          edgesMarked = true;
          for (const t of edgeTrees) await this.#mark(t);
          if (this.#uninteresting.has(link.oid)) continue;
        }
        if (link.type === 'blob') {
          const header = await this.#header(link.oid);
          if (!header) return { kind: 'missing', oid: link.oid };
          if (header.type !== 'blob') return mismatch(link.oid, 'blob', header.type);
          continue;
        }
      }
      if (link.type === 'blob') {
        // brought by the push: the pack says what it is
        const type = this.#pushed.get(link.oid) as ObjectType;
        if (type !== 'blob') return mismatch(link.oid, 'blob', type);
        continue;
      }
      const read = await this.#readChecked(link);
      if ('kind' in read) return read;
      const { object, verdict } = read;
      if (object.type !== 'tree') continue;
      // the same path in the edge trees: entries found there unchanged need no walk
      const edgeEntries = await this.#edgeEntries(link.edges ?? []);
      for (const next of verdict.links) {
        if (next.type === 'gitlink') continue;
        const isTree = next.type === 'tree';
        const atPath = edgeEntries.get(next.name as string);
        if (atPath?.some((e) => e.oid === next.oid && e.tree === isTree) && !this.#pushed.has(next.oid)) continue;
        if (isTree) {
          const sub = atPath?.filter((e) => e.tree).map((e) => e.oid) ?? [];
          stack.push({ oid: next.oid, type: 'tree', edges: sub.length <= MAX_PATH_EDGES ? sub : [] });
        } else stack.push({ oid: next.oid, type: next.type });
      }
    }
    return undefined;
  }

  /** Reads a walked object and checks it and the type its link gives it. */
  async #readChecked(
    link: Pending,
  ): Promise<
    | ConnectivityProblem
    | { object: { type: ObjectType; data: Uint8Array }; verdict: Extract<ObjectVerdict, { ok: true }> }
  > {
    const object = await this.#objects.read(link.oid);
    if (!object) return { kind: 'missing', oid: link.oid };
    if (link.type !== undefined && object.type !== link.type) return mismatch(link.oid, link.type, object.type);
    const verdict = checkObject(object.type, object.data);
    if (!verdict.ok) return { kind: 'invalid', oid: link.oid, id: verdict.id, message: verdict.message };
    return { object, verdict };
  }

  #tick(): void {
    if ((++this.#steps & 1023) === 0) throwIfAborted(this.#signal);
  }

  async #header(oid: ObjectId): Promise<{ type: ObjectType; size: number } | undefined> {
    if (this.#objects.readHeader) return this.#objects.readHeader(oid);
    const o = await this.#objects.read(oid);
    return o && { type: o.type, size: o.data.length };
  }

  /** Entries by name of the given edge trees, read as they are (reachable from a ref). */
  async #edgeEntries(trees: readonly ObjectId[]): Promise<Map<string, { oid: ObjectId; tree: boolean }[]>> {
    const out = new Map<string, { oid: ObjectId; tree: boolean }[]>();
    for (const t of trees) {
      const object = await this.#objects.read(t);
      if (object?.type !== 'tree') continue;
      // an unreadable edge tree only makes the walk go the long way
      const verdict = checkObject('tree', object.data);
      if (!verdict.ok) continue;
      for (const e of verdict.links) {
        if (e.type === 'gitlink') continue;
        const entry = { oid: e.oid, tree: e.type === 'tree' };
        const list = out.get(e.name as string);
        if (list) list.push(entry);
        else out.set(e.name as string, [entry]);
      }
    }
    return out;
  }

  /** Marks everything in an edge tree as reachable from a ref (git's mark_tree_uninteresting). */
  async #mark(root: ObjectId): Promise<void> {
    if (this.#marked.has(root)) return;
    this.#marked.add(root);
    const stack = [root];
    while (stack.length > 0) {
      this.#tick();
      const oid = stack.pop() as ObjectId;
      const object = await this.#objects.read(oid);
      if (object?.type !== 'tree') continue;
      const verdict = checkObject('tree', object.data);
      if (!verdict.ok) continue;
      for (const e of verdict.links) {
        if (e.type === 'gitlink' || this.#uninteresting.has(e.oid)) continue;
        this.#uninteresting.add(e.oid);
        if (e.type === 'tree') stack.push(e.oid);
      }
    }
  }
}

function mismatch(oid: ObjectId, expected: LinkType, actual: ObjectType): ConnectivityProblem {
  return { kind: 'invalid', oid, id: 'typeMismatch', message: `object ${oid} is a ${actual}, not a ${expected}` };
}
