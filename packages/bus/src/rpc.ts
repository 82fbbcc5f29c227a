/**
 * Outgoing requests: the pending table, how a request is posted, settled by its answer, aborted,
 * timed out (one shared deadline timer, armed for the earliest request and cleared when nothing is
 * pending), or failed because its peer is gone or its payload cannot be cloned.
 *
 * All of it is one object the bus holds (`bus.rpc`): a request and its answer go from the bus to
 * these methods without crossing a module binding (a module loader that wraps each binding in a
 * getter, as vitest's does, would otherwise charge every call for each; see link.ts).
 */
import { BusError, errorFromWire as errorFromWireBinding, errorToWire } from './errors.js';
import type { Link } from './link.js';
import { type Pending, PendingTable } from './pending-table.js';
import type { RequestId } from './request-id.js';
import { messageSize as messageSizeBinding } from './size.js';
import { unref } from './timer.js';
import { type Envelope, Kind as KindBinding, Slot as SlotBinding } from './wire.js';

// Imported bindings read per message, copied once into module constants (see link.ts).
const Kind = KindBinding;
const Slot = SlotBinding;
const messageSize = messageSizeBinding;
const errorFromWire = errorFromWireBinding;

/** What the requests need of the bus that makes them. */
export interface RpcOwner {
  readonly closed: boolean;
  readonly routes: ReadonlyMap<string, Link>;
  readonly maxPending: number;
  readonly maxMessageSize: number;
  /** Default deadline of a request, in milliseconds (0 or Infinity: none). */
  readonly requestTimeout: number;
  /** True while a received frame is dispatched. */
  readonly receiving: boolean;
  /** The link to `peer`; throws BUS_CLOSED or BUS_UNKNOWN_PEER. */
  route(peer: string): Link;
  /** The message's size; throws BUS_MESSAGE_TOO_LARGE above maxMessageSize. */
  checkSize(name: string, payload: unknown): number;
  reportError(error: unknown): void;
  /** Runs the deferred work of this task (which ends with `idle()`) once its microtasks are done. */
  queueTick(): void;
}

export interface RequestOptions {
  timeout?: number;
  signal?: AbortSignal;
  transfer?: Transferable[];
}

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

export class Rpc {
  readonly pending = new PendingTable();
  /** One timer for every request deadline, armed for the earliest one. */
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** Whether the idle timer check is due at the next tick (see `settle`). */
  private idleCheck = false;
  /** The lone request being posted (NaN, equal to no id: none), and its answer if the endpoint delivered one meanwhile. */
  private postingId = Number.NaN;
  private postingPeer = '';
  private postingAnswer: Envelope | undefined;
  /** Runs `expire`: made once, not per arming. */
  private readonly onTimer = (): void => this.expire();

  constructor(private readonly owner: RpcOwner) {}

