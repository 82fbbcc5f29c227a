/**
 * The client's have-selection, after git's default negotiator (negotiator/default.c) and
 * fetch-pack.c's round sizing:
 *
 * - remote tips the client already has are "known common": sent first as haves, their
 *   ancestors never are;
 * - then local commits newest first (a commit-date priority queue seeded with every local ref);
 * - an ACK marks the commit and its ancestors common, so they are not sent;
 * - a round ends when the running count of haves reaches a threshold: 16 first, then +32
 *   per round when stateful (rounds of 16, 32, 32, ...), doubling up to 16,384 then +10% when
 *   stateless (HTTP) or v2 (rounds of 16, 16, 32, 64, ...), as fetch-pack.c's next_flush;
 * - after the first ACK, 256 haves in a row without one end the negotiation (`done`).
 */
import type { ObjectId } from '@gitport/pack';
import { type CommitGraph, type CommitNode, DateQueue } from './commit-graph.js';

const SEEN = 1;
const COMMON = 2;
const COMMON_REF = 4;
const POPPED = 8;

export const INITIAL_FLUSH = 16;
export const PIPESAFE_FLUSH = 32;
export const LARGE_FLUSH = 16384;
export const MAX_IN_VAIN = 256;

/** The next threshold after `count` haves sent (fetch-pack.c next_flush). */
export function nextFlush(stateless: boolean, count: number): number {
  if (stateless) return count < LARGE_FLUSH ? count * 2 : Math.floor((count * 11) / 10);
  return count + PIPESAFE_FLUSH;
}

export class Negotiator {
  readonly #graph: CommitGraph;
  readonly #flags = new Map<ObjectId, number>();
  readonly #queue = new DateQueue();
  /** Queued commits that are not yet known common (when 0, nothing useful is left to send). */
  #nonCommon = 0;

  constructor(graph: CommitGraph) {
    this.#graph = graph;
  }

  async #commit(oid: ObjectId): Promise<CommitNode | undefined> {
    const peeled = await this.#graph.peel(oid);
    if (peeled?.type !== 'commit') return undefined;
    return this.#graph.commit(peeled.oid);
  }

  /** Queues a commit not seen before. */
  #enqueue(c: CommitNode, flags: number): void {
    this.#flags.set(c.oid, (this.#flags.get(c.oid) ?? 0) | SEEN | flags);
    if (!(flags & COMMON)) this.#nonCommon++;
    this.#queue.push(c);
  }

  /** Marks one commit common, keeping the count of queued non-common commits right. */
  #setCommon(oid: ObjectId): boolean {
    const f = this.#flags.get(oid) ?? 0;
    if (f & COMMON) return false;
    if (f & SEEN && !(f & POPPED)) this.#nonCommon--;
    this.#flags.set(oid, f | COMMON);
    return true;
  }

  /** A local ref tip. */
  async addTip(oid: ObjectId): Promise<void> {
    const c = await this.#commit(oid);
    if (c && !((this.#flags.get(c.oid) ?? 0) & SEEN)) this.#enqueue(c, 0);
  }

  /** A remote tip we have: send it, never its ancestors. */
  async knownCommon(oid: ObjectId): Promise<void> {
    const c = await this.#commit(oid);
    if (!c || (this.#flags.get(c.oid) ?? 0) & SEEN) return;
    this.#enqueue(c, COMMON_REF);
    await this.#markAncestorsCommon(c);
  }

  /** The server has `oid`: it and its ancestors are common. */
  async ack(oid: ObjectId): Promise<void> {
    const c = await this.#graph.commit(oid);
    if (!c) return;
    const f = this.#flags.get(c.oid) ?? 0;
    if (!(f & SEEN)) {
      this.#enqueue(c, COMMON);
      return; // popping it marks its parents
    }
    if (this.#setCommon(c.oid) && f & POPPED) await this.#markAncestorsCommon(c);
  }

  /** git's mark_common: through commits already seen; unseen ones get marked when popped. */
  async #markAncestorsCommon(start: CommitNode): Promise<void> {
    const stack: CommitNode[] = [start];
    while (stack.length > 0) {
      const c = stack.pop() as CommitNode;
      for (const p of c.parents) {
        const pf = this.#flags.get(p) ?? 0;
        if (pf & COMMON) continue;
        const pc = await this.#graph.commit(p);
        if (!pc) continue;
        if (!(pf & SEEN)) {
          this.#enqueue(pc, COMMON);
          continue;
        }
        this.#setCommon(p);
        if (pf & POPPED) stack.push(pc);
      }
    }
  }

  /** The next have to send, or `undefined` when there is nothing left worth sending. */
  async next(): Promise<ObjectId | undefined> {
    while (this.#nonCommon > 0) {
      const c = this.#queue.pop();
      if (!c) return undefined;
      const f = this.#flags.get(c.oid) ?? 0;
      this.#flags.set(c.oid, f | POPPED);
      const common = (f & COMMON) !== 0;
      if (!common) this.#nonCommon--;
      const parentsCommon = common || (f & COMMON_REF) !== 0;
      for (const p of c.parents) {
        const pf = this.#flags.get(p) ?? 0;
        if (pf & SEEN) {
          if (parentsCommon && this.#setCommon(p) && pf & POPPED) {
            const pc = await this.#graph.commit(p);
            if (pc) await this.#markAncestorsCommon(pc);
          }
          continue;
        }
        const pc = await this.#graph.commit(p);
        if (pc) this.#enqueue(pc, parentsCommon ? COMMON : 0);
      }
      if (!common) return c.oid;
    }
    return undefined;
  }
}
