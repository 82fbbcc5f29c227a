/** Multiplexers over the two ports of a worker_threads MessageChannel, for the Node tests. */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { type FrameLink, type PortLike, portLink } from './link.js';
import { Multiplexer } from './multiplexer.js';

/**
 * A worker_threads port as the PortLike it is at run time (portLink only transfers ArrayBuffers).
 * The types do not meet: PortLike.postMessage takes the DOM's Transferable, Node's its own, and
 * Node types the listener's argument as an Event without `data`.
 */
export function nodePort(port: MessagePort): PortLike {
  return port as unknown as PortLike;
}

/**
 * Two multiplexers over the two ports of one MessageChannel, in this thread; `close()` ends both.
 * `nearLink` may wrap the near side's link (to watch what it sends).
 */
export function muxPair(options: { maxMessageSize?: number; nearLink?: (link: FrameLink) => FrameLink } = {}) {
  const { nearLink = (link: FrameLink) => link, maxMessageSize } = options;
  const limit = maxMessageSize === undefined ? {} : { maxMessageSize };
  const channel = new MessageChannel();
  const near = new Multiplexer(nearLink(portLink(nodePort(channel.port1), { peer: 'far', ...limit })));
  const far = new Multiplexer(portLink(nodePort(channel.port2), { peer: 'near', ...limit }));
  return {
    near,
    far,
    channel,
    close() {
      near.close();
      far.close();
      channel.port1.close();
      channel.port2.close();
    },
  };
}
