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
 * (`constructor`, `toString`, `__proto__`) are never called.
 * - A single listener sits in a slot of its own (no array), so on+off and emit-1 touch no array.
 * - Two or more sit in an array that is replaced, never mutated (copy-on-write), and each
 *   replacement also builds the list's dispatcher. `createEmitter`'s, for 2 to 16 listeners, is a
 *   closure holding each listener in a variable of its own and calling them one after the other
 *   (every call site sees one function, as in code generated with eval, but without eval); beyond
 *   16 a loop. The bus's event lists use the loop alone (`EmitterCore` takes the dispatcher
 *   factory, so a bundle without `createEmitter` leaves the written-out table out). An emit calls
 *   the dispatcher it found when it started, so a change during the emit never disturbs it.
 * - A registration is identified by a number, counted per list and never reused; the unsubscribe
 *   function (a closure over the list and that number) is all `on` allocates, and registering
 *   stores only the listener and the number in the long-lived list, never a pointer to a fresh
 *   object (no old-to-young write for the garbage collector to remember). A stale unsubscribe
 *   function finds its number nowhere, so calling it again is harmless.
 * - Emptied lists are kept for reuse and swept when many pile up.
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

type Unsubscribe = () => void;
/** Calls a list's listeners (two or more) in order; `name` is for the error message only. */
type Dispatcher<M> = (payload: unknown, meta: M, name: string) => void;
/** Builds the dispatcher of a fresh listener array (two or more listeners, never mutated afterwards). */
type DispatcherFactory = <M>(f: Listener<unknown, M>[]) => Dispatcher<M>;

class ListenerList<M> {
  /** The only listener, while there is exactly one (and no priorities): no array at all. */
  one: Listener<unknown, M> | null = null;
  /** The registration number of `one`; 0 when `one` is null. */
  oneId = 0;
  /** The last registration number given out in this list (never reused, so a stale unsubscribe
   *  function can never match a later registration). */
  seq = 0;
  /** Otherwise every listener in call order, or null when there are none. Never mutated once set
   *  (copy-on-write): `ids`, `prios` and `call` are replaced together with it. */
  fns: Listener<unknown, M>[] | null = null;
  /** Parallel to `fns`: each registration's number. */
  ids: number[] | null = null;
  /** Parallel to `fns`; null while every priority is 0. */
  prios: number[] | null = null;
  /** Calls `fns` in order; null exactly when `fns` is. */
  call: Dispatcher<M> | null = null;
  constructor(
    /** The emitter that made this list: an unforgeable brand (a polluted prototype cannot fake it). */
    readonly owner: EmitterCore<M>,
    readonly prefix: string | undefined,
  ) {}

  get size(): number {
    return this.one !== null ? 1 : this.fns === null ? 0 : this.fns.length;
  }
}

/**
 * The unsubscribe function of registration `id` of `list`. Its context holds the list and a small
 * integer, so registering writes only that integer (no pointer) into the long-lived list.
 */
