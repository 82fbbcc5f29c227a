/**
 * One duplex byte stream: the read side (a queue the other side fills, bounded by the window
 * we advertised) and the write side (credit the other side grants, a coalescing buffer for
 * small writes). See `frames.ts` for the wire protocol.
 *
 * Ownership: a chunk yielded by the read side belongs to the reader (it arrived in its own
 * buffer). A chunk written with `{ transfer: true }` is given up by the writer: when it spans
 * its whole ArrayBuffer, that buffer is transferred (detached here); any other chunk is copied.
 * The buffers the stream makes itself (coalesced small writes, copies of views) are transferred
 * only once this thread has detached one anyway (see `detachedHere`).
 */
import {
  isTransportError,
  reasonFromWire,
  reasonToWire,
  TransportError,
  type TransportErrorCode,
  type WireReason,
} from './errors.js';
import { dataBytes, type Frame, grantBatch, MAX_FRAME_CHUNKS, mustSayBlocked, type Side } from './frames.js';

export interface DuplexStream extends AsyncIterable<Uint8Array> {
  /** The bus id of the other side. */
  readonly peer: string;
  /** The name the stream was opened under. */
  readonly name: string;
  /** The read side as a WHATWG stream (pull-based: nothing is taken before the consumer asks). */
  readonly readable: ReadableStream<Uint8Array>;
  /** The write side as a WHATWG stream (chunks are copied; close() ends, abort() aborts). */
  readonly writable: WritableStream<Uint8Array>;
  /**
   * Writes a chunk; resolves once it is queued within the credit (awaiting credit when the
   * window is spent); what is written in one tick goes out together in one frame (past the
   * stream's first 256 KiB, which go out as written). With
   * `transfer: true` the caller gives the chunk up: do not touch it afterwards.
   */
  write(chunk: Uint8Array, options?: { transfer?: boolean }): Promise<void>;
  /**
   * Sends what was written so far now rather than with the rest of this task's writes (say,
   * before work that holds the thread while the other side could already be answering).
   */
  flush(): void;
  /** Half-closes our write side (after pending writes); the other side's read ends. */
  end(): Promise<void>;
  /** Fails both directions on both sides; the other side sees TRANSPORT_ABORTED. */
  abort(reason?: unknown): void;
  /** Resolves when both directions finished cleanly; rejects on abort or peer loss. */
  readonly closed: Promise<void>;
  /**
   * A snapshot of the stream's byte counts (a new object on each read; bytes, not timings),
   * for monitoring, tests, and sizing writes: `stats.remoteWindow` is the most the other side
   * takes before it reads, `stats.credit` what may be written now without waiting.
   */
  readonly stats: StreamStats;
}

/** Figures a stream exposes for tests and monitoring (bytes, not timings). */
export interface StreamStats {
  /** Bytes received and not yet taken by the reader. */
  queuedBytes: number;
  /** The most bytes ever queued at once. */
  maxQueuedBytes: number;
  /** Bytes we sent (or buffered to send) that the other side has not granted back. */
  inFlightBytes: number;
  /** Bytes we may still send before waiting. */
  credit: number;
  /** Bytes written and not yet sent (the coalescing buffer). */
  bufferedBytes: number;
  /** The receive window we advertised and the other side's. */
  window: number;
  remoteWindow: number;
}

/** What a stream needs from its multiplexer (one host serves all its streams). */
export interface StreamHost {
  /** Sends a frame of `stream` to its peer. */
  send(stream: Stream, frame: Frame, transfer?: Transferable[]): void;
  /**
   * Claims a writer's buffer for transfer: false when it was claimed already (the bus posts on
   * a microtask, so a buffer written twice in one tick is not detached yet; it is copied then).
   */
  claim(buffer: ArrayBuffer): boolean;
  scheduleFlush(stream: Stream): void;
  /** Posts at once what the link under the streams gathered (see DuplexStream.flush). */
  flushLink(): void;
  finished(stream: Stream): void;
}

type ReadState = 'open' | 'ended' | 'cancelled' | 'errored';
type WriteState = 'open' | 'ending' | 'ended' | 'cancelled' | 'errored';

