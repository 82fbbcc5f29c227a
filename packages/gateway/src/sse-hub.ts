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
 * listens and never keeps the process alive.
 *
 * Memory is counted in bytes a subscriber holds, not in events. Events published in one turn of
 * the event loop (a push of many refs arrives as one burst) go out together: the hub joins the
 * turn's frames once per audience (the subscribers of one repository, of every repository, of a
 * set of repositories) into one chunk that all of that audience share, so a burst costs each
 * subscriber one queue entry and one write, however many refs it moved. A joined chunk holds
 * only events its audience follows. Each subscriber has a queue of such shared chunks, counted in
 * bytes; the hub writes it to the sink while the sink takes more and waits for the sink's
 * `onReady` when it is full. A queue that would pass `maxBufferedBytes` is dropped and replaced by
 * one `event: reset` (whose id is the last event dropped, so the client refetches refs and goes
 * on from there); a subscriber whose queue passes the bound again without having read anything
 * since its reset is disconnected, as is one whose sink is full and cannot say when it is ready.
 * At most `maxSubscribers` connect at once (each holds a socket: the default stays well under
 * common file-descriptor limits); the adapters refuse the next with `503` and `Retry-After`.
 *
 * An event log shared by several gateways (`replayFrom`, `deliver`) replaces the epoch ids and the
 * rings: the log names each event, replays from its own history, possibly asynchronously (the
 * subscriber then gets nothing else until its replay is in), and resets every subscriber when it
 * lost track of events (`broadcast` of a reset frame).
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

/** The replay a hub asks for when a client comes back with `Last-Event-ID`. */
export interface EventReplay {
  /**
   * The frames a client that last saw `lastEventId` missed from `repos` (undefined: every
   * repository), in order, or one `event: reset` frame. A promise must resolve (never reject)
   * with frames that also cover every event the hub delivered while it was pending.
   */
  replay(lastEventId: string, repos: readonly string[] | undefined): Uint8Array[] | Promise<Uint8Array[]>;
}

/**
 * Where a subscriber's bytes go. The hub's chunks are shared by many subscribers: read-only.
 * `write` returns false when the sink's own buffer is full: the hub then writes nothing more
 * until the sink calls the listener it was given through `onReady`; a sink without `onReady`
 * is dropped (closed) instead.
 */
export interface SseSink {
  write(bytes: Uint8Array): boolean;
  close(): void;
  /** Registers the listener to call whenever the sink can take bytes again after a full write. */
  onReady?(listener: () => void): void;
}

export interface SseHubOptions {
  /** Heartbeat period in ms (default 15 000); 0 disables the heartbeat. */
  heartbeatMs?: number;
  /** Events kept per repository for `Last-Event-ID` replay (default 1024). */
  replayCap?: number;
  /**
   * Bytes of events the hub queues for one subscriber whose sink is full (default 1 MiB); past
   * that its queue is dropped for one `event: reset`, or it is disconnected if it read nothing
   * since its last reset.
   */
  maxBufferedBytes?: number;
  /** The `retry:` reconnection delay sent to clients in ms (default 2000). */
  retryMs?: number;
  /** Fixed epoch, for tests; default: derived from the clock and randomness. */
  epoch?: string;
  /**
   * Subscribers (SSE connections) allowed at once (default 512); more get GatewayError
   * `GATEWAY_TOO_MANY_SUBSCRIBERS`, which the adapters answer with 503 and `Retry-After`.
   */
  maxSubscribers?: number;
}

export interface SubscribeOptions {
  /** Repositories to follow; undefined follows all of them. */
  repos?: readonly string[];
  /** The client's `Last-Event-ID` header (or `lastEventId` query parameter). */
  lastEventId?: string | null;
}

/** Figures of the hub's memory and of what it did to slow subscribers (bytes, counts; no timings). */
export interface SseHubStats {
  subscribers: number;
  /** Bytes queued for all subscribers now (a chunk shared by several counts once per subscriber). */
  queuedBytes: number;
  /** The most bytes one subscriber ever had queued (never above maxBufferedBytes). */
  maxQueuedBytes: number;
  /** Queues dropped for an `event: reset`. */
  resets: number;
  /** Subscribers disconnected for not reading. */
  dropped: number;
}

