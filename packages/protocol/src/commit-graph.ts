/**
 * A read-through cache of the commit graph over an ObjectStore, with the walks the servers need:
 * reachability checks, peeling tags, shallow boundaries (deepen, deepen-since, deepen-not) and the
 * connectivity check of a push.
 *
 * Objects are read with the pack package's parsers: of a commit its tree, parents and committer
 * time (`parseCommitLinks`), of a tag the object it names (`parseTagTarget`).
 */
import type { GitObject, ObjectId, ObjectStore, ObjectType } from '@gitport/pack';
import { parseCommitLinks } from '@gitport/pack/internal/commit';
import { parseTagTarget } from '@gitport/pack/internal/tag';
import { ProtocolError, throwIfAborted } from './errors.js';

export interface CommitNode {
  oid: ObjectId;
  tree: ObjectId;
  parents: ObjectId[];
  /** Committer time, seconds since the epoch. */
  time: number;
}

/** The links of a commit (pack's parser), as a node of the graph; PROTOCOL_BAD_OBJECT when malformed. */
export function parseCommitNode(oid: ObjectId, data: Uint8Array): CommitNode {
  try {
    const { tree, parents, time } = parseCommitLinks(data);
    return { oid, tree, parents, time };
  } catch (error) {
    throw new ProtocolError('PROTOCOL_BAD_OBJECT', `commit ${oid} is malformed`, { cause: error });
  }
}

/** The object an annotated tag names (pack's parser); PROTOCOL_BAD_OBJECT when malformed. */
function tagTarget(oid: ObjectId, data: Uint8Array): ObjectId {
  try {
    return parseTagTarget(data);
  } catch (error) {
    throw new ProtocolError('PROTOCOL_BAD_OBJECT', `tag ${oid} is malformed`, { cause: error });
  }
}

export class CommitGraph {
  readonly store: ObjectStore;
  readonly #commits = new Map<ObjectId, CommitNode | null>();
  readonly #peeled = new Map<ObjectId, { oid: ObjectId; type: ObjectType } | null>();

  /** Most commits (and peeled objects) kept parsed; the oldest entries go first past it. */
  readonly maxEntries: number;

  constructor(store: ObjectStore, options: { maxEntries?: number } = {}) {
    this.store = store;
    this.maxEntries = options.maxEntries ?? 500_000;
  }

  #remember<V>(map: Map<ObjectId, V>, oid: ObjectId, value: V): void {
    if (map.size >= this.maxEntries && !map.has(oid)) map.delete(map.keys().next().value as ObjectId);
    map.set(oid, value);
  }

  /** The commit, or `undefined` when the id is missing or not a commit. */
  async commit(oid: ObjectId): Promise<CommitNode | undefined> {
    const cached = this.#commits.get(oid);
    if (cached !== undefined) return cached ?? undefined;
    const object = await this.store.read(oid);
    const node = object && object.type === 'commit' ? parseCommitNode(oid, object.data) : null;
    this.#remember(this.#commits, oid, node);
    return node ?? undefined;
  }

  /** Follows annotated tags to the object they finally name. */
  async peel(oid: ObjectId): Promise<{ oid: ObjectId; type: ObjectType } | undefined> {
    const cached = this.#peeled.get(oid);
    if (cached !== undefined) return cached ?? undefined;
    let current = oid;
    let result: { oid: ObjectId; type: ObjectType } | null = null;
    for (let depth = 0; depth < 16; depth++) {
      const object: GitObject | undefined = await this.store.read(current);
      if (!object) break;
      if (object.type !== 'tag') {
        result = { oid: current, type: object.type };
        if (object.type === 'commit' && !this.#commits.has(current)) {
          this.#remember(this.#commits, current, parseCommitNode(current, object.data));
        }
        break;
      }
      current = tagTarget(current, object.data);
    }
    this.#remember(this.#peeled, oid, result);
    return result ?? undefined;
  }

  /** Is `oid` an annotated tag? Returns its peeled target when it is. */
  async peelTag(oid: ObjectId): Promise<ObjectId | undefined> {
    const object = await this.store.read(oid);
    if (object?.type !== 'tag') return undefined;
    return (await this.peel(oid))?.oid;
  }

  /**
   * Walks ancestors of `starts` newest first, calling `visit` for each commit once; `visit`
   * returns false to not walk a commit's parents. Missing parents are skipped (shallow history).
   */
  async walk(
    starts: Iterable<ObjectId>,
    visit: (commit: CommitNode) => unknown,
    options: { signal?: AbortSignal; stop?: ReadonlySet<ObjectId> } = {},
  ): Promise<void> {
    const seen = new Set<ObjectId>();
    const queue = new DateQueue();
    for (const oid of starts) {
      if (seen.has(oid)) continue;
      seen.add(oid);
      const c = await this.commit(oid);
      if (c) queue.push(c);
    }
    let steps = 0;
    for (let c = queue.pop(); c; c = queue.pop()) {
      if ((++steps & 1023) === 0) throwIfAborted(options.signal);
      if (visit(c) === false) continue;
      if (options.stop?.has(c.oid)) continue;
      for (const p of c.parents) {
        if (seen.has(p)) continue;
        seen.add(p);
        const pc = await this.commit(p);
        if (pc) queue.push(pc);
      }
    }
  }

  /** Which of `targets` are reachable from `tips` (walks until all are found or history ends). */
  async reachableFrom(
    targets: Iterable<ObjectId>,
    tips: Iterable<ObjectId>,
    signal?: AbortSignal,
  ): Promise<Set<ObjectId>> {
    const wanted = new Set(targets);
    const found = new Set<ObjectId>();
    if (wanted.size === 0) return found;
    const starts: ObjectId[] = [];
    for (const tip of tips) {
      const peeled = await this.peel(tip);
      if (!peeled) continue;
      if (wanted.has(tip)) found.add(tip);
      if (wanted.has(peeled.oid)) found.add(peeled.oid);
      if (peeled.type === 'commit') starts.push(peeled.oid);
    }
    if (found.size === wanted.size) return found;
    // the walk meets commits only: a target of another type (a tag, or the tree or blob of a
    // partial clone's lazy fetch) is among the tips or nowhere on it, and keeps no walk going
    const walked = new Set<ObjectId>();
    for (const oid of wanted) {
      if (found.has(oid)) continue;
      const peeled = await this.peel(oid);
      if (peeled?.oid === oid && peeled.type === 'commit') walked.add(oid);
    }
    if (walked.size === 0) return found;
    let left = walked.size;
    let done = false;
    await this.walk(
      starts,
      (c) => {
        if (done) return false;
        if (walked.has(c.oid) && !found.has(c.oid)) {
          found.add(c.oid);
          if (--left === 0) done = true;
        }
        return true;
      },
      { signal },
    );
    return found;
  }
}

