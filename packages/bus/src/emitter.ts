/**
 * The local emitter: `on(name, fn, { once, priority, signal })` returns an unsubscribe function,
 * `emit(name, payload)` calls the listeners of `name`, then the wildcard listeners whose pattern
 * matches (`ns:*` for every name starting with `ns:`, `*` for every name), pattern by pattern in
 * the order the patterns were first registered.
 *
 * Guarantees, whichever way a listener was added:
 * - an emit calls the listeners registered when it started, in order (higher `priority` first, then
 *   registration order); listeners added or removed during an emit take effect from the next emit;
 * - no listener is silently dropped: if one throws, the others still run and the first error is
 *   rethrown after the last listener (an AggregateError when several threw);
 * - a `once` listener runs at most once, even when its event is emitted again from inside a listener;
 * - calling an unsubscribe function twice is harmless; registering the same function twice gives two
 *   registrations, each removed by its own unsubscribe function.
 *
 * Speed: one plain object maps names to listener lists (a monomorphic keyed load, like the fastest
 * small emitters); lists are own properties branded with their emitter, so inherited names
 * (`constructor`, `toString`, `__proto__`) are never called. A single listener sits in a slot of
 * its own (no array), so on+off and emit-1 touch no array at all; two or more sit in an array that
 * is replaced, never mutated (copy-on-write), so an emit walks it without bookkeeping. Emptied
 * lists are kept for reuse and swept when many pile up.
 */

export type Listener<P = unknown, M = string> = (payload: P, meta: M) => void;

export interface OnOptions {
  /** Remove the listener after its first call. */
  once?: boolean;
  /** Higher runs first; equal priorities run in registration order. Default 0. */
  priority?: number;
  /** Removes the listener when aborted. */
  signal?: AbortSignal;
}

class ListenerList<M> {
  /** The only listener, while there is exactly one (and no priorities): no array at all. */
  one: Listener<unknown, M> | null = null;
  /** Two or more listeners (or any with a priority), in call order; null otherwise. Never mutated
   *  once set (copy-on-write), so an emit walking it is never disturbed. */
  fns: Listener<unknown, M>[] | null = null;
  /** Parallel to `fns`; null while every priority is 0. */
  prios: number[] | null = null;
  constructor(
    /** The emitter that made this list: an unforgeable brand (a polluted prototype cannot fake it). */
    readonly owner: EmitterCore<M>,
    readonly prefix: string | undefined,
  ) {}

  get size(): number {
    return this.one !== null ? 1 : this.fns === null ? 0 : this.fns.length;
  }

  snapshot(): Listener<unknown, M>[] {
    return this.one !== null ? [this.one] : this.fns === null ? [] : this.fns;
  }
}

const noop = (): void => {};
const SWEEP_AT = 256;

/** '' for `*`, 'ns:' for `ns:*`, undefined for an exact name. */
function wildcardPrefix(name: string): string | undefined {
  if (name === '*') return '';
  const n = name.length;
  if (n > 2 && name.charCodeAt(n - 1) === 42 && name.charCodeAt(n - 2) === 58) return name.slice(0, -1);
  return undefined;
}

type Lists<M> = Record<string, ListenerList<M> | undefined>;

function setList<M>(lists: Lists<M>, name: string, list: ListenerList<M>): void {
  if (name === '__proto__') Object.defineProperty(lists, name, { value: list, writable: true, enumerable: true });
  else lists[name] = list;
}

function own<M>(lists: Lists<M>, name: string): ListenerList<M> | undefined {
  return Object.hasOwn(lists, name) ? lists[name] : undefined;
}

/** The emitter core, generic over what listeners receive as their second argument. */
export class EmitterCore<M = string> {
  private lists: Lists<M> = {};
  private wild: ListenerList<M>[] = [];
  /** Lists made since the last sweep; a sweep runs when it passes `sweepAt`. */
  private created = 0;
  private sweepAt = SWEEP_AT;