/** Small writes are copied into a buffer of this size and sent together. */
const COALESCE_BUFFER = 64 * 1024;
/**
 * The first coalescing buffer of a tick is this small (or as large as the last tick's bytes):
 * a request of a few pkt-lines does not allocate (and zero) 64 KiB. It grows as writes add up.
 */
const COALESCE_START = 4 * 1024;
/** Writes up to this size are coalesced. */
const COALESCE_MAX = 16 * 1024;
/**
 * Chunks sent within one tick travel together in one frame (one bus message, each buffer in the
 * transfer list) up to this many bytes, and up to MAX_FRAME_CHUNKS chunks: the per-message cost
 * is paid once per batch.
 */
const BATCH_BYTES = 256 * 1024;

/**
 * Whether a stream of this thread has detached an ArrayBuffer (transferred it). V8 compiles
 * typed-array access without a check for detached buffers until the first ArrayBuffer of the
 * thread is detached; from then on, every typed-array loop of the thread pays for that check
 * (a loop over every byte of a chunk slows down once any buffer of the thread, however small,
 * was detached). So the buffers a stream makes itself, the coalescing buffers of
 * small writes and copies of views up to {@link COALESCE_BUFFER} bytes, go by structured clone
 * (a copy of at most that much) while nothing was detached here: a reader that only writes
 * requests and answers, as a fetching client does, keeps its typed arrays fast for the pack it
 * reads. A chunk the writer gave up, and a larger copy, is transferred, and from then on the
 * stream's own buffers are transferred too: the cost is paid already.
 */
let detachedHere = false;

const RESOLVED: Promise<void> = Promise.resolve();
const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

const ownsWholeBuffer = (chunk: Uint8Array): boolean =>
  chunk.byteOffset === 0 &&
  chunk.byteLength === chunk.buffer.byteLength &&
  // instanceof first (this realm, the common case); the tag for buffers of another realm.
  (chunk.buffer instanceof ArrayBuffer || Object.prototype.toString.call(chunk.buffer) === '[object ArrayBuffer]');

export class Stream implements DuplexStream {
  readonly peer: string;
  readonly name: string;
  /** The stream id (given by the opener) and which side we are. */
  readonly id: number;
  readonly side: Side;
  readonly closed: Promise<void>;

  #host: StreamHost;
  /** The largest data payload one frame may carry (set again when an optimistic open is accepted). */
  #maxPayload: number;
  /** The listener's count of open streams this stream takes a place in (accepted streams). */
  readonly slot: { open: number } | undefined;
  #error: TransportError | undefined;
  #resolveClosed!: () => void;
  #rejectClosed!: (error: unknown) => void;
  #done = false;

  // read side
  #readState: ReadState = 'open';
  #queue: Uint8Array[] = [];
  #head = 0;
  #queued = 0;
  #maxQueued = 0;
  #ungranted = 0;
  #window: number;
  #grantAt: number;
  #writerBlocked = false;
  #waiter: { resolve: (r: IteratorResult<Uint8Array>) => void; reject: (e: unknown) => void } | undefined;
  #readInterface: 'iterator' | 'readable' | undefined;
  #readable: ReadableStream<Uint8Array> | undefined;
  #readError: TransportError | undefined;

  // write side
  #writeState: WriteState = 'open';
  #writeError: TransportError | undefined;
  #remoteWindow: number;
  #credit: number;
  #coalesceMax: number;
  /** The coalescing buffer's size: one message, never above the payload limit. */
  #coalesceSize: number;
  #buffer: Uint8Array | undefined;
  #fill = 0;
  /** The size to start the next coalescing buffer with. */
  #bufferHint = COALESCE_START;
  /** Chunks whose credit is paid, waiting to go out together in one data frame. */
  #out: Uint8Array[] = [];
  /** The buffers of `#out` that go in the frame's transfer list (see detachedHere). */
  #outTransfer: ArrayBuffer[] = [];
  #outBytes = 0;
  #batchBytes: number;
  /**
   * Bytes left of the stream's first batch: they go out as they are written, not batched, so
   * the reader starts on the first chunk, not on the first batch (see #sendData).
   */
  #ramp = BATCH_BYTES;
  #flushScheduled = false;
  #creditWaiter: { need: number; resolve: () => void; reject: (e: unknown) => void } | undefined;
  #writeTail: Promise<void> | undefined;
  #ending: Promise<void> | undefined;
  #writable: WritableStream<Uint8Array> | undefined;

