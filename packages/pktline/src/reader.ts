/**
 * Streaming pkt-line decoder over any chunking of the input.
 *
 *   pkt-line  =  pkt-len pkt-payload      pkt-len = 4*(HEXDIG), the total length
 *   "0000" flush, "0001" delim, "0002" response-end; "0003" is an error
 *
 * Leniency follows git's reader (pkt-line.c, packet_read_with_status): the length's hex digits
 * may be upper or lower case, and a data packet may carry up to LARGE_PACKET_MAX - 1 = 65519
 * payload bytes (total length 65523: git reads into a 65520-byte buffer that also holds a
 * terminating NUL). Anything longer is `PKTLINE_BAD_LENGTH`, as it is for git ("protocol
 * error: bad line length"). Writers (packet.ts) stay strict: at most 65516.
 *
 * A data payload starting with `ERR ` is the remote's fatal error (gitprotocol-pack.adoc:
 * "An error packet is a special pkt-line that contains an error string"): read() throws a
 * `PktLineRemoteError`.
 *
 * Ownership: a data payload that lies inside one input chunk is returned as a view into that
 * chunk (no copy); one that crosses chunk boundaries is copied into a new array. Producers that
 * reuse their buffers must not do so before the consumer is done with the packet (or the
 * consumer copies with `slice()`).
 */
import { PktLineError, PktLineRemoteError } from './errors.js';
import type { Packet } from './packet.js';
import { PacketTracer } from './trace.js';

/** Largest data payload git's reader accepts (65520 - 1), and the matching total length. */
export const MAX_READ_PACKET_DATA = 65519;
const MAX_READ_LENGTH = MAX_READ_PACKET_DATA + 4;

export interface PacketReaderOptions {
  /** Receives one GIT_TRACE_PACKET-style line per packet read. */
  trace?: (line: string) => void;
  /** Name in trace lines (git uses its program name); default 'gitport'. */
  traceIdentity?: string;
  signal?: AbortSignal;
}

const HEX_VALUE = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let i = 0; i < 10; i++) t[0x30 + i] = i;
  for (let i = 0; i < 6; i++) {
    t[0x61 + i] = 10 + i;
    t[0x41 + i] = 10 + i;
  }
  return t;
})();

const EMPTY = new Uint8Array(0);
const FLUSH_PACKET: Packet = Object.freeze({ kind: 'flush' });
const DELIM_PACKET: Packet = Object.freeze({ kind: 'delim' });
const RESPONSE_END_PACKET: Packet = Object.freeze({ kind: 'response-end' });
const textDecoder = new TextDecoder();

/** The packet length at `bytes[at..at+4)`, or -1 when a digit is not hex. */
export function parseLength(bytes: Uint8Array, at: number): number {
  const a = HEX_VALUE[bytes[at]!]!;
  const b = HEX_VALUE[bytes[at + 1]!]!;
  const c = HEX_VALUE[bytes[at + 2]!]!;
  const d = HEX_VALUE[bytes[at + 3]!]!;
  return (a | b | c | d) < 0 ? -1 : (a << 12) | (b << 8) | (c << 4) | d;
}