  request<T = unknown>(peer: string, name: string, payload: unknown, options?: RequestOptions): Promise<T> {
    const owner = this.owner;
    const table = this.pending;
    let link: Link;
    let size: number;
    try {
      if (typeof name !== 'string') throw new BusError('BUS_INVALID_ARGUMENT', 'a handler name must be a string');
      link = (owner.closed ? undefined : owner.routes.get(peer)) ?? owner.route(peer);
      if (table.size >= owner.maxPending) {
        throw new BusError('BUS_TOO_MANY_PENDING', `maxPendingRequests (${owner.maxPending}) reached`);
      }
      if (options?.signal?.aborted) {
        throw new BusError('BUS_ABORTED', 'request aborted', { cause: options.signal.reason });
      }
      size = owner.checkSize(name, payload);
    } catch (error) {
      return Promise.reject(error);
    }
    const id = table.newId();
    const signal = options?.signal;
    const timeout = options?.timeout ?? owner.requestTimeout;
    const envelope = link.envelope(peer, Kind.request, name, id, payload);
    // The only request in flight, made outside a received frame with nothing else queued on its link
    // (one call at a time), is posted at once, before its bookkeeping, so the round trip starts
    // first and the rest overlaps it. Requests made while others are pending go out together, one
    // postMessage per tick.
    const lone = table.size === 0 && !owner.receiving && link.queued === 0;
    let early: Envelope | undefined;
    if (lone) {
      envelope[Slot.sequence] = ++link.seqOut;
      this.postingId = id;
      this.postingPeer = peer;
      try {
        const lost = link.postOn(envelope, options?.transfer);
        if (lost !== undefined) return Promise.reject(lost);
      } catch (error) {
        return Promise.reject(cannotClone(Kind.request, link.peer, error));
      } finally {
        this.postingId = Number.NaN;
        early = this.postingAnswer;
        this.postingAnswer = undefined;
      }
    }
    // The shared executor hands out the resolving functions: no closure made per request.
    const promise = new Promise<T>(capture);
    const pending = table.add(id, peer, captured.resolve!, captured.reject!, signal);
    captured.resolve = captured.reject = undefined;
    if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
      pending.deadline = performance.now() + timeout;
      pending.name = name;
    }
    if (signal !== undefined) this.watch(id, pending, signal);
    if (!lone) link.enqueue(envelope, options?.transfer, size);
    else if (early !== undefined) {
      this.answer(id, pending, early);
      return promise;
    }
    // The deadline timer is armed once the request is on its way, and only if posting did not settle
    // it already (an untimed request has no deadline).
    if (pending.deadline < this.timerAt && table.get(id) === pending) this.armTimer(pending.deadline);
    return promise;
  }

  /**
   * A response or error response from `from`: it settles the request it answers, if that request
   * went to `from`; anything else is dropped.
   */
  onResponse(from: string, envelope: Envelope): void {
    const id = envelope[Slot.id];
    if (typeof id !== 'number') return; // ours are numbers
    const pending = this.pending.get(id);
    if (pending !== undefined) {
      if (pending.peer === from) this.answer(id, pending, envelope); // else not from whom we asked
    } else if (id === this.postingId && from === this.postingPeer) {
      // the answer to the lone request being posted (an endpoint that delivers at once)
      this.postingAnswer = envelope;
    }
  }

  /** Settles a pending request with a response or error response from its peer. */
  private answer(id: number, pending: Pending, envelope: Envelope): void {
    const payload = envelope[Slot.payload];
    if (envelope[Slot.kind] === Kind.errorResponse) {
      this.settle(id, pending, false, errorFromWire(payload));
    } else if (messageSize(payload, this.owner.maxMessageSize) > this.owner.maxMessageSize) {
      this.settle(id, pending, false, new BusError('BUS_MESSAGE_TOO_LARGE', 'the response was dropped: too large'));
    } else {
      this.settle(id, pending, true, payload);
    }
  }

  private watch(id: number, pending: Pending, signal: AbortSignal): void {
    pending.onAbort = () => {
      if (this.pending.get(id) !== pending) return;
      this.settle(id, pending, false, new BusError('BUS_ABORTED', 'request aborted', { cause: signal.reason }));
      this.cancelRemote(pending.peer, id);
    };
    signal.addEventListener('abort', pending.onAbort, { once: true });
  }

  private armTimer(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.min(2_147_483_647, Math.max(0, at - performance.now())));
    unref(this.timer);
  }

  /** Times out every request past its deadline, then re-arms for the earliest one left. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [id, pending] of this.pending.entries()) {
      if (pending.deadline <= now) {
        this.settle(
          id,
          pending,
          false,
          new BusError('BUS_TIMEOUT', `request "${pending.name}" to ${pending.peer} timed out`),
        );
        this.cancelRemote(pending.peer, id);
      } else if (pending.deadline < next) {
        next = pending.deadline;
      }
    }
    if (next !== Number.POSITIVE_INFINITY && this.pending.size > 0) this.armTimer(next);
  }

  private cancelRemote(peer: string, id: number): void {
    const link = this.owner.routes.get(peer);
    if (link !== undefined) link.enqueue(link.envelope(peer, Kind.cancel, undefined, id, undefined));
  }

  private settle(id: number, pending: Pending, ok: boolean, value: unknown): void {
    this.pending.delete(id);
    if (pending.onAbort !== undefined) pending.signal!.removeEventListener('abort', pending.onAbort);
    if (ok) pending.resolve(value as never);
    else pending.reject(value);
    if (this.pending.size === 0 && this.timer !== undefined) {
      // Nothing pending: no timer left behind. Checked at the next tick, after the caller's
      // continuation (queued by the resolve above) has run, so a caller issuing one request after
      // another keeps the timer, and that tick also posts the next request.
      this.idleCheck = true;
      this.owner.queueTick();
    }
  }

  /** The tick's part (see settle): if nothing is pending, the deadline timer is cleared. */
  idle(): void {
    if (!this.idleCheck) return;
    this.idleCheck = false;
    // (usually a next request is pending by now, and the timer stays)
    if (this.pending.size === 0) this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** `peer` is out of reach: its requests fail with `reason`. */
  forget(peer: string, reason: BusError): void {
    for (const [id, pending] of this.pending.entries()) {
      if (pending.peer === peer) this.settle(id, pending, false, reason);
    }
  }

  /** The bus closes: every request fails with `reason`, and the timer goes. */
  close(reason: BusError): void {
    for (const [id, pending] of this.pending.entries()) this.settle(id, pending, false, reason);
    this.clearTimer();
  }

  /** Structured clone refused `envelope`: its request fails, its answer becomes an error answer, anything else is reported. */
  undeliverable(link: Link, envelope: Envelope, cause: unknown): void {
    const kind = envelope[Slot.kind] as number;
    const error = cannotClone(kind, link.peer, cause);
    const id = envelope[Slot.id] as RequestId;
    if (kind === Kind.request) {
      const pending = this.pending.get(id as number);
      if (pending !== undefined) this.settle(id as number, pending, false, error);
    } else if (kind === Kind.response) {
      const to = (envelope[Slot.target] as string | undefined) ?? link.peer;
      link.enqueue(link.envelope(to, Kind.errorResponse, undefined, id, errorToWire(error)));
    } else {
      this.owner.reportError(error);
    }
  }
}