  constructor(
    host: StreamHost,
    init: {
      peer: string;
      name: string;
      id: number;
      side: Side;
      window: number;
      remoteWindow: number;
      maxPayload: number;
      slot?: { open: number };
    },
  ) {
    this.#host = host;
    this.#maxPayload = init.maxPayload;
    this.slot = init.slot;
    this.peer = init.peer;
    this.name = init.name;
    this.id = init.id;
    this.side = init.side;
    this.#window = init.window;
    this.#grantAt = grantBatch(init.window);
    this.#remoteWindow = init.remoteWindow;
    this.#credit = init.remoteWindow;
    this.#coalesceMax = Math.min(COALESCE_MAX, init.remoteWindow, init.maxPayload);
    this.#coalesceSize = Math.min(COALESCE_BUFFER, init.maxPayload);
    this.#batchBytes = Math.min(BATCH_BYTES, init.maxPayload);
    this.closed = new Promise<void>((resolve, reject) => {
      this.#resolveClosed = resolve;
      this.#rejectClosed = reject;
    });
    // `closed` is informative: nobody has to await it, so its rejection is never unhandled.
    this.closed.catch(() => {});
  }

  /**
   * The other side accepted a stream we opened optimistically (writing within the credit the
   * open frame announced): its receive window replaces that credit, and what we sent before
   * counts against it. A window below the credit we announced breaks the protocol (the
   * acceptor refuses such an open): the stream fails with TRANSPORT_PROTOCOL.
   */
  accepted(remoteWindow: number, maxPayload: number): void {
    if (this.#done) return;
    if (remoteWindow < this.#remoteWindow) {
      this.#protocolError(
        `accepted with a window of ${remoteWindow} bytes, below the ${this.#remoteWindow} the open announced`,
      );
      return;
    }
    this.#maxPayload = maxPayload;
    this.#credit += remoteWindow - this.#remoteWindow;
    this.#remoteWindow = remoteWindow;
    this.#coalesceMax = Math.min(COALESCE_MAX, remoteWindow, maxPayload);
    this.#coalesceSize = Math.min(COALESCE_BUFFER, maxPayload);
    this.#batchBytes = Math.min(BATCH_BYTES, maxPayload);
    const waiter = this.#creditWaiter;
    if (waiter === undefined || this.#writeState === 'errored' || this.#writeState === 'cancelled') return;
    if (this.#credit >= waiter.need) {
      this.#creditWaiter = undefined;
      waiter.resolve();
    } else if (mustSayBlocked(waiter.need, remoteWindow)) {
      this.#sendControl({ t: 'blocked', s: this.id, i: this.side });
    }
  }

  get stats(): StreamStats {
    return {
      queuedBytes: this.#queued,
      maxQueuedBytes: this.#maxQueued,
      inFlightBytes: this.#remoteWindow - this.#credit,
      credit: this.#credit,
      bufferedBytes: this.#fill + this.#outBytes,
      window: this.#window,
      remoteWindow: this.#remoteWindow,
    };
  }

  // ---------------------------------------------------------------- read side

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    this.#lockRead('iterator');
    return {
      next: () => this.#read(),
      return: () => {
        this.#cancelRead(new TransportError('TRANSPORT_CANCELLED', 'the reader stopped iterating'));
        return Promise.resolve(DONE);
      },
    };
  }

  get readable(): ReadableStream<Uint8Array> {
    if (this.#readable) return this.#readable;
    this.#lockRead('readable');
    this.#readable = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const result = await this.#read();
          if (result.done) controller.close();
          else controller.enqueue(result.value);
        },
        cancel: (reason) => {
          this.#cancelRead(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return this.#readable;
  }

  #lockRead(kind: 'iterator' | 'readable'): void {
    if (this.#readInterface !== undefined && this.#readInterface !== kind) {
      throw new TransportError('TRANSPORT_LOCKED', `the read side is already consumed as ${this.#readInterface}`);
    }
    this.#readInterface = kind;
  }

