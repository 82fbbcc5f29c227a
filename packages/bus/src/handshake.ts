/**
 * The handshake: each side posts `hello` (retried with backoff until answered: a window may not
 * listen yet). A side that accepts the other (from its `hello` or `ack`: same protocol version,
 * distinct ids, `maxPeers` not reached, origin allowed) posts `ack` once, and again for every later
 * `hello`; a side is connected when it has accepted the other and received its `ack`. A side that
 * does not accept posts `refuse`, and both `connect` calls reject with BusError `BUS_HANDSHAKE` or
 * `BUS_TOO_MANY_PEERS` (a window whose origin is not allowed is ignored: its connect times out).
 */
import { type BusState, type Handshake, MAX_ID_LENGTH } from './bus-state.js';
import type { Peer } from './bus-types.js';
import type { Endpoint, MessageListener } from './endpoint.js';
import { BusError } from './errors.js';
import { isHandshake, PROTOCOL_VERSION, TAG } from './handshake-frame.js';
import { Link } from './link.js';
import { establish } from './peers.js';
import { receive } from './receive.js';
import { unref } from './timer.js';

export function connect(
  bus: BusState,
  endpoint: Endpoint,
  options: { signal?: AbortSignal; timeout?: number } = {},
): Promise<Peer> {
  if (bus.closed) return Promise.reject(new BusError('BUS_CLOSED', 'the bus is closed'));
  const signal = options.signal;
  if (signal?.aborted) {
    return Promise.reject(new BusError('BUS_ABORTED', 'connect aborted', { cause: signal.reason }));
  }
  return new Promise<Peer>((resolve, reject) => {
    let link: Link | undefined;
    let accepted: string | undefined;
    let sentAck = false;
    let settled = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let delay = 20;
    const hello = { [TAG]: 'hello', id: bus.id, v: PROTOCOL_VERSION, hub: bus.isHub };
    // Every message of the link goes to receive: kept in a local, so a message reaches it without a
    // module binding (a getter call each under a module loader such as vitest's).
    const deliver = receive;
    const cleanup = (): void => {
      settled = true;
      bus.handshakes.delete(handshake);
      clearTimeout(retry);
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
    };
    const handshake: Handshake = {
      fail: (error) => {
        if (settled) return;
        cleanup();
        endpoint.removeEventListener('message', listener);
        reject(error);
      },
    };
    const onAbort = (): void =>
      handshake.fail(new BusError('BUS_ABORTED', 'connect aborted', { cause: signal?.reason }));
    const refuse = (code: string, message: string): void => {
      try {
        endpoint.postMessage({ [TAG]: 'refuse', id: bus.id, code, message });
      } catch {
        // the refusal is a courtesy; our own connect fails below either way
      }
      handshake.fail(new BusError(code, message));
    };
    const listener: MessageListener = (event) => {
      if (link !== undefined) {
        deliver(bus, link, event);
        return;
      }
      if (settled || (bus.originAllowed !== undefined && !bus.checkOrigin(event))) return;
      const frame = event.data;
      if (!isHandshake(frame)) return;
      const kind = frame[TAG];
      if (kind === 'refuse') {
        const code = frame.code === 'BUS_TOO_MANY_PEERS' ? 'BUS_TOO_MANY_PEERS' : 'BUS_HANDSHAKE';
        handshake.fail(new BusError(code, `the peer refused the connection: ${String(frame.message)}`));
        return;
      }
      if (kind !== 'hello' && kind !== 'ack') return;
      const id = frame.id;
      if (frame.v !== PROTOCOL_VERSION) {
        refuse('BUS_HANDSHAKE', `protocol version mismatch: ours ${PROTOCOL_VERSION}, theirs ${String(frame.v)}`);
        return;
      }
      if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
        refuse('BUS_HANDSHAKE', 'invalid peer id');
        return;
      }
      if (id === bus.id) {
        refuse('BUS_HANDSHAKE', `peer id ${JSON.stringify(id)} is our own id`);
        return;
      }
      if (bus.links.has(id)) {
        refuse('BUS_HANDSHAKE', `a peer named ${JSON.stringify(id)} is already connected`);
        return;
      }
      if (bus.links.size >= bus.maxPeers) {
        refuse('BUS_TOO_MANY_PEERS', `maxPeers (${bus.maxPeers}) reached`);
        return;
      }
      if (accepted !== undefined && accepted !== id) return; // a third party on a shared channel
      if (accepted === undefined) {
        // We accept them: say so once (again for every hello: they may have missed our ack).
        accepted = id;
        sentAck = false;
      }
      if (kind === 'hello' || !sentAck) {
        try {
          endpoint.postMessage({ [TAG]: 'ack', id: bus.id, v: PROTOCOL_VERSION, hub: bus.isHub });
          sentAck = true;
        } catch (error) {
          handshake.fail(new BusError('BUS_HANDSHAKE', 'cannot post on the endpoint', { cause: error }));
          return;
        }
      }
      if (kind !== 'ack') return; // connected once they have accepted us too
      cleanup();
      link = new Link(bus, id, endpoint, frame.hub === true, listener);
      resolve(establish(bus, link));
    };
    const deadline = setTimeout(
      () => handshake.fail(new BusError('BUS_TIMEOUT', 'the handshake timed out')),
      options.timeout ?? bus.connectTimeout,
    );
    unref(deadline);
    signal?.addEventListener('abort', onAbort, { once: true });
    bus.handshakes.add(handshake);
    endpoint.addEventListener('message', listener);
    endpoint.start?.();
    const sendHello = (): void => {
      if (settled) return;
      try {
        endpoint.postMessage(hello);
      } catch (error) {
        handshake.fail(new BusError('BUS_HANDSHAKE', 'cannot post on the endpoint', { cause: error }));
        return;
      }
      retry = setTimeout(sendHello, delay);
      unref(retry);
      delay = Math.min(delay * 2, 1000);
    };
    sendHello();
  });
}