interface Subscriber {
  readonly sink: SseSink;
  readonly repos: readonly string[] | undefined;
  /** For a subscriber of several repositories: their names, sorted (its audience's key). */
  readonly audience: string | undefined;
  open: boolean;
  /** Chunks not yet written to the sink, from `head` on. */
  queue: (Uint8Array | undefined)[];
  head: number;
  queued: number;
  /** The sink said it is full: nothing is written until it is ready. */
  waiting: boolean;
  /** The sink took bytes since the subscriber's last reset. */
  progressed: boolean;
  /** Its replay is being fetched: nothing is queued for it until the replay, which covers it, is in. */
  replaying: boolean;
}

interface Published {
  readonly repo: string;
  readonly frame: Uint8Array;
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

// from the bus names, not @gitport/pack: the gateway's thread relays events and loads no pack code
export { ZERO_ID } from 'gitport/wire';

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

/** Formats an `event: reset`: the client refetches its refs and goes on from `id`. */
export function formatReset(id: string, reason: 'cap' | 'epoch' | 'overflow' | 'log'): Uint8Array {
  return encoder.encode(`id: ${id}\nevent: reset\ndata: {"reason":"${reason}"}\n\n`);
}

/** One chunk holding `frames` in order: the frame itself when there is one, else a joined copy. */
function join(frames: readonly Uint8Array[]): Uint8Array {
  if (frames.length === 1) return frames[0]!;
  let length = 0;
  for (const frame of frames) length += frame.byteLength;
  const chunk = new Uint8Array(length);
  let at = 0;
  for (const frame of frames) {
    chunk.set(frame, at);
    at += frame.byteLength;
  }
  return chunk;
}

/** Runs `fn` on a later macrotask, so that a burst of publishes spread over a few messages goes out as one. */
function later(fn: () => void): void {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (typeof immediate === 'function') immediate(fn);
  else setTimeout(fn, 0);
}

/** Bytes of its own a ReadableStream from `stream()` holds before it says it is full. */
const STREAM_HIGH_WATER = 64 * 1024;

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
  /** Events published since the last flush, in order. */
  private pending: Published[] = [];
  private flushScheduled = false;
  private queuedBytes = 0;
  private maxQueuedBytes = 0;
  private resets = 0;
  private dropped = 0;
  /** Where `Last-Event-ID` replays come from: the hub's own rings unless a shared log is set. */
  replayFrom: EventReplay = this;

