/**
 * Links: one per directly connected peer, with the batching of what is sent on it. Everything
 * queued on a link in one microtask goes out in one postMessage (a lone envelope as it is, several
 * as an array of them); a batch is posted at once when it reaches BATCH_BYTES or BATCH_MESSAGES.
 *
 * What every message does on its way out (build its envelope, queue, post) is a method of the
 * link: the other concept files reach it through the link they hold, so a message crosses no module
 * binding per step (a module loader that wraps each binding in a getter, as vitest's does, would
 * otherwise charge every call for each). For the same reason the files of the message path copy
 * the imported names they read per message (`Kind`, `Slot`, `messageSize`, ...) into module
 * constants once: a module constant is read directly under any loader.
 */
import type { Endpoint, MessageListener } from './endpoint.js';
import { BusError } from './errors.js';
import { type Envelope, Slot as SlotBinding, TRANSFER } from './wire.js';

// Imported bindings read per message, copied once into module constants (see above).
const Slot = SlotBinding;

/** A batch is posted at once when it reaches this many bytes (messageSize) or messages. */
const BATCH_BYTES = 256 * 1024;
const BATCH_MESSAGES = 1024;

/** What the links need of the bus that owns them. */
export interface LinkOwner {
  readonly id: string;
  readonly maxHops: number;
  /** Links with envelopes waiting: flushed once the frame being received is done, else at the next tick. */
  readonly toFlush: Link[];
  /** True while a received frame is dispatched. */
  readonly receiving: boolean;
  /** Runs the deferred work of this task (see BusState.flush) once its microtasks are done. */
  queueTick(): void;
  /** The link is gone (its endpoint cannot post). */
  lose(link: Link, reason: BusError): void;
  /** Structured clone refused `envelope`. */
  undeliverable(link: Link, envelope: Envelope, cause: unknown): void;
}

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
    readonly owner: LinkOwner,
    readonly peer: string,
    readonly endpoint: Endpoint,
    readonly remoteHub: boolean,
    readonly listener: MessageListener,
  ) {}

  /** An envelope to `target` over this link: source, target and hops only when it leads to a hub. */
  envelope(target: string, kind: number, name: unknown, id: unknown, payload: unknown): Envelope {
    return this.peer === target
      ? [kind, 0, name, id, payload]
      : [kind, 0, name, id, payload, this.owner.id, target, this.owner.maxHops];
  }

  /** Queues an envelope; everything queued in one microtask goes out in one postMessage. */
  enqueue(envelope: Envelope, transfer?: Transferable[], size = 0): void {
    if (this.dead) return;
    envelope[Slot.sequence] = ++this.seqOut;
    const queued = this.queued++;
    if (queued === 0) this.first = envelope;
    else if (queued === 1) this.queue = [this.first!, envelope];
    else this.queue!.push(envelope);
    if (transfer !== undefined && transfer.length > 0) {
      envelope[TRANSFER] = transfer;
      if (this.transfers === null) this.transfers = transfer.slice();
      else for (const t of transfer) this.transfers.push(t);
    }
    this.queuedBytes += size;
    if (this.queuedBytes >= BATCH_BYTES || this.queued >= BATCH_MESSAGES) {
      // Big batches cost more to clone than they save: post this one now.
      this.post();
      return;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      // While a frame is being received, what it causes goes out once it is done; otherwise
      // everything queued in this task goes out in one postMessage per link at the next tick.
      const owner = this.owner;
      owner.toFlush.push(this);
      if (!owner.receiving) owner.queueTick();
    }
  }

  /** Posts what the link holds (one envelope as it is, a batch as an array of them). */
  post(): void {
    this.scheduled = false;
    this.queuedBytes = 0;
    const queued = this.queued;
    if (queued === 0 || this.dead) return;
    // A lone envelope goes as it is (one array less to clone), a batch as an array of envelopes.
    const frame = queued === 1 ? this.first! : this.queue!;
    const transfers = this.transfers;
    this.clear();
    try {
      this.postOn(frame, transfers);
    } catch (error) {
      if (queued === 1) this.owner.undeliverable(this, frame, error);
      else {
        // One bad envelope must not sink the batch: post them one by one.
        for (const envelope of frame as Envelope[]) {
          try {
            if (this.postOn(envelope, envelope[TRANSFER]) !== undefined) return; // the peer is gone
          } catch (cause) {
            this.owner.undeliverable(this, envelope, cause);
          }
        }
      }
    }
  }

  /**
   * Posts `frame`. An endpoint that cannot post at all (a closed port or channel) means the peer is
   * gone: the link is lost, and the reason returned. A DataCloneError is thrown to the caller, which
   * knows what the frame held.
   */
  postOn(frame: unknown, transfers: Transferable[] | null | undefined): BusError | undefined {
    try {
      if (transfers == null || transfers.length === 0) this.endpoint.postMessage(frame);
      else this.endpoint.postMessage(frame, transfers);
      return undefined;
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name === 'DataCloneError') throw error;
      const lost = new BusError('BUS_PEER_LOST', `cannot post to ${JSON.stringify(this.peer)}`, { cause: error });
      this.owner.lose(this, lost);
      return lost;
    }
  }

  /** Forgets what the link holds. */
  clear(): void {
    this.queued = 0;
    this.first = undefined;
    this.queue = null;
    this.transfers = null;
  }
}
