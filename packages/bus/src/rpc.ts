/**
 * Outgoing requests: the pending table, how a request is posted, settled by its answer, aborted,
 * timed out (one shared deadline timer, armed for the earliest request and cleared when nothing is
 * pending), or failed because its peer is gone or its payload cannot be cloned.
 */
import type { BusState } from './bus-state.js';
import { BusError, errorFromWire, errorToWire } from './errors.js';
import type { Link } from './link.js';
import type { Pending } from './pending-table.js';
import type { RequestId } from './request-id.js';
import { route } from './routing.js';
import { messageSize } from './size.js';
import { unref } from './timer.js';
import { type Envelope, Kind, Slot } from './wire.js';

/** Where `capture`, the executor every request's promise shares, leaves its resolving functions. */
const captured: { resolve: ((value: never) => void) | undefined; reject: ((error: unknown) => void) | undefined } = {
  resolve: undefined,
  reject: undefined,
};
function capture(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  captured.resolve = resolve;
  captured.reject = reject;
}

/** A message of `kind` to `peer` that structured clone refused. */
function cannotClone(kind: number, peer: string, cause: unknown): BusError {
  return new BusError('BUS_DATA_CLONE', `cannot post a kind ${kind} message to ${peer}`, { cause });
}

export function request<T = unknown>(
  bus: BusState,
  peer: string,
  name: string,
  payload: unknown,
  options?: { timeout?: number; signal?: AbortSignal; transfer?: Transferable[] },
): Promise<T> {
  let link: Link;
  let size: number;
  try {
    if (typeof name !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'a handler name must be a string');
    // The route map read here (per request, a call to route would cross a module binding); route
    // itself only when there is none, to throw the right error.
    link = (bus.closed ? undefined : bus.routes.get(peer)) ?? route(bus, peer);
    if (bus.pending.size >= bus.maxPending) {
      throw new BusError('BUS_TOO_MANY_PENDING', `maxPendingRequests (${bus.maxPending}) reached`);
    }
    if (options?.signal?.aborted) {
      throw new BusError('BUS_ABORTED', 'request aborted', { cause: options.signal.reason });
    }
    size = bus.checkSize(name, payload);
  } catch (error) {
    return Promise.reject(error);
  }
  const id = bus.pending.newId();
  const signal = options?.signal;
  const timeout = options?.timeout ?? bus.requestTimeout;
  const envelope = link.envelope(peer, Kind.request, name, id, payload);
  // The only request in flight, made outside a received frame with nothing else queued on its link
  // (one call at a time), is posted at once, before its bookkeeping, so the round trip starts
  // first and the rest overlaps it. Requests made while others are pending go out together, one
  // postMessage per tick.
  const lone = bus.pending.size === 0 && !bus.receiving && link.queued === 0;
  let early: Envelope | undefined;
  if (lone) {
    envelope[Slot.sequence] = ++link.seqOut;
    bus.postingId = id;
    bus.postingPeer = peer;
    try {
      const lost = link.postOn(envelope, options?.transfer);
      if (lost !== undefined) return Promise.reject(lost);
    } catch (error) {
      return Promise.reject(cannotClone(Kind.request, link.peer, error));
    } finally {
      bus.postingId = Number.NaN;
      early = bus.postingAnswer;
      bus.postingAnswer = undefined;
    }
  }
  // The shared executor hands out the resolving functions: no closure made per request.
  const promise = new Promise<T>(capture);
  const pending = bus.pending.add(id, peer, captured.resolve!, captured.reject!, signal);
  captured.resolve = captured.reject = undefined;
  if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
    pending.deadline = performance.now() + timeout;
    pending.name = name;
  }
  if (signal !== undefined) watch(bus, id, pending, signal);
  if (!lone) link.enqueue(envelope, options?.transfer, size);
  else if (early !== undefined) {
    answer(bus, id, pending, early);
    return promise;
  }
  // The deadline timer is armed once the request is on its way, and only if posting did not settle
  // it already (an untimed request has no deadline).
  if (pending.deadline < bus.timerAt && bus.pending.get(id) === pending) armTimer(bus, pending.deadline);
  return promise;
}