function unsubscriber<M>(list: ListenerList<M>, id: number): Unsubscribe {
  return () => {
    if (list.oneId === id) {
      list.one = null;
      list.oneId = 0;
      if (list.prefix !== undefined) list.owner.dropPattern(list);
    } else if (list.ids !== null) {
      list.owner.removeRegistration(list, id);
    }
  };
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

/**
 * The emitter core, generic over what listeners receive as their second argument. `makeCall`
 * builds the dispatcher of each list of two or more listeners (a loop unless told otherwise).
 */
export class EmitterCore<M = string> {
  constructor(readonly makeCall: DispatcherFactory = loopDispatcher) {}
  protected lists: Lists<M> = {};
  protected wild: ListenerList<M>[] = [];
  /** Lists made since the last sweep; a sweep runs when it passes `sweepAt`. */
  private created = 0;
  private sweepAt = SWEEP_AT;

  on(name: string, fn: Listener<unknown, M>, options?: OnOptions): () => void {
    // The hot path (no options, a list that exists and is empty) is kept small enough to inline.
    const list = this.lists[name];
    if (
      options === undefined &&
      list !== undefined &&
      list.owner === this &&
      list.one === null &&
      list.fns === null &&
      typeof fn === 'function'
    ) {
      const id = ++list.seq;
      list.one = fn;
      list.oneId = id;
      return unsubscriber(list, id);
    }
    return this.onSlow(name, fn, options);
  }

  private onSlow(name: string, fn: Listener<unknown, M>, options: OnOptions | undefined): () => void {
    if (typeof fn !== 'function') throw new TypeError('listener must be a function');
    if (options !== undefined) return this.onWithOptions(name, fn, options);
    const list = this.list(name);
    const id = ++list.seq;
    if (list.one === null && list.fns === null) {
      list.one = fn;
      list.oneId = id;
    } else {
      insert(list, fn, id, 0);
    }
    return unsubscriber(list, id);
  }

  private onWithOptions(name: string, fn: Listener<unknown, M>, options: OnOptions): () => void {
    const signal = options.signal;
    if (signal?.aborted) return noop;
    const priority = options.priority ?? 0;
    if (typeof priority !== 'number' || Number.isNaN(priority)) throw new TypeError('priority must be a number');
    const list = this.list(name);
    const id = ++list.seq;
    const registration = unsubscriber(list, id);
    let registered = fn;
    let active = true;
    const off = (): void => {
      if (!active) return;
      active = false;
      signal?.removeEventListener('abort', off);
      registration();
    };
    if (options.once === true) {
      registered = (payload, meta) => {
        if (!active) return;
        off();
        fn(payload, meta);
      };
    }
    signal?.addEventListener('abort', off, { once: true });
    if (priority === 0 && list.one === null && list.fns === null) {
      list.one = registered;
      list.oneId = id;
    } else {
      insert(list, registered, id, priority);
    }
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

  /** For `unsubscriber` only: removes registration `id` from the arrays of `list`, if it is there. */
  removeRegistration(list: ListenerList<M>, id: number): void {
    const ids = list.ids;
    if (ids === null) return;
    let at = ids.length - 1;
    while (at >= 0 && ids[at] !== id) at--;
    if (at < 0) return;
    const fns = list.fns!.slice();
    const nextIds = ids.slice();
    const prios = list.prios === null ? null : list.prios.slice();
    fns.splice(at, 1);
    nextIds.splice(at, 1);
    prios?.splice(at, 1);
    replace(list, fns, nextIds, prios);
    if (list.prefix !== undefined) this.dropPattern(list);
  }

  /** For `ListenerList` only: an emptied pattern goes at once (any pattern slows every emit). */
  dropPattern(list: ListenerList<M>): void {
    if (list.one === null && list.fns === null) this.wild = this.wild.filter((w) => w !== list);
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
        if (one !== null) {
          one(payload, meta);
        } else {
          const call = list.call;
          if (call !== null) call(payload, meta, name);
        }
        return;
      }
      this.slow(list, name, payload, meta);
    } else if (this.wild.length !== 0) {
      this.slow(undefined, name, payload, meta);
    }
  }

  private slow(list: ListenerList<M> | undefined, name: string, payload: unknown, meta: M): void {
    // Every snapshot is taken before the first call, so that a listener changing another list
    // (a pattern's, say) cannot disturb this emit either.
    const exact = list === undefined ? null : snapshot(list);
    let matched: Listener<unknown, M>[][] | undefined;
    const wild = this.wild; // replaced, never mutated: a stable snapshot
    for (let i = 0; i < wild.length; i++) {
      const w = wild[i]!;
      if (name.startsWith(w.prefix!)) {
        const fns = snapshot(w);
        if (fns !== null) (matched ??= []).push(fns);
      }
    }
    let errors: unknown[] | undefined;
    if (exact !== null) errors = callAll(exact, payload, meta, errors);
    if (matched !== undefined) for (const fns of matched) errors = callAll(fns, payload, meta, errors);
    if (errors !== undefined) throwAll(errors, name);
  }

  /** Removes every listener (unsubscribe functions already handed out stay harmless). */
  clear(): void {
    for (const name of Object.keys(this.lists)) {
      const list = own(this.lists, name);
      if (list !== undefined) replace(list, [], [], null);
    }
    for (const list of this.wild) replace(list, [], [], null);
    this.lists = {};
    this.wild = [];
    this.created = 0;
    this.sweepAt = SWEEP_AT;
  }
}

/** Installs fresh (never to be mutated) arrays in `list`, in the single slot when they allow it. */
function replace<M>(list: ListenerList<M>, fns: Listener<unknown, M>[], ids: number[], prios: number[] | null): void {
  if (fns.length === 0 || (fns.length === 1 && prios === null)) {
    list.one = fns.length === 0 ? null : fns[0]!;
    list.oneId = fns.length === 0 ? 0 : ids[0]!;
    list.fns = null;
    list.ids = null;
    list.prios = null;
    list.call = null;
  } else {
    list.one = null;
    list.oneId = 0;
    list.fns = fns;
    list.ids = ids;
    list.prios = prios;
    list.call = list.owner.makeCall(fns);
  }
}