/** Flags of the limited walk. */
const INTERESTING = 1;
const UNINTERESTING = 2;

export interface SendSetOptions {
  /** Commits whose parents are not walked from the wants side (new shallow boundary). */
  shallow?: ReadonlySet<ObjectId>;
  /** Commits whose parents the other side does not have (its shallow boundary): the haves walk stops there. */
  theirShallow?: ReadonlySet<ObjectId>;
  signal?: AbortSignal;
}

/**
 * git's limited revision walk `rev-list wants --not haves`: commits reachable from `wants` and
 * not from `haves`, newest first. Uninteresting marks propagate in date order; the walk ends when
 * only uninteresting commits are queued.
 */
export async function commitsToSend(
  graph: CommitGraph,
  wants: Iterable<ObjectId>,
  haves: Iterable<ObjectId>,
  options: SendSetOptions = {},
): Promise<CommitNode[]> {
  const flags = new Map<ObjectId, number>();
  const queue = new DateQueue();
  let interestingQueued = 0;
  const push = async (oid: ObjectId, flag: number) => {
    const prev = flags.get(oid) ?? 0;
    if (prev & flag) return;
    if (flag === UNINTERESTING && prev & INTERESTING) {
      flags.set(oid, prev | flag);
      return; // already queued; the pop sees the new mark
    }
    const c = await graph.commit(oid);
    if (!c) return;
    flags.set(oid, prev | flag);
    if (prev === 0) {
      if (flag === INTERESTING) interestingQueued++;
      queue.push(c);
    }
  };
  for (const oid of haves) await push(oid, UNINTERESTING);
  for (const oid of wants) await push(oid, INTERESTING);
  const out: CommitNode[] = [];
  let steps = 0;
  while (queue.size > 0 && interestingQueued > 0) {
    if ((++steps & 1023) === 0) throwIfAborted(options.signal);
    const c = queue.pop() as CommitNode;
    const f = flags.get(c.oid) ?? 0;
    if (f & INTERESTING) interestingQueued--;
    if (f & UNINTERESTING) {
      if (options.theirShallow?.has(c.oid)) continue;
      for (const p of c.parents) {
        const pf = flags.get(p) ?? 0;
        if (pf & UNINTERESTING) continue;
        if (pf & INTERESTING) {
          flags.set(p, pf | UNINTERESTING);
          continue;
        }
        await push(p, UNINTERESTING);
      }
      continue;
    }
    out.push(c);
    if (options.shallow?.has(c.oid)) continue;
    for (const p of c.parents) await push(p, INTERESTING);
  }
  return out.filter((c) => !((flags.get(c.oid) ?? 0) & UNINTERESTING));
}

