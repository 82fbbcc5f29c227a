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

/** Slots a new table starts with (a power of two). */
const INITIAL_SLOTS = 32;

/**
 * Pending requests by id, in an array of slots: a request sits in the slot a hash of its id names,
 * and a new request's id is drawn again until that slot is free (at most half of them are taken,
 * so a draw or two). A lookup is then a hash and a compare, and a request coming and going
 * allocates nothing, where a Map keyed by the ids rebuilds its table as entries come and go. The
 * ids stay 53 random bits each. The hash mixes all of them, so a random source that repeats
 * itself in its low bits still finds free slots; an id whose slot was taken in between (a request
 * made while another is being posted) waits in a Map beside.
 */
export class PendingTable {
  private ids: number[] = new Array<number>(INITIAL_SLOTS).fill(Number.NaN);
  private slots: (Pending | undefined)[] = new Array<Pending | undefined>(INITIAL_SLOTS).fill(undefined);
  /** 32 minus log2 of the number of slots: a slot is the top bits of the hash. */
  private shift = 32 - Math.log2(INITIAL_SLOTS);
  private count = 0;
  private readonly overflow = new Map<number, Pending>();
  /** The id source, kept at hand: called per request, it is reached through the table, not a module binding. */
  private readonly draw = randomId;

  get size(): number {
    return this.count + this.overflow.size;
  }

  /** The slot of `id`: both halves of the id (a whole number below 2^53) mixed, then the top bits. */
  private slotOf(id: number): number {
    const mixed = (id | 0) ^ Math.imul((id / 0x1_0000_0000) | 0, 0x85ebca6b);
    return Math.imul(mixed, 0x9e3779b1) >>> this.shift;
  }

  get(id: number): Pending | undefined {
    const slot = this.slotOf(id);
    if (this.ids[slot] === id) return this.slots[slot];
    return this.overflow.size === 0 ? undefined : this.overflow.get(id);
  }

  /** An id for a new request: random, and its slot free (as `add` assumes). */
  newId(): number {
    if (2 * (this.count + 1) > this.slots.length) this.grow();
    let id = this.draw();
    while (this.slots[this.slotOf(id)] !== undefined) id = this.draw();
    return id;
  }

  /** Adds a request under an id from `newId` (nothing added in between). */
  add(
    id: number,
    peer: string,
    resolve: (value: never) => void,
    reject: (error: unknown) => void,
    signal: AbortSignal | undefined,
  ): Pending {
    const pending = new Pending(peer, resolve, reject, signal);
    const slot = this.slotOf(id);
    if (this.slots[slot] !== undefined) {
      this.overflow.set(id, pending);
      return pending;
    }
    this.ids[slot] = id;
    this.slots[slot] = pending;
    this.count++;
    return pending;
  }

  delete(id: number): void {
    const slot = this.slotOf(id);
    if (this.ids[slot] !== id) {
      this.overflow.delete(id);
      return;
    }
    this.ids[slot] = Number.NaN;
    this.slots[slot] = undefined;
    this.count--;
  }

  /** A copy of the entries, to settle while iterating. */
  entries(): [number, Pending][] {
    const all: [number, Pending][] = [];
    if (this.count > 0) {
      for (let slot = 0; slot < this.slots.length; slot++) {
        const pending = this.slots[slot];
        if (pending !== undefined) all.push([this.ids[slot]!, pending]);
      }
    }
    for (const entry of this.overflow) all.push(entry);
    return all;
  }

  /** Twice the slots: ids apart in the top bits of their hash stay apart in one more. */
  private grow(): void {
    const ids = this.ids;
    const slots = this.slots;
    const length = slots.length * 2;
    this.ids = new Array<number>(length).fill(Number.NaN);
    this.slots = new Array<Pending | undefined>(length).fill(undefined);
    this.shift--;
    for (let slot = 0; slot < slots.length; slot++) {
      const pending = slots[slot];
      if (pending === undefined) continue;
      const id = ids[slot]!;
      const to = this.slotOf(id);
      this.ids[to] = id;
      this.slots[to] = pending;
    }
  }
}
