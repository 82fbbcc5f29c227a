/** The requests this bus is waiting on: who was asked, how to settle the caller, and by when. */
import { randomId } from './request-id.js';

export class Pending {
  /** performance.now() deadline, or Infinity. */
  deadline = Number.POSITIVE_INFINITY;
  name = '';
  onAbort: (() => void) | undefined;
  constructor(
    readonly peer: string,
    readonly resolve: (value: never) => void,
    readonly reject: (error: unknown) => void,
    readonly signal: AbortSignal | undefined,
  ) {}
}

/**
 * Pending requests by id. The first one has a slot of its own and only the others go in a Map: a
 * Map allocates as entries come and go (a new table whenever it shrinks or fills with deleted
 * entries), and one call at a time would otherwise pay that on every call.
 */
export class PendingTable {
  private loneId = Number.NaN;
  private lone: Pending | undefined;
  private readonly more = new Map<number, Pending>();
  /** The id source, kept at hand: called per request, it is reached through the table, not a module binding. */
  private readonly draw = randomId;

  get size(): number {
    return (this.lone === undefined ? 0 : 1) + this.more.size;
  }

  get(id: number): Pending | undefined {
    return id === this.loneId ? this.lone : this.more.get(id);
  }

  /** An id for a new request: random, and not one still pending (as the lone slot assumes). */
  newId(): number {
    let id = this.draw();
    while (this.get(id) !== undefined) id = this.draw();
    return id;
  }

  /** Adds a request under an id not pending (see newId). */
  add(
    id: number,
    peer: string,
    resolve: (value: never) => void,
    reject: (error: unknown) => void,
    signal: AbortSignal | undefined,
  ): Pending {
    const pending = new Pending(peer, resolve, reject, signal);
    if (this.lone === undefined) {
      this.loneId = id;
      this.lone = pending;
    } else {
      this.more.set(id, pending);
    }
    return pending;
  }

  delete(id: number): void {
    if (id === this.loneId) {
      this.loneId = Number.NaN;
      this.lone = undefined;
    } else {
      this.more.delete(id);
    }
  }

  /** A copy of the entries, to settle while iterating. */
  entries(): [number, Pending][] {
    const all: [number, Pending][] = this.lone === undefined ? [] : [[this.loneId, this.lone]];
    for (const entry of this.more) all.push(entry);
    return all;
  }
}
