/**
 * The local emitter: `on(name, fn, { once, priority, signal })` returns an unsubscribe function,
 * `emit(name, payload)` calls the listeners of `name`, then the wildcard listeners whose pattern
 * matches (`ns:*` for every name starting with `ns:`, `*` for every name).
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
 * Speed: lists are mutated in place when no emit is walking them and copied only when one is
 * (copy-on-write guarded by an `emitting` counter), so on+off costs one push and one pop.
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
  fns: Listener<unknown, M>[] = [];
  /** Parallel priorities; null while every priority is 0. */
  prios: number[] | null = null;
  emitting = 0;
}

const noop = (): void => {};

/** True for `*` and `prefix:*` patterns. */
function wildcardPrefix(name: string): string | undefined {
  if (name === '*') return '';
  if (name.length > 2 && name.charCodeAt(name.length - 1) === 42 && name.charCodeAt(name.length - 2) === 58) {
    return name.slice(0, -1);
  }
  return undefined;
}

/** The emitter core, generic over what listeners receive as their second argument. */
export class EmitterCore<M = string> {
  private readonly exact = new Map<string, ListenerList<M>>();
  private readonly wild = new Map<string, ListenerList<M>>();

  on(name: string, fn: Listener<unknown, M>, options?: OnOptions): () => void {
    if (typeof fn !== 'function') throw new TypeError('listener must be a function');
    if (options?.signal?.aborted) return noop;
    const prefix = wildcardPrefix(name);
    const map = prefix === undefined ? this.exact : this.wild;
    const key = prefix === undefined ? name : prefix;
    let list = map.get(key);
    if (list === undefined) {
      list = new ListenerList<M>();
      map.set(key, list);
    }
    let registered: Listener<unknown, M> = fn;
    let active = true;
    const priority = options?.priority ?? 0;
    const signal = options?.signal;
    const off = (): void => {
      if (!active) return;
      active = false;
      if (signal !== undefined) signal.removeEventListener('abort', off);
      this.remove(map, key, registered, priority);
    };
    if (options !== undefined) {
      if (options.once === true) {
        let fired = false;
        registered = (payload, meta) => {
          if (fired) return;
          fired = true;
          off();
          fn(payload, meta);
        };
      }
      if (signal !== undefined) signal.addEventListener('abort', off, { once: true });
    }
    this.insert(list, registered, priority);
    return off;
  }

  private insert(list: ListenerList<M>, fn: Listener<unknown, M>, priority: number): void {
    let fns = list.fns;
    let prios = list.prios;
    if (priority === 0 && prios === null) {
      if (list.emitting === 0) fns.push(fn);
      else list.fns = [...fns, fn];
      return;
    }
    if (prios === null) prios = new Array<number>(fns.length).fill(0);
    else if (list.emitting !== 0) prios = prios.slice();
    if (list.emitting !== 0) fns = fns.slice();
    let at = fns.length;
    while (at > 0 && prios[at - 1]! < priority) at--;
    fns.splice(at, 0, fn);
    prios.splice(at, 0, priority);
    list.fns = fns;
    list.prios = prios;
  }

  private remove(map: Map<string, ListenerList<M>>, key: string, fn: Listener<unknown, M>, priority: number): void {
    const list = map.get(key);
    if (list === undefined) return;
    let fns = list.fns;
    let prios = list.prios;
    let at = fns.length - 1;
    while (at >= 0 && (fns[at] !== fn || (prios !== null && prios[at] !== priority))) at--;
    if (at < 0) return;
    if (fns.length === 1) {
      map.delete(key);
      if (list.emitting === 0) fns.pop();
      return;
    }
    if (list.emitting !== 0) {
      fns = fns.slice();
      if (prios !== null) prios = prios.slice();
    }
    if (at === fns.length - 1) {
      fns.pop();
      prios?.pop();
    } else {
      fns.splice(at, 1);
      prios?.splice(at, 1);
    }
    list.fns = fns;
    list.prios = prios;
  }

  /** Calls the listeners of `name` (then matching wildcard listeners) with `(payload, meta)`. */
  dispatch(name: string, payload: unknown, meta: M): void {
    const list = this.exact.get(name);
    if (list !== undefined) {
      const fns = list.fns;
      if (fns.length === 1) {
        if (this.wild.size === 0) {
          fns[0]!(payload, meta);
          return;
        }
        try {
          fns[0]!(payload, meta);
        } catch (error) {
          this.dispatchWild(name, payload, meta, [error]);
          return;
        }
      } else {
        const errors = this.callAll(list, payload, meta, undefined);
        if (errors !== undefined) {
          this.dispatchWild(name, payload, meta, errors);
          return;
        }
      }
    }
    if (this.wild.size !== 0) this.dispatchWild(name, payload, meta, undefined);
  }

  private callAll(
    list: ListenerList<M>,
    payload: unknown,
    meta: M,
    errors: unknown[] | undefined,
  ): unknown[] | undefined {
    const fns = list.fns;
    const n = fns.length;
    list.emitting++;
    for (let i = 0; i < n; i++) {
      try {
        fns[i]!(payload, meta);
      } catch (error) {
        (errors ??= []).push(error);
      }
    }
    list.emitting--;
    return errors;
  }

  private dispatchWild(name: string, payload: unknown, meta: M, errors: unknown[] | undefined): void {
    if (this.wild.size !== 0) {
      // Snapshot the matching lists first: listeners may add or remove patterns while we call.
      const lists: ListenerList<M>[] = [];
      for (const [prefix, list] of this.wild) if (name.startsWith(prefix)) lists.push(list);
      for (const list of lists) errors = this.callAll(list, payload, meta, errors);
    }
    if (errors === undefined) return;
    if (errors.length === 1) throw errors[0];
    throw new AggregateError(errors, `${errors.length} listeners of "${name}" threw`);
  }

  /** Number of listeners registered exactly under `name` (a pattern such as `ns:*` counts its own). */
  listenerCount(name: string): number {
    const prefix = wildcardPrefix(name);
    const list = prefix === undefined ? this.exact.get(name) : this.wild.get(prefix);
    return list === undefined ? 0 : list.fns.length;
  }

  /** Removes every listener (unsubscribe functions already handed out stay harmless). */
  clear(): void {
    this.exact.clear();
    this.wild.clear();
  }
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