function insert<M>(list: ListenerList<M>, fn: Listener<unknown, M>, id: number, priority: number): void {
  let fns: Listener<unknown, M>[];
  let ids: number[];
  if (list.one !== null) {
    fns = [list.one];
    ids = [list.oneId];
  } else if (list.fns === null) {
    fns = [];
    ids = [];
  } else {
    fns = list.fns.slice();
    ids = list.ids!.slice();
  }
  let prios = list.prios;
  if (priority === 0 && prios === null) {
    fns.push(fn);
    ids.push(id);
  } else {
    prios = prios === null ? new Array<number>(fns.length).fill(0) : prios.slice();
    let at = fns.length;
    while (at > 0 && prios[at - 1]! < priority) at--;
    fns.splice(at, 0, fn);
    ids.splice(at, 0, id);
    prios.splice(at, 0, priority);
  }
  replace(list, fns, ids, prios);
}

/**
 * The dispatcher for a fresh listener array `f` (length 1 or more, never mutated afterwards).
 * `i` is the index of the listener after the one being called, so a throw resumes there.
 * Written out up to 16 listeners: each call is a direct call of a local that V8 can inline, where
 * the plain loop over `f` that longer lists use makes one megamorphic call per element
 * (emitter.bench.ts measures both).
 */
// biome-ignore format: one listener per variable, written out (the point of this table)
function dispatcher<M>(f: Listener<unknown, M>[]): Dispatcher<M> {
  switch (f.length) {
    case 1: {
      const a = f[0]!;
      return (p, m) => a(p, m);
    }
    case 2: {
      const a = f[0]!, b = f[1]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 3: {
      const a = f[0]!, b = f[1]!, c = f[2]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 4: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 5: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 6: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 7: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 8: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 9: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 10: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 11: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 12: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!, q = f[11]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m); i = 12; q(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 13: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!, q = f[11]!, r = f[12]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m); i = 12; q(p, m);
          i = 13; r(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 14: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!, q = f[11]!, r = f[12]!, s = f[13]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m); i = 12; q(p, m);
          i = 13; r(p, m); i = 14; s(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 15: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!, q = f[11]!, r = f[12]!, s = f[13]!, t = f[14]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m); i = 12; q(p, m);
          i = 13; r(p, m); i = 14; s(p, m); i = 15; t(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    case 16: {
      const a = f[0]!, b = f[1]!, c = f[2]!, d = f[3]!, g = f[4]!, h = f[5]!, j = f[6]!, k = f[7]!, l = f[8]!, n = f[9]!, o = f[10]!, q = f[11]!, r = f[12]!, s = f[13]!, t = f[14]!, u = f[15]!;
      return (p, m, name) => {
        let i = 1;
        try {
          a(p, m); i = 2; b(p, m); i = 3; c(p, m); i = 4; d(p, m);
          i = 5; g(p, m); i = 6; h(p, m); i = 7; j(p, m); i = 8; k(p, m);
          i = 9; l(p, m); i = 10; n(p, m); i = 11; o(p, m); i = 12; q(p, m);
          i = 13; r(p, m); i = 14; s(p, m); i = 15; t(p, m); i = 16; u(p, m);
        } catch (error) { rest(f, i, error, p, m, name); }
      };
    }
    default:
      return loopDispatcher(f);
  }
}

/** Runs the listeners from `from` on after one threw, then throws what was thrown. */
function rest<M>(f: Listener<unknown, M>[], from: number, error: unknown, p: unknown, m: M, name: string): never {
  const errors = [error];
  for (let i = from; i < f.length; i++) {
    try {
      f[i]!(p, m);
    } catch (more) {
      errors.push(more);
    }
  }
  throwAll(errors, name);
}

/** The dispatcher that loops over its listeners: the bus's, and `createEmitter`'s beyond 16. */
function loopDispatcher<M>(f: Listener<unknown, M>[]): Dispatcher<M> {
  return (p, m, name) => callEach(f, p, m, name);
}

/** The loop over a list's listeners. */
function callEach<M>(fns: Listener<unknown, M>[], payload: unknown, meta: M, name: string): void {
  const n = fns.length;
  let i = 0;
  try {
    for (; i < n; i++) fns[i]!(payload, meta);
  } catch (error) {
    rest(fns, i + 1, error, payload, meta, name);
  }
}

/** The listeners of `list` as they are now (arrays in lists are never mutated), or null. */
function snapshot<M>(list: ListenerList<M>): Listener<unknown, M>[] | null {
  return list.one !== null ? [list.one] : list.fns;
}

function callAll<M>(fns: Listener<unknown, M>[], payload: unknown, meta: M, errors: unknown[] | undefined) {
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

  /** Number of listeners registered exactly under `name` (a pattern such as `ns:*` counts its own). */
  listenerCount(name: string): number {
    const prefix = wildcardPrefix(name);
    if (prefix !== undefined) return this.wild.find((list) => list.prefix === prefix)?.size ?? 0;
    return own(this.lists, name)?.size ?? 0;
  }
}

/** A fast local emitter with once, priority, AbortSignal and `*` / `ns:*` wildcards. */
export function createEmitter(): Emitter {
  return new LocalEmitter(dispatcher);
}
