/**
 * Channels: a comlink-compatible Endpoint carried over the bus to one peer, separate per channel
 * name. Messages for a channel nobody listens to yet (comlink's expose may come a moment later) wait
 * in a bounded backlog, delivered when the first listener comes.
 */
import type { BusState } from './bus-state.js';
import type { AnyMessageListener, BusMessageEvent, ChannelEndpoint, MessageListener } from './endpoint.js';
import { BusError } from './errors.js';
import { route } from './routing.js';
import { messageSize } from './size.js';
import { type Envelope, Kind, Slot } from './wire.js';

/** Messages kept per channel with no listener yet, and channels with such a backlog at most. */
const CHANNEL_BUFFER = 256;
const CHANNEL_BUFFER_KEYS = 256;

export function channelEndpoint(bus: BusState, peer: string, channel: string): ChannelEndpoint {
  if (typeof peer !== 'string' || typeof channel !== 'string') {
    throw new BusError('BUS_INVALID_ARGUMENT', 'endpoint(peer, channel) takes two strings');
  }
  const key = `${peer}\n${channel}`;
  const own = new Set<AnyMessageListener>();
  return {
    postMessage: (message, transfer) => {
      const link = route(bus, peer);
      const size = bus.checkSize(channel, message);
      link.enqueue(link.envelope(peer, Kind.channel, channel, undefined, message), transfer, size);
    },
    addEventListener: (type, listener) => {
      if (type !== 'message') return;
      let set = bus.channels.get(key);
      if (set === undefined) {
        set = new Set();
        bus.channels.set(key, set);
      }
      set.add(listener);
      own.add(listener);
      const buffered = bus.channelBuffers.get(key);
      if (buffered !== undefined) {
        bus.channelBuffers.delete(key);
        queueMicrotask(() => {
          for (const data of buffered) deliver(bus, key, data);
        });
      }
    },
    removeEventListener: (type, listener) => {
      if (type !== 'message') return;
      own.delete(listener);
      const set = bus.channels.get(key);
      if (set === undefined) return;
      set.delete(listener);
      if (set.size === 0) bus.channels.delete(key);
    },
    start: () => {},
    close: () => {
      const set = bus.channels.get(key);
      for (const listener of own) set?.delete(listener);
      own.clear();
      if (set?.size === 0) bus.channels.delete(key);
    },
    onClose: (listener) =>
      bus.onPeer('lost', (lost) => {
        if (lost === peer) listener();
      }),
  };
}

export function onChannel(bus: BusState, source: string, envelope: Envelope): void {
  const channel = envelope[Slot.name];
  if (typeof channel !== 'string') return;
  if (messageSize(envelope[Slot.payload], bus.maxMessageSize) + channel.length > bus.maxMessageSize) {
    bus.drops.report(new BusError('BUS_MESSAGE_TOO_LARGE', `dropped channel message from ${source}: too large`));
    return;
  }
  const key = `${source}\n${channel}`;
  if (bus.channels.has(key)) {
    deliver(bus, key, envelope[Slot.payload]);
    return;
  }
  // Nobody listens yet (comlink's expose may come a moment later): keep a bounded backlog.
  let buffer = bus.channelBuffers.get(key);
  if (buffer === undefined) {
    if (bus.channelBuffers.size >= CHANNEL_BUFFER_KEYS) {
      bus.drops.report(new BusError('BUS_TOO_MANY_PENDING', `dropped channel message from ${source}: no listener`));
      return;
    }
    buffer = [];
    bus.channelBuffers.set(key, buffer);
  }
  if (buffer.length >= CHANNEL_BUFFER) {
    bus.drops.report(new BusError('BUS_TOO_MANY_PENDING', `dropped channel message from ${source}: backlog full`));
    return;
  }
  buffer.push(envelope[Slot.payload]);
}

function deliver(bus: BusState, key: string, data: unknown): void {
  const set = bus.channels.get(key);
  if (set === undefined) return;
  const event = { data };
  for (const listener of [...set]) {
    try {
      if (typeof listener === 'function') (listener as MessageListener)(event);
      else (listener as { handleEvent(event: BusMessageEvent): void }).handleEvent(event);
    } catch (error) {
      bus.reportError(error);
    }
  }
}