  on(name: string, fn: Listener<unknown, M>, options?: OnOptions): () => void {
    if (typeof fn !== 'function') throw new TypeError('listener must be a function');
    if (options !== undefined) return this.onWithOptions(name, fn, options);
    let list = this.lists[name];
    if (list === undefined || list.owner !== this) list = this.list(name);
    if (list.one === null && list.fns === null) {
      list.one = fn;
    } else {
      insert(list, fn, 0);
    }
    const target = list;
    let registered: Listener<unknown, M> | null = fn; // null once unsubscribed
    return () => {
      if (registered !== null) {
        const removing = registered;
        registered = null;
        // The common case inline: the only listener of an exact name leaves its slot.
        if (target.one === removing && target.prefix === undefined) target.one = null;
        else this.remove(target, removing, 0);
      }
    };
  }

  private onWithOptions(name: string, fn: Listener<unknown, M>, options: OnOptions): () => void {
    const signal = options.signal;
    if (signal?.aborted) return noop;
    const priority = options.priority ?? 0;
    if (typeof priority !== 'number' || Number.isNaN(priority)) throw new TypeError('priority must be a number');
    const list = this.list(name);
    let registered = fn;
    let active = true;
    const off = (): void => {
      if (!active) return;
      active = false;
      signal?.removeEventListener('abort', off);
      this.remove(list, registered, priority);
    };
    if (options.once === true) {
      registered = (payload, meta) => {
        if (!active) return;
        off();
        fn(payload, meta);
      };
    }
    signal?.addEventListener('abort', off, { once: true });
    if (priority === 0 && list.one === null && list.fns === null) list.one = registered;
    else insert(list, registered, priority);
    return off;
  }

  private list(name: string): ListenerList<M> {
    const existing = this.lists[name];
    if (existing !== undefined && existing.owner === this) return existing;
    const prefix = wildcardPrefix(name);
    if (prefix !== undefined) {
      for (const list of this.wild) if (list.prefix === prefix) return list;
      const list = new ListenerList<M>(this, prefix);
      this.wild = [...this.wild, list];
      return list;
    }
    if (++this.created > this.sweepAt) this.sweep();
    const list = new ListenerList<M>(this, undefined);
    setList(this.lists, name, list);
    return list;
  }

  private remove(list: ListenerList<M>, fn: Listener<unknown, M>, priority: number): void {
    if (list.one !== null) {
      if (list.one !== fn || priority !== 0) return;
      list.one = null;
    } else {
      let fns = list.fns;
      if (fns === null) return;
      let prios = list.prios;
      let at = fns.length - 1;
      while (at >= 0 && (fns[at] !== fn || (prios !== null ? prios[at] : 0) !== priority)) at--;
      if (at < 0) return;
      fns = fns.slice();
      if (prios !== null) prios = prios.slice();
      fns.splice(at, 1);
      prios?.splice(at, 1);
      if (fns.length === 0) {
        list.fns = null;
        list.prios = null;
      } else if (fns.length === 1 && prios === null) {
        list.one = fns[0]!;
        list.fns = null;
      } else {
        list.fns = fns;
        list.prios = prios;
      }
    }
    // An emptied pattern goes at once: any pattern sends every emit down the slower path.
    if (list.prefix !== undefined && list.one === null && list.fns === null) {
      this.wild = this.wild.filter((w) => w !== list);
    }
  }

  /**
   * Forgets emptied lists (kept until now so that on+off cycles reuse them). Runs when the number
   * of lists made since the last sweep passes twice the lists then alive: amortised O(1) per name.
   */
  private sweep(): void {
    const lists: Lists<M> = {};
    let live = 0;
    for (const name of Object.keys(this.lists)) {
      const list = own(this.lists, name);
      if (list !== undefined && list.size > 0) {
        setList(lists, name, list);
        live++;
      }
    }
    this.lists = lists;
    this.wild = this.wild.filter((list) => list.size > 0);
    this.created = live;
    this.sweepAt = Math.max(SWEEP_AT, 2 * live);
  }

  /** Calls the listeners of `name` (then matching wildcard listeners) with `(payload, meta)`. */
  dispatch(name: string, payload: unknown, meta: M): void {
    // A plain object's keyed load is the fastest lookup V8 has; inherited names (`constructor`,
    // `__proto__`, `toString`) yield values that are not our lists and count as "no listeners".
    const list = this.lists[name];
    if (list !== undefined && list.owner === this) {
      if (this.wild.length === 0) {
        const one = list.one;
        if (one !== null) one(payload, meta);
        else if (list.fns !== null) callEach(list.fns, payload, meta, name);
        return;
      }
      this.slow(list, name, payload, meta);
    } else if (this.wild.length !== 0) {
      this.slow(undefined, name, payload, meta);
    }
  }