  #read(): Promise<IteratorResult<Uint8Array>> {
    if (this.#head < this.#queue.length) return Promise.resolve({ value: this.#dequeue(), done: false });
    switch (this.#readState) {
      case 'ended':
      case 'cancelled':
        return Promise.resolve(DONE);
      case 'errored':
        return Promise.reject(this.#readError);
    }
    if (this.#waiter) {
      return Promise.reject(new TransportError('TRANSPORT_LOCKED', 'concurrent reads on one stream'));
    }
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  #dequeue(): Uint8Array {
    const chunk = this.#queue[this.#head]!;
    this.#queue[this.#head] = undefined as unknown as Uint8Array;
    this.#head++;
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#queued -= chunk.byteLength;
    this.#consumed(chunk.byteLength);
    return chunk;
  }

  #consumed(bytes: number): void {
    this.#ungranted += bytes;
    if (this.#ungranted >= this.#grantAt || this.#writerBlocked) this.#grant();
  }

  #grant(): void {
    if (this.#ungranted === 0 || this.#readState !== 'open') return;
    const n = this.#ungranted;
    this.#ungranted = 0;
    this.#writerBlocked = false;
    this.#sendControl({ t: 'credit', s: this.id, i: this.side, n });
  }

  #cancelRead(reason: unknown): void {
    if (this.#readState !== 'open') return;
    this.#readState = 'cancelled';
    this.#dropQueue();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve(DONE);
    this.#sendControl({ t: 'cancel', s: this.id, i: this.side, e: reasonToWire(reason) });
    this.#maybeFinish();
  }

  #dropQueue(): void {
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
  }

  // ---------------------------------------------------------------- incoming frames

  /** Called by the multiplexer for every frame of this stream. */
  receive(frame: Frame): void {
    switch (frame.t) {
      case 'data':
        this.#onData(frame.b);
        break;
      case 'credit':
        this.#onCredit(frame.n);
        break;
      case 'blocked':
        this.#writerBlocked = true;
        if (this.#ungranted > 0) this.#grant();
        break;
      case 'end':
        this.#onEnd();
        break;
      case 'cancel':
        this.#onCancel(frame.e);
        break;
      case 'abort':
        this.fail(
          new TransportError('TRANSPORT_ABORTED', `stream aborted by ${this.peer}: ${frame.e.message}`, {
            cause: reasonFromWire(frame.e),
          }),
          true,
        );
        break;
    }
  }

  #onData(data: Uint8Array | Uint8Array[]): void {
    if (this.#readState !== 'open') {
      if (this.#readState === 'ended') this.#protocolError('data after end');
      return; // cancelled or errored: the writer learns it from our cancel/abort
    }
    const n = dataBytes(data);
    if (this.#queued + this.#ungranted + n > this.#window) {
      this.#protocolError(`the writer overran the window of ${this.#window} bytes`);
      return;
    }
    if (n === 0) return;
    if (data instanceof Uint8Array) this.#take(data);
    else for (let k = 0; k < data.length; k++) this.#take(data[k]!);
  }

  /** One received chunk: to the waiting reader, else to the queue. */
  #take(chunk: Uint8Array): void {
    const n = chunk.byteLength;
    if (n === 0) return;
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      this.#consumed(n);
      waiter.resolve({ value: chunk, done: false });
      return;
    }
    this.#queue.push(chunk);
    this.#queued += n;
    if (this.#queued > this.#maxQueued) this.#maxQueued = this.#queued;
  }

  #onCredit(n: number): void {
    if (this.#writeState === 'errored' || this.#writeState === 'cancelled') return;
    if (this.#credit + n > this.#remoteWindow) {
      this.#protocolError('the reader granted more than it was sent');
      return;
    }
    this.#credit += n;
    const waiter = this.#creditWaiter;
    if (waiter && this.#credit >= waiter.need) {
      this.#creditWaiter = undefined;
      waiter.resolve();
    } else if (waiter && mustSayBlocked(waiter.need, this.#remoteWindow)) {
      this.#sendControl({ t: 'blocked', s: this.id, i: this.side });
    }
  }

  #onEnd(): void {
    if (this.#readState !== 'open') return;
    this.#readState = 'ended';
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve(DONE);
    this.#maybeFinish();
  }

  #onCancel(reason: WireReason): void {
    if (this.#writeState === 'ended' || this.#writeState === 'errored' || this.#writeState === 'cancelled') return;
    this.#writeState = 'cancelled';
    this.#writeError = new TransportError(
      'TRANSPORT_CANCELLED',
      `the reader on ${this.peer} cancelled: ${reason.message}`,
      {
        cause: reasonFromWire(reason),
      },
    );
    this.#dropBuffer();
    const waiter = this.#creditWaiter;
    this.#creditWaiter = undefined;
    waiter?.reject(this.#writeError);
    this.#maybeFinish();
  }

  #protocolError(message: string): void {
    const error = new TransportError('TRANSPORT_PROTOCOL', `stream ${this.name} from ${this.peer}: ${message}`);
    this.#sendControl({ t: 'abort', s: this.id, i: this.side, e: reasonToWire(error) });
    this.fail(error, true);
  }

