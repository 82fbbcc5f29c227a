/**
 * Routing: which link leads to each peer, and what hubs do. A hub forwards envelopes between its
 * peers (`Slot.hops` counts down) and announces the peers it reaches, with their distance, to each
 * of its links; a bus that hears an announcement routes through the hub that made it.
 */
import type { BusState } from './bus-state.js';
import { BusError, errorToWire } from './errors.js';
import type { Link } from './link.js';
import { messageSize } from './size.js';
import { type Envelope, Kind, Slot } from './wire.js';

/** The link to `peer`; throws BUS_CLOSED or BUS_UNKNOWN_PEER. */
export function route(bus: BusState, peer: string): Link {
  if (bus.closed) throw new BusError('BUS_CLOSED', 'the bus is closed');
  const link = bus.routes.get(peer);
  if (link === undefined) throw new BusError('BUS_UNKNOWN_PEER', `no peer named ${JSON.stringify(peer)}`);
  return link;
}

/** A hub passes on an envelope for another peer, or answers (a request) or reports why it cannot. */
export function forward(bus: BusState, from: Link, envelope: Envelope, source: string, to: unknown): void {
  const target = typeof to === 'string' ? bus.routes.get(to) : undefined;
  const kind = envelope[Slot.kind];
  const hops = envelope[Slot.hops];
  let refusal: BusError | undefined;
  if (target === undefined || target === from) {
    refusal = new BusError('BUS_UNKNOWN_PEER', `hub ${bus.id} cannot reach ${JSON.stringify(to)}`);
  } else if (!(typeof hops === 'number' && hops > 0)) {
    refusal = new BusError('BUS_HOP_LIMIT', `hop limit reached at hub ${bus.id}`);
  } else if (
    (kind === Kind.event || kind === Kind.request || kind === Kind.channel) &&
    messageSize(envelope[Slot.payload], bus.maxMessageSize) > bus.maxMessageSize
  ) {
    refusal = new BusError('BUS_MESSAGE_TOO_LARGE', `hub ${bus.id} dropped a message larger than its maxMessageSize`);
  }
  if (refusal === undefined) {
    // Only the wire slots go on (never more than a sender could put there), source filled in.
    const payload = envelope[Slot.payload];
    const next: Envelope = [kind, 0, envelope[Slot.name], envelope[Slot.id], payload, source, to, (hops as number) - 1];
    target!.enqueue(next, collectTransferables(payload));
    return;
  }
  if (kind === Kind.request && typeof envelope[Slot.id] === 'string') {
    // Answer in the target's name: the requester reached it through us, so it trusts our word.
    const answer = errorToWire(refusal);
    from.enqueue([Kind.errorResponse, 0, undefined, envelope[Slot.id], answer, to, source, bus.maxHops]);
  } else {
    bus.drops.report(refusal);
  }
}

/**
 * Tells `link` that we reach `ids`, each with its distance from us (links to cross). The
 * distances ride in the name slot, so a bus that does not read them takes every peer as one hub away.
 */
export function announceJoined(bus: BusState, link: Link, ids: string[]): void {
  const distances = ids.map((id) => bus.distance.get(id) ?? 1);
  link.enqueue([Kind.peersJoined, 0, distances, undefined, ids]);
}

/** Tells `link` that we no longer reach `ids`. */
export function announceLeft(link: Link, ids: string[]): void {
  link.enqueue([Kind.peersLeft, 0, undefined, undefined, ids]);
}

/**
 * What a hub announced: peers it reaches (with their distance from it) or peers it no longer
 * reaches. A route is taken if we had none or it is shorter than ours; a departure is believed
 * only from the link we route through. A hub answers the departure of a peer it still reaches
 * another way with an announcement, so the other side finds that way (after a hub link drops in a
 * loop of hubs). Routes longer than a message's hops can travel are not taken, and a route the
 * next hub says has grown that long is dropped (the peer is out of reach): stale announcements
 * left circling a loop after a peer leaves it grow at each hub until they die out.
 */
export function onAnnounce(bus: BusState, link: Link, envelope: Envelope): void {
  const ids = envelope[Slot.payload] as unknown[];
  const told = envelope[Slot.name];
  const distances = Array.isArray(told) && told.length === ids.length ? told : undefined;
  const joined = envelope[Slot.kind] === Kind.peersJoined;
  const changed: string[] = [];
  const stillHere: string[] = [];
  const outOfReach: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (typeof id !== 'string' || id === bus.id) continue;
    if (joined) {
      const d = distances?.[i];
      const far = (Number.isSafeInteger(d) && (d as number) > 0 ? (d as number) : 1) + 1;
      const route = bus.routes.get(id);
      if (far > bus.maxHops + 1) {
        // No message could travel that far. If that is the way we reach the peer, it is out of reach.
        if (route === link && !bus.links.has(id)) {
          outOfReach.push(id);
          bus.forget(id, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} is out of reach`));
        }
        continue;
      }
      if (route === undefined) {
        if (bus.peerMap.size >= bus.maxPeers * 4) continue;
        bus.routes.set(id, link);
        bus.distance.set(id, far);
        bus.peerMap.set(id, { id, via: link.peer });
        changed.push(id);
        bus.notify(bus.connectedListeners, id, undefined);
      } else if (!bus.links.has(id) && (route === link ? far !== bus.distance.get(id) : far < bus.distance.get(id)!)) {
        // the same way, now longer or shorter; or a shorter way than ours (a direct link stays)
        bus.routes.set(id, link);
        bus.distance.set(id, far);
        if (bus.peerMap.get(id)?.via !== link.peer) bus.peerMap.set(id, { id, via: link.peer });
        changed.push(id);
      }
    } else if (bus.routes.get(id) === link && !bus.links.has(id)) {
      changed.push(id);
      bus.forget(id, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} left hub ${link.peer}`));
    } else if (bus.isHub && bus.routes.has(id)) {
      stillHere.push(id);
    }
  }
  if (!bus.isHub || bus.closed) return;
  if (stillHere.length > 0) announceJoined(bus, link, stillHere);
  // A hub passes on what changed here to everyone but the hub that told it.
  const left = joined ? outOfReach : changed;
  for (const other of bus.links.values()) {
    if (other === link) continue;
    if (joined && changed.length > 0) announceJoined(bus, other, changed);
    if (left.length > 0) announceLeft(other, left);
  }
}

/** Transferables inside a payload a hub forwards (ports must be transferred again, buffers are moved rather than copied). */
function collectTransferables(payload: unknown): Transferable[] | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const PortCtor = (globalThis as { MessagePort?: abstract new () => object }).MessagePort;
  if (PortCtor === undefined) return undefined;
  let found: Transferable[] | undefined;
  const seen = new Set<object>();
  const stack: unknown[] = [payload];
  let budget = 10_000;
  while (stack.length > 0 && budget-- > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    if (value instanceof PortCtor) (found ??= []).push(value as unknown as Transferable);
    else if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) continue;
    else if (Array.isArray(value)) for (const v of value) stack.push(v);
    else if (value instanceof Map) for (const [k, v] of value) stack.push(k, v);
    else if (value instanceof Set) for (const v of value) stack.push(v);
    else for (const key of Object.keys(value)) stack.push((value as Record<string, unknown>)[key]);
  }
  return found;
}
