/**
 * git's `ok_to_give_up` (upload-pack.c, `can_all_from_reach_with_flag`), kept up to date as the
 * negotiation goes instead of walked again for every `have`: "does every want reach a commit the
 * client has?", where the client has each common `have` and the parents of each common commit
 * (git's THEY_HAVE), and the walk from a want does not go past commits older than the oldest
 * common commit (their own mark still counts, their parents are not walked). A want is always
 * walked, whatever its date, also when the walk from another want meets it (git's answer there
 * depends on the order it takes the wants in; this one does not).
 *
 * The region walked from the wants only grows: a commit is expanded (its parents looked up) once,
 * when its date is at or after the cut-off; a commit under the cut-off waits in a queue and is
 * expanded when a later common `have` lowers the cut-off. Each commit remembers which walked
 * commits name it as a parent, so a commit marked "reaches a have" passes the mark to them once.
 * So a whole negotiation costs one walk of the region, however many haves (known or not) it has,
 * where walking again per have costs the region times the number of haves.
 */
import type { ObjectId } from '@gitport/pack';
import { type CommitGraph, type CommitNode, DateQueue } from './commit-graph.js';
import { throwIfAborted } from './errors.js';

interface Node {
  commit: CommitNode;
  /** Walked commits that have this one as a parent. */
  children: Node[];
  /** It is, or reaches, a commit the client has. */
  reaches: boolean;
  /** One of the wants (counted once in `#left` until it reaches). */
  want: boolean;
}

export class CommonReach {
  readonly #graph: CommitGraph;
  readonly #signal: AbortSignal | undefined;
  readonly #nodes = new Map<ObjectId, Node>();
  /** Walked commits whose parents are not looked up yet, newest first. */
  readonly #frontier = new DateQueue();
  readonly #theyHave = new Set<ObjectId>();
  #cutoff = Number.POSITIVE_INFINITY;
  #left = 0;
  #started = false;
  #wants: readonly ObjectId[] | (() => Promise<readonly ObjectId[]>) = [];
  /** Commits expanded so far (a work counter: at most the commits of the region, once each). */
  expanded = 0;

  constructor(graph: CommitGraph, signal?: AbortSignal) {
    this.#graph = graph;
    this.#signal = signal;
  }

  /**
   * The wants, peeled to commits, or how to get them: a loader runs only when a check needs the
   * wants (once some common commit is known). Set before the first `reachesAll`.
   */
  setWants(wants: readonly ObjectId[] | (() => Promise<readonly ObjectId[]>)): void {
    this.#wants = wants;
  }

  /** Records a common commit the client has: itself, its parents, and its date as a cut-off. */
  addCommon(commit: CommitNode): void {
    this.#mark(commit.oid);
    for (const p of commit.parents) this.#mark(p);
    if (commit.time < this.#cutoff) this.#cutoff = commit.time;
  }

  /** git's ok_to_give_up: false until some common commit is known. */
  async reachesAll(): Promise<boolean> {
    if (this.#cutoff === Number.POSITIVE_INFINITY) return false;
    if (!this.#started) await this.#start();
    while (this.#left > 0 && this.#frontier.size > 0) {
      const top = this.#frontier.peek() as CommitNode;
      if (top.time < this.#cutoff) break;
      this.#frontier.pop();
      if ((++this.expanded & 1023) === 0) throwIfAborted(this.#signal);
      await this.#expand(this.#nodes.get(top.oid) as Node);
    }
    return this.#left === 0;
  }

  /** The wants are walked whatever their date (git puts each on its stack unconditionally). */
  async #start(): Promise<void> {
    this.#started = true;
    const wants: Node[] = [];
    const oids = typeof this.#wants === 'function' ? await this.#wants() : this.#wants;
    for (const oid of oids) {
      if (this.#nodes.has(oid)) continue;
      const commit = await this.#graph.commit(oid);
      if (!commit) continue;
      const node = this.#add(commit, false);
      wants.push(node);
      if (!node.reaches) {
        node.want = true;
        this.#left++;
      }
    }
    for (const node of wants) {
      if ((++this.expanded & 1023) === 0) throwIfAborted(this.#signal);
      await this.#expand(node);
    }
  }

  #add(commit: CommitNode, queue = true): Node {
    const node: Node = { commit, children: [], reaches: this.#theyHave.has(commit.oid), want: false };
    this.#nodes.set(commit.oid, node);
    if (queue) this.#frontier.push(commit);
    return node;
  }

  async #expand(node: Node): Promise<void> {
    for (const p of node.commit.parents) {
      let parent = this.#nodes.get(p);
      if (!parent) {
        const commit = await this.#graph.commit(p);
        if (!commit) continue; // missing (shallow history)
        parent = this.#add(commit);
      }
      if (parent.reaches) this.#reach(node);
      else parent.children.push(node);
    }
  }

  #mark(oid: ObjectId): void {
    if (this.#theyHave.has(oid)) return;
    this.#theyHave.add(oid);
    const node = this.#nodes.get(oid);
    if (node) this.#reach(node);
  }

  /** Marks `start` and every walked commit above it as reaching a have. */
  #reach(start: Node): void {
    if (start.reaches) return;
    start.reaches = true;
    const stack = [start];
    for (let node = stack.pop(); node; node = stack.pop()) {
      if (node.want) {
        node.want = false;
        this.#left--;
      }
      for (const child of node.children) {
        if (child.reaches) continue;
        child.reaches = true;
        stack.push(child);
      }
      // marks pass once: the links are no longer needed
      node.children = [];
    }
  }
}
