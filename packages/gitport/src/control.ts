/**
 * The control API of a host, exposed with comlink over `bus.endpoint(peer, 'gitport.control')`
 * to every peer of the bus: list, create and delete repositories, read refs, and subscribe to
 * ref updates (the listener is a `Comlink.proxy` callback; subscriptions end with `unsubscribe`,
 * or when the peer is lost).
 *
 *   const api = control(bus, 'host');           // Comlink.Remote<ControlApi>
 *   await api.create('notes');
 *   const id = await api.subscribe(Comlink.proxy((event) => ...));
 */
import type { Bus } from '@gitport/bus';
import * as Comlink from 'comlink';
import { GitportError } from './errors.js';
import type { RefUpdateEvent } from './ref-events.js';
import type { RepositoryRegistry } from './registry.js';

export const CONTROL_CHANNEL = 'gitport.control';

export interface RepositoryRefs {
  /** Where HEAD points (a ref name), or the id of a detached HEAD; undefined when absent. */
  head?: { kind: 'symbolic'; target: string } | { kind: 'direct'; oid: string };
  refs: { name: string; oid: string }[];
}

export interface ControlApi {
  list(): Promise<string[]>;
  create(name: string, options?: { defaultBranch?: string }): Promise<void>;
  delete(name: string): Promise<boolean>;
  refs(name: string, prefix?: string): Promise<RepositoryRefs>;
  /** Calls `listener` for every ref update (of `repo` only, when given); returns a subscription id. */
  subscribe(listener: (event: RefUpdateEvent) => void, repo?: string): Promise<number>;
  unsubscribe(id: number): Promise<boolean>;
}

export interface ControlSource {
  registry: RepositoryRegistry;
  manage: boolean;
  onRefUpdate(listener: (event: RefUpdateEvent) => void): () => void;
}

/** Exposes the control API to every current and future peer; returns the function that stops. */
export function exposeControl(bus: Bus, source: ControlSource): () => void {
  const exposed = new Map<string, { close?(): void }>();
  const subscriptions = new Map<number, { peer: string; stop: () => void; release: () => void }>();
  let nextId = 1;

  const apiFor = (peer: string): ControlApi => ({
    list: () => source.registry.list(),
    async create(name, options) {
      if (!source.manage) throw new GitportError('REPO_EXISTS', 'this host does not create repositories');
      await source.registry.create(name, options);
    },
    async delete(name) {
      if (!source.manage) return false;
      return source.registry.delete(name);
    },
    async refs(name, prefix) {
      const repo = await source.registry.open(name);
      if (!repo) throw new GitportError('REPO_NOT_FOUND', `repository ${name} not found`);
      const head = await repo.refs.read('HEAD');
      const refs = await repo.refs.list(prefix);
      return head.kind === 'missing' ? { refs } : { head, refs };
    },
    async subscribe(listener, repo) {
      const id = nextId++;
      const remote = listener as unknown as Comlink.Remote<(event: RefUpdateEvent) => void>;
      const stop = source.onRefUpdate((event) => {
        if (repo !== undefined && event.repo !== repo) return;
        Promise.resolve(remote(event)).catch(() => {
          subscriptions.get(id)?.stop();
          subscriptions.delete(id);
        });
      });
      const release = () => (remote as unknown as { [Comlink.releaseProxy]?: () => void })[Comlink.releaseProxy]?.();
      subscriptions.set(id, { peer, stop, release });
      return id;
    },
    async unsubscribe(id) {
      const sub = subscriptions.get(id);
      if (!sub || sub.peer !== peer) return false;
      sub.stop();
      sub.release();
      subscriptions.delete(id);
      return true;
    },
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

/** The control API of the host `peer`. */
export function control(bus: Bus, peer: string): Comlink.Remote<ControlApi> {
  return Comlink.wrap<ControlApi>(bus.endpoint(peer, CONTROL_CHANNEL) as unknown as Comlink.Endpoint);
}
