/**
 * Incoming requests: the handlers registered by name, a peer's request run by its handler, and the
 * answer sent back (the result, or the error in its wire form). Unfinished handler calls are
 * bounded by `maxPendingRequests`, and aborted when the requester cancels or is lost.
 */
import type { BusState } from './bus-state.js';
import type { Handler } from './bus-types.js';
import { BusError, errorToWire, type WireError } from './errors.js';
import { IncomingRequest as IncomingRequestBinding } from './incoming-request.js';
import type { Link } from './link.js';
import { type RequestId, validId as validIdBinding } from './request-id.js';
import { messageSize as messageSizeBinding } from './size.js';
import { Transferring as TransferringBinding } from './transferring.js';
import { type Envelope, Kind as KindBinding, Slot as SlotBinding } from './wire.js';

// Imported bindings read per message, copied once into module constants (see link.ts).
const Kind = KindBinding;
const Slot = SlotBinding;
const messageSize = messageSizeBinding;
const validId = validIdBinding;
const IncomingRequest = IncomingRequestBinding;
const Transferring = TransferringBinding;

export function handle(bus: BusState, name: string, fn: Handler): () => void {
  if (typeof name !== 'string' || name.length === 0) {
    throw new BusError('BUS_INVALID_ARGUMENT', 'a handler name must be a non-empty string');
  }
  if (typeof fn !== 'function') throw new BusError('BUS_INVALID_ARGUMENT', 'a handler must be a function');
  if (bus.handlers.has(name)) {
    throw new BusError('BUS_INVALID_ARGUMENT', `a handler named ${JSON.stringify(name)} already exists`);
  }
  bus.handlers.set(name, fn);
  return () => {
    if (bus.handlers.get(name) === fn) bus.handlers.delete(name);
  };
}

/** A peer's request: run its handler and answer. */
export function onRequest(bus: BusState, link: Link, from: string, envelope: Envelope): void {
  const id = envelope[Slot.id];
  if (!validId(id)) return;
  const name = envelope[Slot.name];
  const fn = typeof name === 'string' ? bus.handlers.get(name) : undefined;
  if (fn === undefined) {
    respondError(bus, link, from, id, new BusError('BUS_NO_HANDLER', `no handler named ${JSON.stringify(name)}`));
    return;
  }
  const payload = envelope[Slot.payload];
  if (messageSize(payload, bus.maxMessageSize) + (name as string).length > bus.maxMessageSize) {
    respondError(bus, link, from, id, new BusError('BUS_MESSAGE_TOO_LARGE', 'the request was dropped: too large'));
    return;
  }
  if (bus.incoming.size >= bus.maxPending) {
    // Bounded on the serving side too: a peer cannot pile up unfinished handler calls.
    respondError(bus, link, from, id, new BusError('BUS_TOO_MANY_PENDING', 'too many requests in progress'));
    return;
  }
  const meta = new IncomingRequest(from);
  let result: unknown;
  let thenable: boolean;
  try {
    result = fn(payload, meta);
    thenable = typeof (result as PromiseLike<unknown> | undefined)?.then === 'function';
  } catch (error) {
    respondError(bus, link, from, id, error);
    return;
  }
  if (thenable) {
    const key = `${from}\n${id}`;
    bus.incoming.set(key, meta);
    Promise.resolve(result as PromiseLike<unknown>).then(
      (value) => {
        if (bus.incoming.get(key) !== meta) return;
        bus.incoming.delete(key);
        respond(bus, from, id, value);
      },
      (error: unknown) => {
        if (bus.incoming.get(key) !== meta) return;
        bus.incoming.delete(key);
        const route = bus.routes.get(from);
        if (route !== undefined) respondError(bus, route, from, id, error);
      },
    );
  } else {
    respond(bus, from, id, result, link);
  }
}

function respond(bus: BusState, to: string, id: RequestId, result: unknown, link = bus.routes.get(to)): void {
  if (link === undefined || link.dead) return;
  let value = result;
  let transfer: Transferable[] | undefined;
  if (result instanceof Transferring) {
    value = result.value;
    transfer = result.transfer;
  }
  let size: number;
  try {
    size = bus.checkSize('', value);
  } catch (error) {
    respondError(bus, link, to, id, error);
    return;
  }
  link.enqueue(link.envelope(to, Kind.response, undefined, id, value), transfer, size);
}

function respondError(bus: BusState, link: Link, to: string, id: RequestId, error: unknown): void {
  let wire: WireError;
  try {
    wire = errorToWire(error);
    if (messageSize(wire, bus.maxMessageSize) > bus.maxMessageSize) throw new Error('too large');
  } catch {
    wire = {
      name: 'BusError',
      message: 'the handler failed with an error that cannot be sent',
      code: 'BUS_REMOTE_ERROR',
    };
  }
  link.enqueue(link.envelope(to, Kind.errorResponse, undefined, id, wire));
}

/** A cancel from the requester: abort its handler call. */
export function onCancel(bus: BusState, from: string, id: unknown): void {
  const key = `${from}\n${String(id)}`;
  const request = bus.incoming.get(key);
  if (request === undefined) return;
  bus.incoming.delete(key);
  request.abort(new BusError('BUS_ABORTED', 'the requester cancelled'));
}