  private slow(list: ListenerList<M> | undefined, name: string, payload: unknown, meta: M): void {
    let errors: unknown[] | undefined;
    if (list !== undefined) errors = callAll(list, payload, meta, errors);
    const wild = this.wild; // replaced, never mutated: a stable snapshot
    for (let i = 0; i < wild.length; i++) {
      const w = wild[i]!;
      if (name.startsWith(w.prefix!)) errors = callAll(w, payload, meta, errors);
    }
    if (errors !== undefined) throwAll(errors, name);
  }

  /** Number of listeners registered exactly under `name` (a pattern such as `ns:*` counts its own). */
  listenerCount(name: string): number {
    const prefix = wildcardPrefix(name);
    if (prefix !== undefined) return this.wild.find((list) => list.prefix === prefix)?.size ?? 0;
    return own(this.lists, name)?.size ?? 0;
  }

  /** Removes every listener (unsubscribe functions already handed out stay harmless). */
  clear(): void {
    for (const name of Object.keys(this.lists)) {
      const list = own(this.lists, name);
      if (list !== undefined) {
        list.one = null;
        list.fns = null;
        list.prios = null;
      }
    }
    for (const list of this.wild) {
      list.one = null;
      list.fns = null;
      list.prios = null;
    }
    this.lists = {};
    this.wild = [];
    this.created = 0;
    this.sweepAt = SWEEP_AT;
  }
}

function insert<M>(list: ListenerList<M>, fn: Listener<unknown, M>, priority: number): void {
  let fns: Listener<unknown, M>[];
  let prios = list.prios;
  if (list.one !== null) {
    fns = [list.one];
    list.one = null;
  } else {
    fns = list.fns === null ? [] : list.fns.slice();
  }
  if (priority === 0 && prios === null) {
    fns.push(fn);
    list.fns = fns;
    return;
  }
  prios = prios === null ? new Array<number>(fns.length).fill(0) : prios.slice();
  let at = fns.length;
  while (at > 0 && prios[at - 1]! < priority) at--;
  fns.splice(at, 0, fn);
  prios.splice(at, 0, priority);
  list.fns = fns;
  list.prios = prios;
}

/** The hot loop for two or more listeners; small enough to be inlined into dispatch. */
function callEach<M>(fns: Listener<unknown, M>[], payload: unknown, meta: M, name: string): void {
  const n = fns.length;
  let i = 0;
  try {
    for (; i < n; i++) fns[i]!(payload, meta);
  } catch (error) {
    const errors = [error];
    for (i++; i < n; i++) {
      try {
        fns[i]!(payload, meta);
      } catch (more) {
        errors.push(more);
      }
    }
    throwAll(errors, name);
  }
}

function callAll<M>(list: ListenerList<M>, payload: unknown, meta: M, errors: unknown[] | undefined) {
  const one = list.one;
  const fns = one !== null ? [one] : list.fns;
  if (fns === null) return errors;
  for (let i = 0; i < fns.length; i++) {
    try {
      fns[i]!(payload, meta);
    } catch (error) {
      (errors ??= []).push(error);
    }
  }
  return errors;
}

function throwAll(errors: unknown[], name: string): never {
  if (errors.length === 1) throw errors[0];
  throw new AggregateError(errors, `${errors.length} listeners of "${name}" threw`);
}

export interface Emitter {
  on(name: string, fn: Listener<unknown, string>, options?: OnOptions): () => void;
  /** Listeners receive `(payload, name)`. */
  emit(name: string, payload?: unknown): void;
  listenerCount(name: string): number;
  clear(): void;
}

class LocalEmitter extends EmitterCore<string> implements Emitter {
  emit(name: string, payload?: unknown): void {
    this.dispatch(name, payload, name);
  }
}

/** A fast local emitter with once, priority, AbortSignal and `*` / `ns:*` wildcards. */
export function createEmitter(): Emitter {
  return new LocalEmitter();
}