/** Settles a pending request with a response or error response from its peer. */
export function answer(bus: BusState, id: number, pending: Pending, envelope: Envelope): void {
  if (envelope[Slot.kind] === Kind.errorResponse) {
    settle(bus, id, pending, false, errorFromWire(envelope[Slot.payload]));
  } else if (messageSize(envelope[Slot.payload], bus.maxMessageSize) > bus.maxMessageSize) {
    settle(bus, id, pending, false, new BusError('BUS_MESSAGE_TOO_LARGE', 'the response was dropped: too large'));
  } else {
    settle(bus, id, pending, true, envelope[Slot.payload]);
  }
}

function watch(bus: BusState, id: number, pending: Pending, signal: AbortSignal): void {
  pending.onAbort = () => {
    if (bus.pending.get(id) !== pending) return;
    settle(bus, id, pending, false, new BusError('BUS_ABORTED', 'request aborted', { cause: signal.reason }));
    cancelRemote(bus, pending.peer, id);
  };
  signal.addEventListener('abort', pending.onAbort, { once: true });
}

function armTimer(bus: BusState, at: number): void {
  if (bus.timer !== undefined) clearTimeout(bus.timer);
  bus.timerAt = at;
  bus.timer = setTimeout(() => expire(bus), Math.min(2_147_483_647, Math.max(0, at - performance.now())));
  unref(bus.timer);
}

/** Times out every request past its deadline, then re-arms for the earliest one left. */
function expire(bus: BusState): void {
  bus.timer = undefined;
  bus.timerAt = Number.POSITIVE_INFINITY;
  const now = performance.now();
  let next = Number.POSITIVE_INFINITY;
  for (const [id, pending] of bus.pending.entries()) {
    if (pending.deadline <= now) {
      settle(
        bus,
        id,
        pending,
        false,
        new BusError('BUS_TIMEOUT', `request "${pending.name}" to ${pending.peer} timed out`),
      );
      cancelRemote(bus, pending.peer, id);
    } else if (pending.deadline < next) {
      next = pending.deadline;
    }
  }
  if (next !== Number.POSITIVE_INFINITY && bus.pending.size > 0) armTimer(bus, next);
}

function cancelRemote(bus: BusState, peer: string, id: number): void {
  const link = bus.routes.get(peer);
  if (link !== undefined) link.enqueue(link.envelope(peer, Kind.cancel, undefined, id, undefined));
}

export function settle(bus: BusState, id: number, pending: Pending, ok: boolean, value: unknown): void {
  bus.pending.delete(id);
  if (pending.onAbort !== undefined) pending.signal!.removeEventListener('abort', pending.onAbort);
  if (ok) pending.resolve(value as never);
  else pending.reject(value);
  if (bus.pending.size === 0 && bus.timer !== undefined) {
    // Nothing pending: no timer left behind. Checked at the next tick, after the caller's
    // continuation (queued by the resolve above) has run, so a caller issuing one request after
    // another keeps the timer, and that tick also posts the next request.
    bus.idleCheck = true;
    bus.queueTick();
  }
}

/** Nothing pending: the deadline timer is cleared (see settle). */
export function clearIdleTimer(bus: BusState): void {
  if (bus.pending.size === 0 && bus.timer !== undefined) {
    clearTimeout(bus.timer);
    bus.timer = undefined;
    bus.timerAt = Number.POSITIVE_INFINITY;
  }
}

/** Structured clone refused `envelope`: its request fails, its answer becomes an error answer, anything else is reported. */
export function undeliverable(bus: BusState, link: Link, envelope: Envelope, cause: unknown): void {
  const kind = envelope[Slot.kind] as number;
  const error = cannotClone(kind, link.peer, cause);
  const id = envelope[Slot.id] as RequestId;
  if (kind === Kind.request) {
    const pending = bus.pending.get(id as number);
    if (pending !== undefined) settle(bus, id as number, pending, false, error);
  } else if (kind === Kind.response) {
    const to = (envelope[Slot.target] as string | undefined) ?? link.peer;
    link.enqueue(link.envelope(to, Kind.errorResponse, undefined, id, errorToWire(error)));
  } else {
    bus.reportError(error);
  }
}
