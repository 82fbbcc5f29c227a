/**
 * Server-Sent Events hub for ref updates.
 *
 * Wire format (HTML Living Standard, "Server-sent events", event stream interpretation):
 *
 *   stream = [ bom ] *event
 *   event  = *( comment / field ) end-of-line
 *   comment = colon *any-char end-of-line
 *   field  = 1*name-char [ colon [ space ] *any-char ] end-of-line
 *
 * Every ref update becomes exactly these bytes, formatted once and written unchanged to every
 * subscriber:
 *
 *   id: <epoch>-<seq>\n
 *   event: ref-update\n
 *   data: {"repo":"…","ref":"…","old":"…","new":"…"}\n
 *   \n
 *
 * `seq` is one counter for the whole hub; `epoch` changes each time a hub is created (a gateway
 * restart), so an id from another epoch cannot be replayed and gets `event: reset` instead. The
 * data line is JSON, which escapes CR and LF, so a hostile ref name cannot end the line or start
 * a new field. Each repository keeps a ring buffer of its last `replayCap` events for clients
 * that reconnect with `Last-Event-ID`; a client that missed more than that (or more than
 * `replayCap` events across its repositories) gets `event: reset` and refetches its refs.
 *
 * One heartbeat timer serves every connection (a `:` comment line); it runs only while someone
 * listens and never keeps the process alive. A sink that reports a full write buffer is dropped
 * (closed): the client reconnects and replays what it missed.
 */
import { GatewayError } from './errors.js';

export interface RefUpdateEvent {
  repo: string;
  ref: string;
  /** Old object id, 40 zeros when the ref was created. */
  old: string;
  /** New object id, 40 zeros when the ref was deleted. */
  new: string;
}

/** Where a subscriber's bytes go. `write` returns false when the client is too slow: the hub drops it. */
export interface SseSink {
  write(bytes: Uint8Array): boolean;
  close(): void;
}

export interface SseHubOptions {
  /** Heartbeat period in ms (default 15 000); 0 disables the heartbeat. */
  heartbeatMs?: number;
  /** Events kept per repository for `Last-Event-ID` replay (default 1024). */
  replayCap?: number;
  /** Bytes a subscriber may have unsent before it is dropped (default 1 MiB). */
  maxBufferedBytes?: number;
  /** The `retry:` reconnection delay sent to clients in ms (default 2000). */
  retryMs?: number;
  /** Fixed epoch, for tests; default: derived from the clock and randomness. */
  epoch?: string;
  /** Subscribers allowed at once (default 10 000); more get GatewayError `GATEWAY_TOO_MANY_SUBSCRIBERS`. */
  maxSubscribers?: number;
}

export interface SubscribeOptions {
  /** Repositories to follow; undefined follows all of them. */
  repos?: readonly string[];
  /** The client's `Last-Event-ID` header (or `lastEventId` query parameter). */
  lastEventId?: string | null;
}

interface Subscriber {
  readonly sink: SseSink;
  readonly repos: readonly string[] | undefined;
  open: boolean;
}

interface Ring {
  readonly seqs: number[];
  readonly frames: Uint8Array[];
  /** Next slot to overwrite once full. */
  head: number;
  /** Highest sequence number that fell out of the ring (0: none). */
  evicted: number;
}

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode(':\n\n');
const ZERO_ID = '0'.repeat(40);

export { ZERO_ID };