  constructor(options: SseHubOptions = {}) {
    this.epoch = options.epoch ?? `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
    if (!/^[a-z0-9]+$/.test(this.epoch)) throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'epoch must be [a-z0-9]+');
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.replayCap = Math.max(1, options.replayCap ?? 1024);
    this.maxBufferedBytes = Math.max(1024, options.maxBufferedBytes ?? 1 << 20);
    this.maxSubscribers = Math.max(0, options.maxSubscribers ?? 512);
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

  /** What the hub holds and what it did to slow subscribers. */
  stats(): SseHubStats {
    return {
      subscribers: this.count,
      queuedBytes: this.queuedBytes,
      maxQueuedBytes: this.maxQueuedBytes,
      resets: this.resets,
      dropped: this.dropped,
    };
  }

  /**
   * Publishes one ref update; returns its id. It is formatted here, once, and reaches the
   * subscribers with the rest of this turn's events (see `flush`).
   */
  publish(event: RefUpdateEvent): string {
    const seq = ++this.seq;
    const id = `${this.epoch}-${seq}`;
    const frame = formatRefUpdate(id, event);
    this.remember(event.repo, seq, frame);
    this.fanOut(event.repo, frame);
    return id;
  }

  /**
   * Delivers an event a shared log has named `id` (and keeps for replay): formatted here, once;
   * returns the frame (read-only, as every frame).
   */
  deliver(id: string, event: RefUpdateEvent): Uint8Array {
    const frame = formatRefUpdate(id, event);
    this.fanOut(event.repo, frame);
    return frame;
  }

  private fanOut(repo: string, frame: Uint8Array): void {
    if (this.count === 0) return;
    this.pending.push({ repo, frame });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      later(() => this.flush());
    }
  }

  /**
   * Delivers the events published since the last flush now (the hub does so by itself on the next
   * macrotask): one shared chunk per audience, one queue entry and at most one write per subscriber.
   */
  flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const framesOf = new Map<string, Uint8Array[]>();
    for (const { repo, frame } of batch) {
      const frames = framesOf.get(repo);
      if (frames === undefined) framesOf.set(repo, [frame]);
      else frames.push(frame);
    }
    const touched: Subscriber[] = [];
    if (this.all.size > 0) {
      const chunk = join(batch.map((p) => p.frame));
      for (const s of this.all) if (this.enqueue(s, chunk)) touched.push(s);
    }
    const several = new Set<Subscriber>();
    for (const [repo, frames] of framesOf) {
      const set = this.byRepo.get(repo);
      if (set === undefined) continue;
      let chunk: Uint8Array | undefined;
      for (const s of set) {
        if (s.audience !== undefined) {
          several.add(s);
          continue;
        }
        chunk ??= join(frames);
        if (this.enqueue(s, chunk)) touched.push(s);
      }
    }
    // subscribers of several repositories: one chunk per distinct set, its events in publish order
    const chunks = new Map<string, Uint8Array>();
    for (const s of several) {
      let chunk = chunks.get(s.audience!);
      if (chunk === undefined) {
        const wanted = new Set(s.repos);
        chunk = join(batch.filter((p) => wanted.has(p.repo)).map((p) => p.frame));
        chunks.set(s.audience!, chunk);
      }
      if (this.enqueue(s, chunk)) touched.push(s);
    }
    for (const s of touched) this.pump(s);
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
    // events already published go out first, so the replay below is exactly what comes before the new ones
    this.flush();
    const repos = options.repos === undefined ? undefined : [...new Set(options.repos)];
    const subscriber: Subscriber = {
      sink,
      repos,
      audience: repos !== undefined && repos.length > 1 ? [...repos].sort().join('\n') : undefined,
      open: true,
      queue: [],
      head: 0,
      queued: 0,
      waiting: false,
      progressed: true,
      replaying: false,
    };
    if (repos === undefined) this.all.add(subscriber);
    else {
      for (const repo of repos) {
        let set = this.byRepo.get(repo);
        if (set === undefined) this.byRepo.set(repo, (set = new Set()));
        set.add(subscriber);
      }
    }
    this.count++;
    sink.onReady?.(() => {
      if (!subscriber.open || !subscriber.waiting) return;
      subscriber.waiting = false;
      subscriber.progressed = true;
      this.pump(subscriber);
    });
    this.enqueue(subscriber, this.retryFrame);
    if (options.lastEventId != null && options.lastEventId !== '') {
      const frames = this.replayFrom.replay(options.lastEventId, repos);
      if (frames instanceof Promise) {
        subscriber.replaying = true;
        frames.then(
          (ready) => this.replayed(subscriber, ready),
          () => this.replayed(subscriber, [formatReset(this.lastId, 'log')]),
        );
      } else if (frames.length > 0) this.enqueue(subscriber, join(frames));
    }
    this.pump(subscriber);
    if (!subscriber.open) return () => {};
    this.startHeartbeat();
    return () => this.remove(subscriber, false);
  }

  /** A ReadableStream of the event stream for one client (for fetch-style handlers). */
  stream(options: SubscribeOptions & { signal?: AbortSignal } = {}): ReadableStream<Uint8Array> {
    let unsubscribe: (() => void) | undefined;
    let ready: (() => void) | undefined;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          let done = false;
          const sink: SseSink = {
            write(bytes) {
              if (done) return false;
              controller.enqueue(bytes);
              return (controller.desiredSize ?? 0) > 0;
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
            onReady(listener) {
              ready = listener;
            },
          };
          unsubscribe = this.subscribe(sink, options);
          options.signal?.addEventListener('abort', () => {
            unsubscribe?.();
            sink.close();
          });
        },
        pull: () => ready?.(),
        cancel: () => unsubscribe?.(),
      },
      { highWaterMark: STREAM_HIGH_WATER, size: (chunk) => chunk.byteLength },
    );
  }

  /**
   * Ends every subscriber's stream but keeps the hub open: clients reconnect (EventSource does so
   * by itself) and replay what they missed with Last-Event-ID.
   */
  disconnectAll(): void {
    this.flush();
    for (const s of [...this.all]) this.remove(s, true);
    for (const set of [...this.byRepo.values()]) for (const s of [...set]) this.remove(s, true);
  }

  /** Stops the heartbeat and closes every subscriber. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    for (const s of [...this.all]) this.remove(s, true);
    for (const set of [...this.byRepo.values()]) for (const s of [...set]) this.remove(s, true);
    this.stopHeartbeat();
  }

  /** Queues a fetched replay (it covers every event delivered while it was fetched) and goes on live. */
  private replayed(s: Subscriber, frames: Uint8Array[]): void {
    if (!s.open) return;
    s.replaying = false;
    if (frames.length > 0) this.enqueue(s, join(frames));
    this.pump(s);
  }

  /** Queues one frame (a reset from the shared log) for every subscriber. */
  broadcast(frame: Uint8Array): void {
    this.flush();
    const sent: Subscriber[] = [];
    for (const s of this.all) if (this.enqueue(s, frame)) sent.push(s);
    for (const set of this.byRepo.values()) {
      for (const s of set) {
        // a subscriber following several repositories gets one copy
        if (s.repos !== undefined && s.repos.length > 1 && set !== this.byRepo.get(s.repos[0]!)) continue;
        if (this.enqueue(s, frame)) sent.push(s);
      }
    }
    for (const s of sent) this.pump(s);
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

  private resetFrame(reason: 'cap' | 'epoch' | 'overflow'): Uint8Array {
    return formatReset(this.lastId, reason);
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

  /**
   * Queues a chunk for a subscriber, within its bound: past it, the queue (and the chunk) give
   * way to one reset, or the subscriber is disconnected if it read nothing since its last reset.
   * Returns whether the subscriber is still there.
   */
  private enqueue(s: Subscriber, chunk: Uint8Array): boolean {
    if (!s.open) return false;
    if (s.replaying) return true;
    if (s.queued + chunk.byteLength > this.maxBufferedBytes) {
      if (s.waiting && !s.progressed) {
        this.dropped++;
        this.remove(s, true);
        return false;
      }
      this.queuedBytes -= s.queued;
      s.queue = [];
      s.head = 0;
      s.queued = 0;
      s.progressed = false;
      this.resets++;
      chunk = this.resetFrame('overflow');
    }
    s.queue.push(chunk);
    s.queued += chunk.byteLength;
    this.queuedBytes += chunk.byteLength;
    if (s.queued > this.maxQueuedBytes) this.maxQueuedBytes = s.queued;
    return true;
  }

  /** Writes a subscriber's queue to its sink while the sink takes more. */
  private pump(s: Subscriber): void {
    while (s.open && !s.waiting && s.head < s.queue.length) {
      const chunk = s.queue[s.head]!;
      s.queue[s.head++] = undefined;
      s.queued -= chunk.byteLength;
      this.queuedBytes -= chunk.byteLength;
      if (s.sink.write(chunk)) continue;
      if (s.sink.onReady === undefined) {
        this.dropped++;
        this.remove(s, true);
        return;
      }
      s.waiting = true;
    }
    if (s.head === s.queue.length) {
      s.queue = [];
      s.head = 0;
    } else if (s.head > 1024) {
      s.queue = s.queue.slice(s.head);
      s.head = 0;
    }
  }

  private remove(subscriber: Subscriber, closeSink: boolean): void {
    if (!subscriber.open) return;
    subscriber.open = false;
    this.queuedBytes -= subscriber.queued;
    subscriber.queue = [];
    subscriber.head = 0;
    subscriber.queued = 0;
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
    this.broadcast(HEARTBEAT);
  }
}
