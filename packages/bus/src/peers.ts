/**
 * Peers: a link established once the handshake is done, its liveness (the endpoint's close event,
 * or heartbeats where there is none), and what is settled when a peer is lost (its requests, its
 * handler calls, its channel backlogs) and told to `onPeer('lost')` listeners.
 */
import type { BusState } from './bus-state.js';
import type { Peer } from './bus-types.js';
import { BusError } from './errors.js';
import type { Link } from './link.js';
import { announceJoined, announceLeft } from './routing.js';
import { unref } from './timer.js';
import { Kind } from './wire.js';

/** A link whose handshake is done: it becomes the route to its peer, and a hub tells the others. */
export function establish(bus: BusState, link: Link): Peer {
  const id = link.peer;
  const known = bus.peerMap.has(id);
  bus.links.set(id, link);
  bus.routes.set(id, link);
  bus.distance.set(id, 1);
  const peer: Peer = { id };
  bus.peerMap.set(id, peer);
  const endpoint = link.endpoint;
  if (typeof endpoint.onClose === 'function') {
    link.offClose = endpoint.onClose(() =>
      lose(bus, link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(id)} is gone (endpoint closed)`)),
    );
  } else if (bus.heartbeatInterval > 0 && bus.heartbeatInterval !== Number.POSITIVE_INFINITY) {
    link.heartbeat = setInterval(() => beat(bus, link), bus.heartbeatInterval);
    unref(link.heartbeat);
  }
  if (bus.isHub) {
    // The newcomer learns every peer this hub reaches, directly or through another hub; the
    // others learn the newcomer (and, through onAnnounce, whoever it announces in turn).
    const others = [...bus.routes.keys()].filter((other) => other !== id);
    if (others.length > 0) announceJoined(bus, link, others);
    for (const other of bus.links.values()) {
      if (other !== link) announceJoined(bus, other, [id]);
    }
  }
  if (!known) bus.notify(bus.connectedListeners, id, undefined);
  return peer;
}

/** A heartbeat period: a peer that answered none of the last `heartbeatMisses` pings is lost. */
function beat(bus: BusState, link: Link): void {
  if (link.alive) {
    link.missed = 0;
  } else if (++link.missed >= bus.heartbeatMisses) {
    lose(bus, link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(link.peer)} missed its heartbeats`));
    return;
  }
  link.alive = false;
  link.enqueue([Kind.ping, 0]);
}

export function disconnect(bus: BusState, peer: string): void {
  const link = bus.links.get(peer);
  if (link === undefined) return;
  sendBye(link);
  lose(bus, link, new BusError('BUS_PEER_LOST', `disconnected from ${JSON.stringify(peer)}`));
}

/** Tells the peer we are leaving, and posts it with whatever the link still holds at once. */
export function sendBye(link: Link): void {
  link.enqueue([Kind.bye, 0]);
  link.post();
}

/** A direct link is gone: forget it and every peer reached through it. */
export function lose(bus: BusState, link: Link, reason: BusError): void {
  if (link.dead) return;
  link.dead = true;
  link.endpoint.removeEventListener('message', link.listener);
  clearInterval(link.heartbeat);
  link.offClose?.();
  link.clear();
  const id = link.peer;
  if (bus.links.get(id) === link) bus.links.delete(id);
  const gone: string[] = [];
  for (const [peer, route] of bus.routes) if (route === link) gone.push(peer);
  for (const peer of gone) forget(bus, peer, reason);
  if (bus.isHub && !bus.closed) {
    for (const other of bus.links.values()) {
      announceLeft(other, gone);
    }
  }
}

/** A peer is out of reach: its requests fail, its handler calls are aborted, its channel backlogs dropped. */
export function forget(bus: BusState, peer: string, reason: BusError): void {
  bus.routes.delete(peer);
  bus.distance.delete(peer);
  bus.peerMap.delete(peer);
  bus.rpc.forget(peer, reason);
  const prefix = `${peer}\n`;
  for (const [key, request] of bus.incoming) {
    if (key.startsWith(prefix)) {
      bus.incoming.delete(key);
      request.abort(reason);
    }
  }
  for (const key of bus.channelBuffers.keys()) if (key.startsWith(prefix)) bus.channelBuffers.delete(key);
  bus.notify(bus.lostListeners, peer, reason);
}