  // ---------------------------------------------------------------- write side

  get writable(): WritableStream<Uint8Array> {
    if (this.#writable) return this.#writable;
    this.#writable = new WritableStream<Uint8Array>({
      write: (chunk) => this.write(chunk),
      close: () => this.end(),
      abort: (reason) => this.abort(reason),
    });
    return this.#writable;
  }

  write(chunk: Uint8Array, options?: { transfer?: boolean }): Promise<void> {
    if (!(chunk instanceof Uint8Array)) {
      return Promise.reject(new TransportError('TRANSPORT_INVALID_ARGUMENT', 'write() takes a Uint8Array'));
    }
    if (this.#writeState !== 'open') return Promise.reject(this.#writeClosedError());
    const transfer = options?.transfer === true;
    if (this.#writeTail !== undefined) {
      return this.#track(this.#writeTail.then(() => this.#writeNow(chunk, transfer)));
    }
    let pending: Promise<void> | undefined;
    try {
      pending = this.#writeNow(chunk, transfer);
    } catch (error) {
      return Promise.reject(error);
    }
    return pending === undefined ? RESOLVED : this.#track(pending);
  }

  #track(pending: Promise<void>): Promise<void> {
    this.#writeTail = pending;
    const clear = () => {
      if (this.#writeTail === pending) this.#writeTail = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  #writeClosedError(): TransportError {
    if (this.#writeError) return this.#writeError;
    return new TransportError('TRANSPORT_CLOSED', `stream ${this.name}: write after end()`);
  }

  #checkWritable(): void {
    if (this.#writeError) throw this.#writeError;
  }

  /** Sends (or buffers) one chunk; undefined when done synchronously, else a promise. */
  #writeNow(chunk: Uint8Array, transfer: boolean): Promise<void> | undefined {
    this.#checkWritable();
    const len = chunk.byteLength;
    if (len === 0) return undefined;
    if (len <= this.#coalesceMax) {
      if (this.#credit >= len) {
        this.#append(chunk);
        return undefined;
      }
      return this.#waitCredit(len).then(() => {
        this.#checkWritable();
        this.#append(chunk);
      });
    }
    this.#stage();
    const whole = Math.min(this.#maxPayload, this.#remoteWindow);
    if (transfer && len <= whole && ownsWholeBuffer(chunk) && this.#host.claim(chunk.buffer as ArrayBuffer)) {
      if (this.#credit >= len) {
        this.#sendData(chunk, false, true);
        return undefined;
      }
      return this.#waitCredit(len).then(() => {
        this.#checkWritable();
        this.#sendData(chunk, false, true);
      });
    }
    if (len <= whole && this.#credit >= len) {
      this.#sendData(chunk.slice(), false, false);
      return undefined;
    }
    return this.#writeCopies(chunk);
  }

  /** A chunk that is copied anyway goes out in pieces as credit comes, so transfers overlap. */
  async #writeCopies(chunk: Uint8Array): Promise<void> {
    // Wait for at most half a window: the reader grants back that much without being asked.
    const minPiece = Math.min(grantBatch(this.#remoteWindow), this.#maxPayload);
    let offset = 0;
    while (offset < chunk.byteLength) {
      const left = chunk.byteLength - offset;
      const want = Math.min(left, minPiece);
      if (this.#credit < want) await this.#waitCredit(want);
      this.#checkWritable();
      const n = Math.min(left, this.#credit, this.#maxPayload);
      this.#sendData(chunk.slice(offset, offset + n), false, false);
      offset += n;
    }
  }

  #waitCredit(need: number): Promise<void> {
    // What is queued goes out first: the reader can only grant back what it receives.
    this.#flush();
    return new Promise<void>((resolve, reject) => {
      this.#creditWaiter = { need, resolve, reject };
      if (mustSayBlocked(need, this.#remoteWindow)) this.#sendControl({ t: 'blocked', s: this.id, i: this.side });
    });
  }

  #append(chunk: Uint8Array): void {
    const len = chunk.byteLength;
    const size = this.#coalesceSize;
    let buffer = this.#buffer;
    const need = this.#fill + len;
    if (buffer !== undefined && need > buffer.byteLength) {
      if (need <= size) {
        // Still below a full buffer: grow this one.
        const grown = new Uint8Array(Math.min(size, Math.max(need, buffer.byteLength * 4)));
        grown.set(buffer.subarray(0, this.#fill));
        buffer = grown;
        this.#buffer = grown;
      } else {
        this.#stage();
        buffer = undefined;
      }
    }
    if (buffer === undefined) {
      buffer = new Uint8Array(Math.min(size, Math.max(len, this.#bufferHint)));
      this.#buffer = buffer;
    }
    buffer.set(chunk, this.#fill);
    this.#fill += len;
    this.#credit -= len;
    if (this.#fill === size) this.#stage();
    else this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    this.#host.scheduleFlush(this);
  }

  flush(): void {
    this.sendQueued();
    this.#host.flushLink();
  }

  /** Sends what is buffered and queued (the multiplexer calls it on its flush tick). */
  sendQueued(): void {
    this.#flushScheduled = false;
    if (this.#writeError) return;
    try {
      this.#flush();
    } catch (error) {
      // #sendData already failed the stream; the next write reports it.
      if (!isTransportError(error)) throw error;
    }
  }

  /** Sends everything written so far. */
  #flush(): void {
    this.#stage();
    this.#sendOut();
  }

  /** Moves the coalescing buffer's bytes to the send queue (behind what is queued already). */
  #stage(): void {
    const buffer = this.#buffer;
    if (buffer === undefined || this.#fill === 0) return;
    const fill = this.#fill;
    this.#fill = 0;
    this.#bufferHint = Math.max(COALESCE_START, fill);
    if (fill * 2 >= buffer.byteLength) {
      // Mostly full: give the whole buffer away (transferred, or cloned once: see detachedHere)
      // and start a new one later.
      this.#buffer = undefined;
      this.#sendData(fill === buffer.byteLength ? buffer : new Uint8Array(buffer.buffer, 0, fill), true, false);
    } else {
      // Mostly empty: copy out the bytes so no big buffer travels (and stays queued) for a few.
      this.#sendData(buffer.slice(0, fill), true, false);
    }
  }

  #dropBuffer(): void {
    this.#buffer = undefined;
    this.#fill = 0;
    this.#out = [];
    this.#outTransfer = [];
    this.#outBytes = 0;
  }

  /**
   * Queues a chunk we own (the writer gave it up, `given`, or we made it) to go out with the
   * others of this tick; a full batch goes at once. Its buffer goes in the transfer list if the
   * writer gave it up, if it is larger than a coalescing buffer, or if this thread has
   * detached a buffer before; else it is cloned (see detachedHere). The caller checked the
   * credit; coalesced bytes (`paid`) paid theirs when they were buffered.
   */
  #sendData(chunk: Uint8Array, paid: boolean, given: boolean): void {
    const len = chunk.byteLength;
    if (!paid) this.#credit -= len;
    const ramp = this.#ramp > 0;
    if (ramp) this.#ramp -= len;
    if (this.#outBytes + len > this.#batchBytes) this.#sendOut();
    this.#out.push(chunk);
    if (given || detachedHere || len > COALESCE_BUFFER) {
      detachedHere = true;
      this.#outTransfer.push(chunk.buffer as ArrayBuffer);
    }
    this.#outBytes += len;
    if (
      this.#outBytes >= this.#batchBytes ||
      this.#out.length >= MAX_FRAME_CHUNKS ||
      // The first batch's worth of a stream goes out as it is written: the reader starts at once.
      ramp
    ) {
      this.#sendOut();
    } else this.#scheduleFlush();
  }

  /** Sends the queued chunks as one data frame. */
  #sendOut(): void {
    const out = this.#out;
    if (out.length === 0) return;
    const transfer = this.#outTransfer;
    this.#out = [];
    this.#outTransfer = [];
    this.#outBytes = 0;
    this.#send({ t: 'data', s: this.id, i: this.side, b: out.length === 1 ? out[0]! : out }, transfer);
  }

  end(): Promise<void> {
    if (this.#ending) return this.#ending;
    if (this.#writeState !== 'open') {
      return this.#writeState === 'ended' ? RESOLVED : Promise.reject(this.#writeClosedError());
    }
    this.#writeState = 'ending';
    const tail = this.#writeTail;
    if (tail === undefined) {
      try {
        this.#finishEnd();
        this.#ending = RESOLVED;
      } catch (error) {
        this.#ending = Promise.reject(error);
      }
    } else {
      this.#ending = tail.then(() => this.#finishEnd());
    }
    return this.#ending;
  }

  /** Sends what is left, then the end frame. */
  #finishEnd(): void {
    this.#checkWritable();
    this.#flush();
    this.#sendControl({ t: 'end', s: this.id, i: this.side });
    if (this.#writeState === 'ending') this.#writeState = 'ended';
    this.#maybeFinish();
  }

  abort(reason?: unknown): void {
    if (this.#done) return;
    // What was written before goes out ahead of the abort, as if each write had been sent at once.
    if (this.#writeError === undefined) this.sendQueued();
    this.#sendControl({ t: 'abort', s: this.id, i: this.side, e: reasonToWire(reason) });
    const message = typeof reason === 'object' && reason !== null && 'message' in reason ? reason.message : reason;
    this.fail(
      new TransportError('TRANSPORT_ABORTED', `stream ${this.name} aborted: ${String(message ?? 'aborted')}`, {
        cause: reason,
      }),
      true,
    );
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Fails the directions that are not finished (all of them with `discard`, which also drops
   * data already received): pending and later reads and writes reject with `error`.
   */
  fail(error: TransportError, discard: boolean): void {
    if (this.#done) return;
    this.#error = error;
    if (this.#readState === 'open' || (discard && this.#readState !== 'errored')) {
      this.#readState = 'errored';
      this.#readError = error;
      this.#dropQueue();
      const waiter = this.#waiter;
      this.#waiter = undefined;
      waiter?.reject(error);
    }
    if (this.#writeState !== 'errored' && (discard || this.#writeState !== 'ended')) {
      this.#writeState = 'errored';
      this.#writeError = error;
      this.#dropBuffer();
      const waiter = this.#creditWaiter;
      this.#creditWaiter = undefined;
      waiter?.reject(error);
    }
    this.#done = true;
    this.#rejectClosed(error);
    this.#host.finished(this);
  }

  #maybeFinish(): void {
    if (this.#done) return;
    const readDone = this.#readState === 'ended' || this.#readState === 'cancelled';
    const writeDone = this.#writeState === 'ended' || this.#writeState === 'cancelled';
    if (!readDone || !writeDone) return;
    this.#done = true;
    this.#resolveClosed();
    this.#host.finished(this);
  }

  #sendControl(frame: Frame): void {
    try {
      this.#host.send(this, frame);
    } catch (error) {
      if (frame.t !== 'abort') this.#sendFailed(error);
    }
  }

  #send(frame: Frame, transfer: Transferable[]): void {
    try {
      this.#host.send(this, frame, transfer);
    } catch (error) {
      throw this.#sendFailed(error);
    }
  }

  #sendFailed(error: unknown): TransportError {
    const code: TransportErrorCode =
      typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'BUS_UNKNOWN_PEER'
        ? 'TRANSPORT_PEER_LOST'
        : 'TRANSPORT_SEND_FAILED';
    const failure = new TransportError(code, `stream ${this.name} to ${this.peer}: the bus refused a frame`, {
      cause: error,
    });
    this.fail(failure, false);
    return this.#error ?? failure;
  }

  /** Whether the stream is finished (closed resolved or rejected). */
  get done(): boolean {
    return this.#done;
  }

  /** The error that failed the stream, if any. */
  get error(): TransportError | undefined {
    return this.#error;
  }
}
