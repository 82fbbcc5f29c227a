/**
 * Receiving: a data frame (a lone envelope, or a batch of them) checked envelope by envelope and
 * dispatched by kind. An envelope is taken from a link only if its sequence number is new and its
 * source is the link's peer, or a peer the link's hub announced; a response settles a request only
 * if it comes from the peer the request went to, with the request's id.
 */
import type { BusState } from './bus-state.js';
import { onChannel } from './channels.js';
import type { BusMessageEvent } from './endpoint.js';
import { BusError } from './errors.js';
import { isHandshake, PROTOCOL_VERSION, TAG } from './handshake-frame.js';
import { onCancel, onRequest as onRequestBinding } from './incoming.js';
import type { Link } from './link.js';
import { lose } from './peers.js';
import { forward, onAnnounce } from './routing.js';
import { messageSize as messageSizeBinding } from './size.js';
import { type Envelope, Kind as KindBinding, Slot as SlotBinding } from './wire.js';

// Imported bindings read per message, copied once into module constants (see link.ts).
const Kind = KindBinding;
const Slot = SlotBinding;
const messageSize = messageSizeBinding;
const onRequest = onRequestBinding;

export function receive(bus: BusState, link: Link, event: BusMessageEvent): void {
  if (link.dead) return;
  if (bus.originAllowed !== undefined && !bus.checkOrigin(event)) return;
  link.alive = true;
  const data = event.data;
  if (Array.isArray(data)) {
    if (bus.receiving) {
      receiveFrame(bus, link, data);
      return;
    }
    bus.receiving = true;
    try {
      receiveFrame(bus, link, data);
    } finally {
      bus.receiving = false;
      // (a flush may post to an endpoint that delivers at once, whose receive drains this list too)
      bus.flush();
    }
  } else if (isHandshake(data) && data[TAG] === 'refuse' && data.id === link.peer) {
    lose(bus, link, new BusError('BUS_HANDSHAKE', `the peer dropped the connection: ${String(data.message)}`));
  } else if (isHandshake(data) && data[TAG] === 'hello' && data.id === link.peer) {
    // The other side's hello retries (sent before our ack reached it): answer again.
    try {
      link.endpoint.postMessage({ [TAG]: 'ack', id: bus.id, v: PROTOCOL_VERSION, hub: bus.isHub });
    } catch (error) {
      lose(bus, link, new BusError('BUS_PEER_LOST', `cannot post to ${JSON.stringify(link.peer)}`, { cause: error }));
    }
  }
}

function receiveFrame(bus: BusState, link: Link, data: unknown[]): void {
  if (typeof data[0] === 'number') {
    // a lone envelope
    try {
      dispatch(bus, link, data);
    } catch (error) {
      bus.reportError(error);
    }
    return;
  }
  for (let i = 0; i < data.length; i++) {
    const envelope: unknown = data[i];
    if (!Array.isArray(envelope)) continue;
    try {
      dispatch(bus, link, envelope);
    } catch (error) {
      bus.reportError(error);
    }
    if (link.dead) return;
  }
}

function dispatch(bus: BusState, link: Link, envelope: Envelope): void {
  const q = envelope[Slot.sequence];
  if (typeof q !== 'number' || !Number.isSafeInteger(q) || q <= link.seqIn) return; // malformed, replayed or reordered
  link.seqIn = q;
  // Between direct neighbours source and target are implied (the link's peer, us) and left out.
  let source = envelope[Slot.source];
  if (source === undefined) source = link.peer;
  else if (source !== link.peer && !(link.remoteHub && typeof source === 'string' && bus.routes.get(source) === link)) {
    return; // a peer may speak only for itself, a hub for the peers it announced
  }
  const target = envelope[Slot.target];
  if (target !== undefined && target !== bus.id) {
    if (bus.isHub) forward(bus, link, envelope, source as string, target);
    return;
  }
  const from = source as string;
  switch (envelope[Slot.kind]) {
    case Kind.event: {
      const name = envelope[Slot.name];
      if (typeof name !== 'string') return;
      const payload = envelope[Slot.payload];
      if (messageSize(payload, bus.maxMessageSize) + name.length > bus.maxMessageSize) {
        bus.drops.report(new BusError('BUS_MESSAGE_TOO_LARGE', `dropped event "${name}" from ${from}: too large`));
        return;
      }
      bus.events.dispatch(name, payload, { from, event: name });
      return;
    }
    case Kind.request:
      onRequest(bus, link, from, envelope);
      return;
    case Kind.response:
    case Kind.errorResponse:
      bus.rpc.onResponse(from, envelope);
      return;
    case Kind.cancel:
      onCancel(bus, from, envelope[Slot.id]);
      return;
    case Kind.channel:
      onChannel(bus, from, envelope);
      return;
    case Kind.peersJoined:
    case Kind.peersLeft:
      if (from === link.peer && link.remoteHub && Array.isArray(envelope[Slot.payload]))
        onAnnounce(bus, link, envelope);
      return;
    case Kind.ping:
      link.enqueue([Kind.pong, 0]);
      return;
    case Kind.bye:
      if (from === link.peer) {
        lose(bus, link, new BusError('BUS_PEER_LOST', `peer ${JSON.stringify(from)} closed its bus`));
      }
      return;
    default:
      return;
  }
}
