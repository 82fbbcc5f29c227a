/**
 * The control API of a host, exposed with comlink over `bus.endpoint(peer, 'gitport.control')`
 * to every peer of the bus: list, create and delete repositories, read refs, and subscribe to
 * ref updates (subscriptions end with `unsubscribe`, or when the peer is lost).
 *
 *   const api = control(bus, 'host');
 *   await api.create('notes');                       // GitportError code REPO_EXISTS if taken
 *   const id = await api.subscribe((event) => ..., 'notes');
 *
 * `subscribe` takes a plain function and marks it for comlink itself, with the copy of comlink
 * gitport imports: a `Comlink.proxy` made by the app's own copy carries that copy's marker,
 * which another copy does not know, so the function would reach `postMessage` unmarked.
 *
 * comlink carries a thrown error as its message, name and stack only, so the exposed object
 * never throws: every method answers a tagged result, `{ ok: true, value }` or
 * `{ ok: false, error: { code, message } }`, and `control()` turns failures back into
 * GitportErrors with their `code`.
 */
import type { Bus } from '@gitport/bus';
import * as Comlink from 'comlink';
import { GitportError, type GitportErrorCode } from './errors.js';
import type { RepositoryRegistry } from './registry.js';
import type { RefUpdateEvent } from './wire.js';

export const CONTROL_CHANNEL = 'gitport.control';

export interface RepositoryRefs {
  /** Where HEAD points (a ref name), or the id of a detached HEAD; absent when HEAD is missing. */
  head?: { kind: 'symbolic'; target: string } | { kind: 'direct'; oid: string };
  refs: { name: string; oid: string }[];
}

export interface ControlApi {
  list(): Promise<string[]>;
  create(name: string, options?: { defaultBranch?: string }): Promise<void>;
  delete(name: string): Promise<boolean>;
  refs(name: string, prefix?: string): Promise<RepositoryRefs>;
  /** Calls `listener` for every ref update, of `repo` only when given; answers a subscription id. */
  subscribe(listener: (event: RefUpdateEvent) => void, repo?: string): Promise<number>;
  unsubscribe(id: number): Promise<boolean>;
}

export type ControlResult<T> = { ok: true; value: T } | { ok: false; error: { code: string; message: string } };

/** What goes over comlink: the same methods, answering tagged results. */
export type ControlWire = {
  [K in keyof ControlApi]: (
    ...args: Parameters<ControlApi[K]>
  ) => Promise<ControlResult<Awaited<ReturnType<ControlApi[K]>>>>;
};

/** The client side: ControlApi plus the comlink proxy's release. */
export interface ControlClient extends ControlApi {
  /** Releases the comlink proxy (its port). */
  release(): void;
}

export interface ControlSource {
  registry: RepositoryRegistry;
  manage: boolean;
  onRefUpdate(listener: (event: RefUpdateEvent) => void): () => void;
}

async function settle<T>(fn: () => Promise<T>): Promise<ControlResult<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ok: false,
      error: {
        code: typeof code === 'string' ? code : 'CONTROL_FAILED',
        message: error instanceof Error ? error.message : String(error),
      },
    };
  }
}

/** Exposes the control API to every current and future peer; returns the function that stops. */
export function exposeControl(bus: Bus, source: ControlSource): () => void {
  const exposed = new Map<string, { close?(): void }>();
  const subscriptions = new Map<number, { peer: string; stop: () => void; release: () => void }>();
  let nextId = 1;

  const forbid = () => {
    throw new GitportError('CONTROL_FORBIDDEN', 'this host does not create or delete repositories');
  };

  const apiFor = (peer: string): ControlWire => ({
    list: () => settle(() => source.registry.list()),
    create: (name, options) =>
      settle(async () => {
        if (!source.manage) forbid();
        await source.registry.create(name, options);
      }),
    delete: (name) =>
      settle(async () => {
        if (!source.manage) forbid();
        return source.registry.delete(name);
      }),
    refs: (name, prefix) =>
      settle(async () => {
        const repo = await source.registry.open(name);
        if (!repo) throw new GitportError('REPO_NOT_FOUND', `repository ${name} not found`);
        const head = await repo.refs.read('HEAD');
        const refs = await repo.refs.list(prefix);
        return head.kind === 'missing' ? { refs } : { head, refs };
      }),
    subscribe: (listener, repo) =>
      settle(async () => {
        const id = nextId++;
        const remote = listener as unknown as Comlink.Remote<(event: RefUpdateEvent) => void>;
        const release = () => (remote as unknown as { [Comlink.releaseProxy]?: () => void })[Comlink.releaseProxy]?.();
        const stop = source.onRefUpdate((event) => {
          if (repo !== undefined && event.repo !== repo) return;
          Promise.resolve(remote(event)).catch(() => {
            // The subscriber is gone: drop the subscription.
            subscriptions.get(id)?.stop();
            subscriptions.delete(id);
          });
        });
        subscriptions.set(id, { peer, stop, release });
        return id;
      }),
    unsubscribe: (id) =>
      settle(async () => {
        const sub = subscriptions.get(id);
        if (!sub || sub.peer !== peer) return false;
        sub.stop();
        sub.release();
        subscriptions.delete(id);
        return true;
      }),
  });

  const expose = (peer: string) => {
    if (exposed.has(peer)) return;
    const endpoint = bus.endpoint(peer, CONTROL_CHANNEL);
    exposed.set(peer, endpoint);
    Comlink.expose(apiFor(peer), endpoint as unknown as Comlink.Endpoint);
  };
  for (const peer of bus.peers.keys()) expose(peer);
  const offConnected = bus.onPeer('connected', (peer) => expose(peer));
  const offLost = bus.onPeer('lost', (peer) => {
    exposed.delete(peer);
    for (const [id, sub] of subscriptions) {
      if (sub.peer !== peer) continue;
      sub.stop();
      subscriptions.delete(id);
    }
  });
  return () => {
    offConnected();
    offLost();
    for (const sub of subscriptions.values()) sub.stop();
    subscriptions.clear();
    for (const endpoint of exposed.values()) endpoint.close?.();
    exposed.clear();
  };
}

/** The control API of the host `peer`; failures are GitportErrors with the host's `code`. */
export function control(bus: Bus, peer: string): ControlClient {
  const wire = Comlink.wrap<ControlWire>(bus.endpoint(peer, CONTROL_CHANNEL) as unknown as Comlink.Endpoint);
  const unwrap = async <T>(result: Promise<ControlResult<T>>): Promise<T> => {
    const settled = await result;
    if (settled.ok) return settled.value;
    throw new GitportError(settled.error.code as GitportErrorCode, settled.error.message);
  };
  return {
    list: () => unwrap(wire.list()),
    create: (name, options) => unwrap(wire.create(name, options)),
    delete: (name) => unwrap(wire.delete(name)),
    refs: (name, prefix) => unwrap(wire.refs(name, prefix)),
    subscribe: (listener, repo) => unwrap(wire.subscribe(Comlink.proxy(listener), repo)),
    unsubscribe: (id) => unwrap(wire.unsubscribe(id)),
    release: () => wire[Comlink.releaseProxy](),
  };
}