export interface ShallowRequest {
  /** `deepen <n>`: history depth counted from the wants (1: the wants only). */
  depth?: number;
  /** `deepen-relative`: depth counted from the client's current shallow boundary. */
  relative?: boolean;
  /** `deepen-since <ts>`: leave out commits older than this (seconds). */
  since?: number;
  /** `deepen-not <ref>` resolved: leave out commits reachable from these. */
  not?: ObjectId[];
}

/**
 * The new shallow boundary for a deepen request, and the client's shallow commits that stop
 * being shallow (git's `deepen`, `deepen_by_rev_list`).
 */
export async function computeShallow(
  graph: CommitGraph,
  wants: readonly ObjectId[],
  clientShallow: ReadonlySet<ObjectId>,
  request: ShallowRequest,
  signal?: AbortSignal,
): Promise<{ shallow: Set<ObjectId>; unshallow: Set<ObjectId> }> {
  const shallow = new Set<ObjectId>();
  const included = new Set<ObjectId>();
  if (request.depth !== undefined) {
    // breadth-first by depth, each commit at its smallest depth
    let level: ObjectId[] = [];
    const depthOf = new Map<ObjectId, number>();
    const limit = request.relative ? request.depth + 1 : request.depth;
    const roots = request.relative ? [...clientShallow] : [...wants];
    if (request.relative) {
      // commits above the client's boundary are walked without a limit down to it
      await graph.walk(
        wants,
        (c) => {
          if (clientShallow.has(c.oid)) return false;
          included.add(c.oid);
          return true;
        },
        { signal },
      );
    }
    for (const oid of roots) {
      if (depthOf.has(oid)) continue;
      const c = await graph.commit(oid);
      if (!c) continue;
      depthOf.set(oid, 1);
      level.push(oid);
    }
    for (let d = 1; level.length > 0; d++) {
      throwIfAborted(signal);
      const next: ObjectId[] = [];
      for (const oid of level) {
        const c = (await graph.commit(oid)) as CommitNode;
        included.add(oid);
        if (d >= limit) {
          if (c.parents.length > 0) shallow.add(oid);
          continue;
        }
        for (const p of c.parents) {
          if (depthOf.has(p) || !(await graph.commit(p))) continue;
          depthOf.set(p, d + 1);
          next.push(p);
        }
      }
      level = next;
    }
  } else {
    const excluded = new Set<ObjectId>();
    if (request.not && request.not.length > 0) {
      const tips: ObjectId[] = [];
      for (const oid of request.not) {
        const peeled = await graph.peel(oid);
        if (peeled?.type === 'commit') tips.push(peeled.oid);
      }
      await graph.walk(
        tips,
        (c) => {
          excluded.add(c.oid);
        },
        { signal },
      );
    }
    const since = request.since;
    const keep = (c: CommitNode) => !excluded.has(c.oid) && (since === undefined || c.time >= since);
    const wanted = new Set(wants);
    await graph.walk(
      wants,
      (c) => {
        if (!keep(c) && !wanted.has(c.oid)) return false;
        included.add(c.oid);
        return true;
      },
      { signal },
    );
    for (const oid of included) {
      const c = (await graph.commit(oid)) as CommitNode;
      if (c.parents.some((p) => !included.has(p))) shallow.add(oid);
    }
  }
  const unshallow = new Set<ObjectId>();
  for (const oid of clientShallow) {
    if (included.has(oid) && !shallow.has(oid)) unshallow.add(oid);
  }
  return { shallow, unshallow };
}

/** A max-heap of commits by committer time (newest first), ties broken by insertion order. */
export class DateQueue {
  readonly #heap: { c: CommitNode; seq: number }[] = [];
  #seq = 0;
  get size(): number {
    return this.#heap.length;
  }
  push(c: CommitNode): void {
    const heap = this.#heap;
    heap.push({ c, seq: this.#seq++ });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }
  /** The newest commit, left in the queue. */
  peek(): CommitNode | undefined {
    return this.#heap[0]?.c;
  }
  pop(): CommitNode | undefined {
    const heap = this.#heap;
    if (heap.length === 0) return undefined;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let best = i;
        if (l < heap.length && this.#before(heap[l]!, heap[best]!)) best = l;
        if (r < heap.length && this.#before(heap[r]!, heap[best]!)) best = r;
        if (best === i) break;
        [heap[i], heap[best]] = [heap[best]!, heap[i]!];
        i = best;
      }
    }
    return top.c;
  }
  #before(a: { c: CommitNode; seq: number }, b: { c: CommitNode; seq: number }): boolean {
    return a.c.time > b.c.time || (a.c.time === b.c.time && a.seq < b.seq);
  }
}
