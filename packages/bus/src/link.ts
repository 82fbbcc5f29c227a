/**
 * Links: one per directly connected peer, with the batching of what is sent on it. Everything
 * queued on a link in one microtask goes out in one postMessage (a lone envelope as it is, several
 * as an array of them); a batch is posted at once when it reaches BATCH_BYTES or BATCH_MESSAGES.
 */
import type { Endpoint, MessageListener } from './endpoint.js';
import { BusError } from './errors.js';
import { messageSize } from './size.js';
import { type Envelope, Slot, TRANSFER } from './wire.js';

/** A batch is posted at once when it reaches this many bytes (messageSize) or messages. */
const BATCH_BYTES = 256 * 1024;
const BATCH_MESSAGES = 1024;

export class Link {
  /** Envelopes waiting for the next flush: `first` alone while there is one (no array for a lone call), else `queue`. */
  queued = 0;
  first: Envelope | undefined;
  queue: Envelope[] | null = null;
  queuedBytes = 0;
  transfers: Transferable[] | null = null;
  scheduled = false;
  seqOut = 0;
  seqIn = 0;
  alive = true;
  missed = 0;
  dead = false;
  heartbeat: ReturnType<typeof setInterval> | undefined;
  offClose: (() => void) | undefined;
  constructor(
    readonly peer: string,
    readonly endpoint: Endpoint,
    readonly remoteHub: boolean,
    readonly listener: MessageListener,
  ) {}
}

/** What the links need of the bus that owns them. */
export interface LinkOwner {
  readonly id: string;
  readonly maxHops: number;
  readonly maxMessageSize: number;
  /** Links with envelopes waiting: flushed once the frame being received is done, else at the next tick. */
  readonly toFlush: Link[];
  /** True while a received frame is dispatched. */
  readonly receiving: boolean;
  /** Runs the deferred work of this task (see flushScheduled) once its microtasks are done. */
  queueTick(): void;
  /** The link is gone (its endpoint cannot post). */
  lose(link: Link, reason: BusError): void;
  /** Structured clone refused `envelope`. */
  undeliverable(link: Link, envelope: Envelope, cause: unknown): void;
}

/** An envelope to `target` over `link`: source, target and hops only when `link` leads to a hub. */
export function envelopeTo(
  bus: LinkOwner,
  link: Link,
  target: string,
  kind: number,
  name: unknown,
  id: unknown,
  payload: unknown,
): Envelope {
  return link.peer === target
    ? [kind, 0, name, id, payload]
    : [kind, 0, name, id, payload, bus.id, target, bus.maxHops];
}

/** The message's size (see messageSize); throws BUS_MESSAGE_TOO_LARGE above maxMessageSize. */
export function checkSize(bus: LinkOwner, name: string, payload: unknown): number {
  const size = messageSize(payload, bus.maxMessageSize) + name.length;
  if (size > bus.maxMessageSize) {
    throw new BusError(
      'BUS_MESSAGE_TOO_LARGE',
      `message "${name}" is larger than maxMessageSize (${bus.maxMessageSize})`,
      {
        data: { size, limit: bus.maxMessageSize },
      },
    );
  }
  return size;
}

/** Queues an envelope on a link; everything queued in one microtask goes out in one postMessage. */
export function enqueue(bus: LinkOwner, link: Link, envelope: Envelope, transfer?: Transferable[], size = 0): void {
  if (link.dead) return;
  envelope[Slot.sequence] = ++link.seqOut;
  const queued = link.queued++;
  if (queued === 0) link.first = envelope;
  else if (queued === 1) link.queue = [link.first!, envelope];
  else link.queue!.push(envelope);
  if (transfer !== undefined && transfer.length > 0) {
    envelope[TRANSFER] = transfer;
    if (link.transfers === null) link.transfers = transfer.slice();
    else for (const t of transfer) link.transfers.push(t);
  }
  link.queuedBytes += size;
  if (link.queuedBytes >= BATCH_BYTES || link.queued >= BATCH_MESSAGES) {
    // Big batches cost more to clone than they save: post this one now.
    post(bus, link);
    return;
  }
  if (!link.scheduled) {
    link.scheduled = true;
    // While a frame is being received, what it causes goes out once it is done; otherwise
    // everything queued in this task goes out in one postMessage per link at the next tick.
    bus.toFlush.push(link);
    if (!bus.receiving) bus.queueTick();
  }
}

/** Posts what `link` holds (one envelope as it is, a batch as an array of them). */
export function post(bus: LinkOwner, link: Link): void {
  link.scheduled = false;
  link.queuedBytes = 0;
  const queued = link.queued;
  if (queued === 0 || link.dead) return;
  // A lone envelope goes as it is (one array less to clone), a batch as an array of envelopes.
  const frame = queued === 1 ? link.first! : link.queue!;
  const transfers = link.transfers;
  link.queued = 0;
  link.first = undefined;
  link.queue = null;
  link.transfers = null;
  try {
    postOn(bus, link, frame, transfers);
  } catch (error) {
    if (queued === 1) bus.undeliverable(link, frame, error);
    else {
      // One bad envelope must not sink the batch: post them one by one.
      for (const envelope of frame as Envelope[]) {
        try {
          if (postOn(bus, link, envelope, envelope[TRANSFER]) !== undefined) return; // the peer is gone
        } catch (cause) {
          bus.undeliverable(link, envelope, cause);
        }
      }
    }
  }
}

/**
 * Posts `frame` on `link`. An endpoint that cannot post at all (a closed port or channel) means the
 * peer is gone: the link is lost, and the reason returned. A DataCloneError is thrown to the caller,
 * which knows what the frame held.
 */
export function postOn(
  bus: LinkOwner,
  link: Link,
  frame: unknown,
  transfers: Transferable[] | null | undefined,
): BusError | undefined {
  try {
    if (transfers == null || transfers.length === 0) link.endpoint.postMessage(frame);
    else link.endpoint.postMessage(frame, transfers);
    return undefined;
  } catch (error) {
    if ((error as { name?: unknown } | null)?.name === 'DataCloneError') throw error;
    const lost = new BusError('BUS_PEER_LOST', `cannot post to ${JSON.stringify(link.peer)}`, { cause: error });
    bus.lose(link, lost);
    return lost;
  }
}

/** Posts what every scheduled link holds. */
export function flushScheduled(bus: LinkOwner): void {
  const links = bus.toFlush;
  while (links.length > 0) post(bus, links.pop()!);
}

/** Forgets what a lost link still holds. */
export function clearQueue(link: Link): void {
  link.queued = 0;
  link.first = undefined;
  link.queue = null;
  link.transfers = null;
}
