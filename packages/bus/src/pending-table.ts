/** The requests this bus is waiting on: who was asked, how to settle the caller, and by when. */

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

  get size(): number {
    return (this.lone === undefined ? 0 : 1) + this.more.size;
  }

  get(id: number): Pending | undefined {
    return id === this.loneId ? this.lone : this.more.get(id);
  }

  /** Adds a request under an id not pending (see request). */
  add(id: number, pending: Pending): void {
    if (this.lone === undefined) {
      this.loneId = id;
      this.lone = pending;
    } else {
      this.more.set(id, pending);
    }
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