function printable(bytes: Uint8Array): string {
  return Array.from(bytes, (b) =>
    b >= 0x20 && b <= 0x7e ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`,
  ).join('');
}

function asPlainView(chunk: Uint8Array): Uint8Array {
  // Buffers (and other subclasses) become plain Uint8Array views of the same memory.
  return chunk.constructor === Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

function isErrPayload(p: Uint8Array): boolean {
  return p.byteLength >= 4 && p[0] === 0x45 && p[1] === 0x52 && p[2] === 0x52 && p[3] === 0x20;
}

function remoteMessage(payload: Uint8Array): string {
  const end = payload[payload.byteLength - 1] === 0x0a ? payload.byteLength - 1 : payload.byteLength;
  return textDecoder.decode(payload.subarray(4, end));
}

type State = 'reading' | 'handed-off';

/** Bytes in: any async iterable, or a WHATWG ReadableStream (iterated through its reader). */
export type ByteSource = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

function iterate(source: ByteSource): AsyncIterator<Uint8Array> {
  if (Symbol.asyncIterator in source) return (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const reader = (source as ReadableStream<Uint8Array>).getReader();
  return {
    next: () => reader.read() as Promise<IteratorResult<Uint8Array>>,
    async return() {
      await reader.cancel();
      reader.releaseLock();
      return { done: true, value: undefined };
    },
  };
}

/**
 * Pulls packets one at a time from a byte source. `read()` resolves `undefined` at a clean end
 * of input (between packets); `rest()` hands the remaining raw bytes (buffered ones first) to
 * a consumer, e.g. the pack that follows receive-pack's commands.
 */
export class PacketReader implements AsyncIterable<Packet> {
  readonly #source: ByteSource;
  #iterator: AsyncIterator<Uint8Array> | undefined;
  #chunk: Uint8Array = EMPTY;
  #pos = 0;
  /** Stream offset of #chunk[0]. */
  #base = 0;
  #ended = false;
  #state: State = 'reading';
  #failure: PktLineError | undefined;
  /** A slow read is waiting for input: reads are one at a time. */
  #busy = false;
  readonly #tracer: PacketTracer | undefined;
  readonly #signal: AbortSignal | undefined;

  constructor(source: ByteSource, options: PacketReaderOptions = {}) {
    this.#source = source;
    this.#signal = options.signal;
    this.#tracer = options.trace ? new PacketTracer(options.trace, '<', options.traceIdentity) : undefined;
  }

  /** Bytes of the stream consumed so far (the offset of the next packet). */
  get position(): number {
    return this.#base + this.#pos;
  }

  /** The next packet, or `undefined` at a clean end of input. */
  read(): Promise<Packet | undefined> {
    // Fast path: a whole packet inside the current chunk, no await needed for the bytes.
    const chunk = this.#chunk;
    const pos = this.#pos;
    if (this.#state === 'reading' && !this.#busy && this.#failure === undefined && chunk.byteLength - pos >= 4) {
      const length = parseLength(chunk, pos);
      if (length >= 4 && length <= MAX_READ_LENGTH && chunk.byteLength - pos >= length) {
        if (this.#signal?.aborted) return Promise.reject(this.#abortError());
        this.#pos = pos + length;
        return this.#deliver({ kind: 'data', payload: chunk.subarray(pos + 4, pos + length) }, this.#base + pos);
      }
      if (length >= 0 && length <= 2) {
        if (this.#signal?.aborted) return Promise.reject(this.#abortError());
        this.#pos = pos + 4;
        return Promise.resolve(
          this.#deliverSpecial(length === 0 ? FLUSH_PACKET : length === 1 ? DELIM_PACKET : RESPONSE_END_PACKET),
        );
      }
    }
    return this.#readSlow();
  }

  /** Like read(), with data packets as text (one trailing LF removed). */
  async readText(): Promise<string | undefined | Packet> {
    const packet = await this.read();
    if (packet === undefined || packet.kind !== 'data') return packet;
    const { payload } = packet;
    const end = payload[payload.byteLength - 1] === 0x0a ? payload.byteLength - 1 : payload.byteLength;
    return textDecoder.decode(payload.subarray(0, end));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Packet> {
    for (;;) {
      const packet = await this.read();
      if (packet === undefined) return;
      yield packet;
    }
  }

  /**
   * The remaining raw bytes: what is buffered first, then the rest of the source. After this,
   * read() throws `PKTLINE_HANDED_OFF`. Iterate it once.
   */
  rest(): AsyncIterable<Uint8Array> {
    if (this.#failure) throw this.#failure;
    if (this.#state === 'handed-off') {
      throw new PktLineError('PKTLINE_HANDED_OFF', 'rest() was already called on this reader');
    }
    this.#state = 'handed-off';
    const buffered = this.#chunk.subarray(this.#pos);
    this.#base += this.#pos;
    this.#chunk = EMPTY;
    this.#pos = 0;
    return this.#restIterable(buffered);
  }

  async *#restIterable(buffered: Uint8Array): AsyncGenerator<Uint8Array> {
    if (buffered.byteLength > 0) yield buffered;
    if (this.#ended) return;
    const iterator = this.#iterator ?? iterate(this.#source);
    this.#iterator = iterator;
    try {
      for (;;) {
        const next = await this.#next(iterator);
        if (next.done) {
          this.#ended = true;
          return;
        }
        if (next.value.byteLength > 0) yield asPlainView(next.value);
      }
    } finally {
      if (!this.#ended) {
        this.#ended = true;
        await iterator.return?.();
      }
    }
  }

  /** Stops reading and releases the source. */
  async cancel(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#chunk = EMPTY;
    this.#pos = 0;
    await this.#iterator?.return?.();
  }

  #deliver(packet: Packet, offset: number): Promise<Packet> {
    this.#tracer?.trace(packet);
    if (packet.kind === 'data' && isErrPayload(packet.payload)) {
      return Promise.reject(new PktLineRemoteError(remoteMessage(packet.payload), 'err-packet', offset));
    }
    return Promise.resolve(packet);
  }

  async #readSlow(): Promise<Packet | undefined> {
    if (this.#busy) {
      throw new PktLineError('PKTLINE_CONCURRENT_READ', 'read() called while another read() is pending');
    }
    this.#busy = true;
    try {
      return await this.#readSlowUnguarded();
    } finally {
      this.#busy = false;
    }
  }

  async #readSlowUnguarded(): Promise<Packet | undefined> {
    if (this.#failure) throw this.#failure;
    if (this.#state === 'handed-off') {
      throw new PktLineError('PKTLINE_HANDED_OFF', 'read() after rest() handed the raw bytes over');
    }
    if (this.#signal?.aborted) throw this.#abortError();
    try {
      const start = this.position;
      const header = await this.#take(4, true);
      if (header === undefined) return undefined;
      const length = parseLength(header, 0);
      if (length < 0) {
        throw new PktLineError(
          'PKTLINE_BAD_HEX',
          `protocol error: bad line length character "${printable(header)}" at offset ${start}`,
          { offset: start },
        );
      }
      if (length < 4) {
        if (length === 0) return this.#deliverSpecial(FLUSH_PACKET);
        if (length === 1) return this.#deliverSpecial(DELIM_PACKET);
        if (length === 2) return this.#deliverSpecial(RESPONSE_END_PACKET);
        throw new PktLineError('PKTLINE_BAD_LENGTH', `protocol error: bad line length ${length} at offset ${start}`, {
          offset: start,
        });
      }
      if (length > MAX_READ_LENGTH) {
        throw new PktLineError(
          'PKTLINE_BAD_LENGTH',
          `protocol error: bad line length ${length} at offset ${start} (at most ${MAX_READ_LENGTH})`,
          { offset: start },
        );
      }
      if (length === 4) return this.#deliver({ kind: 'data', payload: EMPTY }, start);
      const payload = await this.#take(length - 4, false, start);
      return await this.#deliver({ kind: 'data', payload: payload! }, start);
    } catch (error) {
      if (error instanceof PktLineError && error.code !== 'PKTLINE_REMOTE_ERROR') this.#fail(error);
      throw error;
    }
  }

  #deliverSpecial(packet: Packet): Packet {
    this.#tracer?.trace(packet);
    return packet;
  }

  #fail(error: PktLineError): void {
    this.#failure = error;
    if (!this.#ended) {
      this.#ended = true;
      void Promise.resolve(this.#iterator?.return?.()).catch(() => {});
    }
  }

  /**
   * `n` bytes from the stream: a view when they lie in the current chunk, a copy otherwise.
   * `undefined` only when `eofOk` and the input ended before the first byte.
   */
  async #take(n: number, eofOk: boolean, packetStart = this.position): Promise<Uint8Array | undefined> {
    if (this.#chunk.byteLength - this.#pos >= n) {
      const view = this.#chunk.subarray(this.#pos, this.#pos + n);
      this.#pos += n;
      return view;
    }
    if (this.#chunk.byteLength === this.#pos) {
      if (!(await this.#fill())) {
        if (eofOk) return undefined;
        throw this.#truncated(packetStart, 0, n);
      }
      if (this.#chunk.byteLength >= n) {
        const view = this.#chunk.subarray(0, n);
        this.#pos = n;
        return view;
      }
    }
    const out = new Uint8Array(n);
    let have = 0;
    for (;;) {
      const available = this.#chunk.byteLength - this.#pos;
      const k = Math.min(available, n - have);
      out.set(this.#chunk.subarray(this.#pos, this.#pos + k), have);
      this.#pos += k;
      have += k;
      if (have === n) return out;
      if (!(await this.#fill())) throw this.#truncated(packetStart, have, n);
    }
  }

  #truncated(start: number, have: number, want: number): PktLineError {
    return new PktLineError(
      'PKTLINE_TRUNCATED',
      `the input ended inside the packet at offset ${start} (${have} of ${want} bytes of its ${want === 4 ? 'length' : 'payload'})`,
      { offset: start },
    );
  }

  /** Replaces the (exhausted) current chunk with the next non-empty one; false at the end. */
  async #fill(): Promise<boolean> {
    if (this.#ended) return false;
    const iterator = this.#iterator ?? iterate(this.#source);
    this.#iterator = iterator;
    for (;;) {
      const next = await this.#next(iterator);
      if (next.done) {
        this.#ended = true;
        this.#base += this.#chunk.byteLength;
        this.#chunk = EMPTY;
        this.#pos = 0;
        return false;
      }
      if (next.value.byteLength === 0) continue;
      this.#base += this.#chunk.byteLength;
      this.#chunk = asPlainView(next.value);
      this.#pos = 0;
      return true;
    }
  }

  #next(iterator: AsyncIterator<Uint8Array>): Promise<IteratorResult<Uint8Array>> {
    const signal = this.#signal;
    if (!signal) return iterator.next();
    if (signal.aborted) return Promise.reject(this.#abortError());
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        reject(this.#abortError());
        void Promise.resolve(iterator.return?.()).catch(() => {});
      };
      signal.addEventListener('abort', onAbort, { once: true });
      iterator.next().then(
        (r) => {
          signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  #abortError(): PktLineError {
    return new PktLineError('PKTLINE_ABORTED', 'reading pkt-lines was aborted', { cause: this.#signal?.reason });
  }
}

/** Every packet of `source` (an `ERR` packet throws `PktLineRemoteError`). */
export async function* decodePackets(
  source: ByteSource,
  options?: PacketReaderOptions,
): AsyncGenerator<Packet, void, undefined> {
  const reader = new PacketReader(source, options);
  try {
    for (;;) {
      const packet = await reader.read();
      if (packet === undefined) return;
      yield packet;
    }
  } finally {
    await reader.cancel();
  }
}