/** A JSON value as JSON text (`null` for what JSON cannot hold, as undefined). */
function json(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

/**
 * Formats one ref-update event: the exact bytes every subscriber receives. Each frame is a new
 * array over an ArrayBuffer of its own, exactly its size: no frame shares memory with another, so
 * `frame.buffer` reveals no other event (of another repository, say). The frame itself is shared
 * by every subscriber and by the replay ring: treat it as read-only, and copy it before
 * transferring it anywhere (a transfer would empty it for all of them).
 */
export function formatRefUpdate(id: string, event: RefUpdateEvent): Uint8Array {
  // the data line is built field by field (JSON.stringify of each string), not from an object
  return encoder.encode(
    `id: ${id}\nevent: ref-update\ndata: {"repo":${json(event.repo)},"ref":${json(event.ref)},"old":${json(event.old)},"new":${json(event.new)}}\n\n`,
  );
}

export class SseHub {
  readonly epoch: string;
  readonly heartbeatMs: number;
  readonly replayCap: number;
  readonly maxBufferedBytes: number;
  readonly maxSubscribers: number;
  private readonly retryFrame: Uint8Array;
  private seq = 0;
  private readonly all = new Set<Subscriber>();
  private readonly byRepo = new Map<string, Set<Subscriber>>();
  private readonly rings = new Map<string, Ring>();
  private count = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  constructor(options: SseHubOptions = {}) {
    this.epoch = options.epoch ?? `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
    if (!/^[a-z0-9]+$/.test(this.epoch)) throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'epoch must be [a-z0-9]+');
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.replayCap = Math.max(1, options.replayCap ?? 1024);
    this.maxBufferedBytes = options.maxBufferedBytes ?? 1 << 20;
    this.maxSubscribers = options.maxSubscribers ?? 10_000;
    this.retryFrame = encoder.encode(`retry: ${options.retryMs ?? 2000}\n:ok\n\n`);
  }

  /** Number of connected subscribers. */
  get size(): number {
    return this.count;
  }

  /** Whether a new subscriber would be taken (the hub is open and below maxSubscribers). */
  get accepting(): boolean {
    return !this.closed && this.count < this.maxSubscribers;
  }

  /** The id the next client should present to miss nothing from now on. */
  get lastId(): string {
    return `${this.epoch}-${this.seq}`;
  }

  /** Publishes one ref update; returns its id. */
  publish(event: RefUpdateEvent): string {
    const seq = ++this.seq;
    const id = `${this.epoch}-${seq}`;
    const frame = formatRefUpdate(id, event);
    this.remember(event.repo, seq, frame);
    const repoSubscribers = this.byRepo.get(event.repo);
    if (repoSubscribers !== undefined) for (const s of repoSubscribers) this.deliver(s, frame);
    for (const s of this.all) this.deliver(s, frame);
    return id;
  }

  /**
   * Adds a subscriber: writes the preamble, then either the replay of what `lastEventId` missed or
   * `event: reset`, then every new event. Returns the unsubscribe function (idempotent).
   */
  subscribe(sink: SseSink, options: SubscribeOptions = {}): () => void {
    if (this.closed) throw new GatewayError('GATEWAY_CLOSED', 'the SSE hub is closed', { status: 503 });
    if (this.count >= this.maxSubscribers) {
      throw new GatewayError('GATEWAY_TOO_MANY_SUBSCRIBERS', 'too many event subscribers', { status: 503 });
    }
    const repos = options.repos === undefined ? undefined : [...new Set(options.repos)];
    const subscriber: Subscriber = { sink, repos, open: true };
    if (!sink.write(this.retryFrame)) {
      sink.close();
      return () => {};
    }
    if (options.lastEventId != null && options.lastEventId !== '') {
      for (const frame of this.replay(options.lastEventId, repos)) {
        if (!sink.write(frame)) {
          sink.close();
          return () => {};
        }
      }
    }
    if (repos === undefined) this.all.add(subscriber);
    else {
      for (const repo of repos) {
        let set = this.byRepo.get(repo);
        if (set === undefined) this.byRepo.set(repo, (set = new Set()));
        set.add(subscriber);
      }
    }
    this.count++;
    this.startHeartbeat();
    return () => this.remove(subscriber, false);
  }

  /** A ReadableStream of the event stream for one client (for fetch-style handlers). */
  stream(options: SubscribeOptions & { signal?: AbortSignal } = {}): ReadableStream<Uint8Array> {
    let unsubscribe: (() => void) | undefined;
    const maxBuffered = this.maxBufferedBytes;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          let done = false;
          const sink: SseSink = {
            write(bytes) {
              if (done) return false;
              controller.enqueue(bytes);
              return (controller.desiredSize ?? 0) > -maxBuffered;
            },
            close() {
              if (done) return;
              done = true;
              try {
                controller.close();
              } catch {
                // already cancelled by the consumer: nothing left to close
              }
            },
          };
          unsubscribe = this.subscribe(sink, options);
          options.signal?.addEventListener('abort', () => {
            unsubscribe?.();
            sink.close();
          });
        },
        cancel: () => unsubscribe?.(),
      },
      { highWaterMark: 0 },
    );
  }

  /**
   * Ends every subscriber's stream but keeps the hub open: clients reconnect (EventSource does so
   * by itself) and replay what they missed with Last-Event-ID.
   */
  disconnectAll(): void {
    for (const s of [...this.all]) this.remove(s, true);
    for (const set of [...this.byRepo.values()]) for (const s of [...set]) this.remove(s, true);
  }

  /** Stops the heartbeat and closes every subscriber. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.all]) this.remove(s, true);
    for (const set of [...this.byRepo.values()]) for (const s of [...set]) this.remove(s, true);
    this.stopHeartbeat();
  }

  /** Frames to send a client that last saw `lastEventId`: the missed events, or one reset. */
  replay(lastEventId: string, repos: readonly string[] | undefined): Uint8Array[] {
    const match = /^([a-z0-9]+)-(\d{1,15})$/.exec(lastEventId.trim());
    if (match === null || match[1] !== this.epoch) return [this.resetFrame('epoch')];
    const last = Number(match[2]);
    if (last > this.seq) return [this.resetFrame('epoch')];
    if (last === this.seq) return [];
    const names = repos ?? [...this.rings.keys()];
    const picked: { seq: number; frame: Uint8Array }[] = [];
    for (const name of names) {
      const ring = this.rings.get(name);
      if (ring === undefined) continue;
      if (ring.evicted > last) return [this.resetFrame('cap')];
      for (let i = 0; i < ring.seqs.length; i++) {
        const seq = ring.seqs[i]!;
        if (seq > last) picked.push({ seq, frame: ring.frames[i]! });
      }
      if (picked.length > this.replayCap) return [this.resetFrame('cap')];
    }
    picked.sort((a, b) => a.seq - b.seq);
    return picked.map((p) => p.frame);
  }

  private resetFrame(reason: 'cap' | 'epoch'): Uint8Array {
    return encoder.encode(`id: ${this.epoch}-${this.seq}\nevent: reset\ndata: {"reason":"${reason}"}\n\n`);
  }

  private remember(repo: string, seq: number, frame: Uint8Array): void {
    let ring = this.rings.get(repo);
    if (ring === undefined) this.rings.set(repo, (ring = { seqs: [], frames: [], head: 0, evicted: 0 }));
    if (ring.seqs.length < this.replayCap) {
      ring.seqs.push(seq);
      ring.frames.push(frame);
      return;
    }
    ring.evicted = ring.seqs[ring.head]!;
    ring.seqs[ring.head] = seq;
    ring.frames[ring.head] = frame;
    ring.head = (ring.head + 1) % this.replayCap;
  }

  private deliver(subscriber: Subscriber, frame: Uint8Array): void {
    if (!subscriber.sink.write(frame)) this.remove(subscriber, true);
  }

  private remove(subscriber: Subscriber, closeSink: boolean): void {
    if (!subscriber.open) return;
    subscriber.open = false;
    if (subscriber.repos === undefined) this.all.delete(subscriber);
    else {
      for (const repo of subscriber.repos) {
        const set = this.byRepo.get(repo);
        if (set === undefined) continue;
        set.delete(subscriber);
        if (set.size === 0) this.byRepo.delete(repo);
      }
    }
    this.count--;
    if (this.count === 0) this.stopHeartbeat();
    if (closeSink) subscriber.sink.close();
  }

  private startHeartbeat(): void {
    if (this.timer !== undefined || this.heartbeatMs <= 0) return;
    this.timer = setInterval(() => this.beat(), this.heartbeatMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private stopHeartbeat(): void {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Sends the heartbeat comment to every subscriber now (the timer calls this). */
  beat(): void {
    for (const s of this.all) this.deliver(s, HEARTBEAT);
    for (const set of this.byRepo.values()) {
      for (const s of set) {
        // a subscriber following several repositories gets one heartbeat
        if (s.repos !== undefined && s.repos.length > 1 && set !== this.byRepo.get(s.repos[0]!)) continue;
        this.deliver(s, HEARTBEAT);
      }
    }
  }
}
