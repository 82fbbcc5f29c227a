/**
 * Side-band multiplexing (gitprotocol-pack.adoc, "Packfile Data"; git's sideband.c):
 *
 *   frame = pkt-len band data        band: 1 pack data, 2 progress, 3 fatal error
 *
 * "side-band-64k" frames carry up to 65520 bytes in total; git's send_sideband() puts at most
 * LARGE_PACKET_MAX - 5 = 65515 data bytes after the band byte (the documentation's "65519"
 * would make a frame longer than git reads). Plain "side-band" frames carry at most 995 data
 * bytes (1000 in total). The pack is one byte stream cut at arbitrary points, so any payload
 * size is split here, never rejected. The side-banded stream ends with a flush packet.
 */
import { PktLineError, PktLineRemoteError } from './errors.js';
import { type Packet, writeLength } from './packet.js';
import type { PacketReader } from './reader.js';

/** Most data bytes per frame for side-band-64k, and for plain side-band. */
export const SIDEBAND_64K_MAX_DATA = 65515;
export const SIDEBAND_MAX_DATA = 995;

export type Band = 1 | 2 | 3;

function checkMaxData(maxData: number): number {
  if (!Number.isInteger(maxData) || maxData < 1 || maxData > SIDEBAND_64K_MAX_DATA) {
    throw new PktLineError(
      'PKTLINE_TOO_LONG',
      `side-band frame data size ${maxData} is not in 1..${SIDEBAND_64K_MAX_DATA}`,
    );
  }
  return maxData;
}

/**
 * Frames for `data` on `band`: each a new array `pkt-len band data[i..i+maxData)`. Empty data
 * gives no frame (a keepalive `0005\x01` is written by whoever wants one).
 */
export function muxSideband(band: Band, data: Uint8Array, options: { maxData?: number } = {}): Uint8Array[] {
  const maxData = checkMaxData(options.maxData ?? SIDEBAND_64K_MAX_DATA);
  if (band !== 1 && band !== 2 && band !== 3) {
    throw new PktLineError('PKTLINE_SIDEBAND_BAD_BAND', `side-band band must be 1, 2 or 3, not ${String(band)}`);
  }
  const frames: Uint8Array[] = [];
  for (let at = 0; at < data.byteLength; at += maxData) {
    const n = Math.min(maxData, data.byteLength - at);
    const frame = new Uint8Array(n + 5);
    writeLength(frame, 0, n + 5);
    frame[4] = band;
    frame.set(data.subarray(at, at + n), 5);
    frames.push(frame);
  }
  return frames;
}

const encoder = new TextEncoder();
const FLUSH_BYTES = Uint8Array.of(0x30, 0x30, 0x30, 0x30);

/** Where a muxer's buffers go: each one is handed over (`transfer`), never touched again. */
export type SidebandWrite = (bytes: Uint8Array, options: { transfer: true }) => void | Promise<void>;

export interface SidebandMuxerOptions {
  /** Most data bytes per frame (default side-band-64k's 65515; plain side-band: 995). */
  maxData?: number;
  /**
   * Writes of about this many bytes travel best (a transport's flow-control batch): frames are
   * gathered into buffers of as many whole frames as fit (at least one).
   */
  writeSize?: number;
}

/**
 * Writes a side-banded stream through `write`, awaiting it for each buffer (backpressure).
 *
 * Data (band 1) fills frames across calls: a frame is closed once it holds `maxData` bytes or
 * something else comes (progress, an error, `send`). Frames are written several to a buffer, a
 * buffer going out once it is full or on `send`/`error`/`flush`, so a transport moves one buffer
 * per batch instead of copying each frame on its own. Progress (band 2) and errors (band 3) take
 * their place among the data frames, in order.
 */
export class SidebandMuxer {
  readonly #write: SidebandWrite;
  readonly #maxData: number;
  readonly #size: number;
  #buffer: Uint8Array | undefined;
  #at = 0;
  /** Where the open data frame's header is (-1: none open). */
  #frame = -1;

  constructor(write: SidebandWrite, options: SidebandMuxerOptions = {}) {
    this.#write = write;
    const maxData = checkMaxData(options.maxData ?? SIDEBAND_64K_MAX_DATA);
    this.#maxData = maxData;
    const frames = Math.max(1, Math.floor((options.writeSize ?? 0) / (maxData + 5)));
    this.#size = frames * (maxData + 5);
  }

  /** Band 1: pack (or report) bytes. */
  async data(bytes: Uint8Array): Promise<void> {
    let from = 0;
    while (from < bytes.length) {
      if (this.#frame < 0) {
        if (this.#size - this.#at < 6) await this.send();
        this.#buffer ??= new Uint8Array(this.#size);
        this.#frame = this.#at;
        this.#at += 5;
      }
      const room = Math.min(this.#maxData - (this.#at - this.#frame - 5), this.#size - this.#at);
      const n = Math.min(room, bytes.length - from);
      this.#buffer!.set(bytes.subarray(from, from + n), this.#at);
      this.#at += n;
      from += n;
      if (n === room) this.#close();
    }
    if (this.#at === this.#size) await this.send();
  }

  /** Band 2: progress text (shown by git as `remote: ...`). */
  progress(text: string): Promise<void> {
    return this.#message(2, text);
  }

  /** Band 3: a fatal error, written out at once; the stream should end after it. */
  async error(text: string): Promise<void> {
    await this.#message(3, text);
    await this.send();
  }

  /** Writes out the frames gathered so far. */
  async send(): Promise<void> {
    this.#close();
    const buffer = this.#buffer;
    if (!buffer || this.#at === 0) return;
    const out = this.#at === buffer.length ? buffer : buffer.slice(0, this.#at);
    this.#buffer = undefined;
    this.#at = 0;
    await this.#write(out, { transfer: true });
  }

  /** Writes out what is gathered, then the flush packet that ends a side-banded stream. */
  async flush(): Promise<void> {
    await this.send();
    await this.#write(FLUSH_BYTES.slice(), { transfer: true });
  }

  async #message(band: 2 | 3, text: string): Promise<void> {
    this.#close();
    // a frame is at most maxData + 5 bytes, and the buffer holds at least one such frame
    for (const frame of muxSideband(band, encoder.encode(text), { maxData: this.#maxData })) {
      if (this.#size - this.#at < frame.length) await this.send();
      this.#buffer ??= new Uint8Array(this.#size);
      this.#buffer.set(frame, this.#at);
      this.#at += frame.length;
    }
  }

  /** Ends the open data frame (its length is now known). */
  #close(): void {
    if (this.#frame < 0) return;
    const buffer = this.#buffer!;
    writeLength(buffer, this.#frame, this.#at - this.#frame);
    buffer[this.#frame + 4] = 1;
    this.#frame = -1;
  }
}

export interface DemuxOptions {
  /** Band-2 text, one call per frame, as sent (git's `remote: ` lines may span frames). */
  onProgress?: (text: string) => void;
  signal?: AbortSignal;
}

const decoder = new TextDecoder();

function isReader(value: unknown): value is PacketReader {
  return typeof (value as PacketReader).read === 'function' && typeof (value as PacketReader).rest === 'function';
}

/**
 * Band-1 bytes until the flush packet that ends the side-banded stream (views into the packets'
 * payloads, no copy). Band 2 goes to `onProgress`, band 3 throws `PktLineRemoteError`. The flush
 * is consumed; the packet source is left open after it, so its caller can go on reading.
 * A source that ends before the flush is `PKTLINE_TRUNCATED`.
 */
export async function* demuxSideband(
  packets: AsyncIterable<Packet> | PacketReader,
  options: DemuxOptions = {},
): AsyncGenerator<Uint8Array, void, undefined> {
  const { onProgress, signal } = options;
  let next: () => Promise<Packet | undefined>;
  if (isReader(packets)) {
    next = () => packets.read();
  } else {
    const iterator = packets[Symbol.asyncIterator]();
    next = async () => {
      const r = await iterator.next();
      return r.done ? undefined : r.value;
    };
  }
  let index = 0;
  for (; ; index++) {
    if (signal?.aborted) {
      throw new PktLineError('PKTLINE_ABORTED', 'side-band demultiplexing was aborted', { cause: signal.reason });
    }
    const packet = await next();
    if (packet === undefined) {
      throw new PktLineError(
        'PKTLINE_TRUNCATED',
        `side-band stream ended without its flush packet (after ${index} frames)`,
      );
    }
    if (packet.kind === 'flush') return;
    if (packet.kind !== 'data') {
      throw new PktLineError(
        'PKTLINE_SIDEBAND_UNEXPECTED',
        `unexpected ${packet.kind} packet in side-band data (frame ${index})`,
      );
    }
    const payload = packet.payload;
    if (payload.byteLength === 0) {
      throw new PktLineError('PKTLINE_SIDEBAND_BAD_BAND', `side-band frame ${index} has no band designator`);
    }
    const band = payload[0];
    if (band === 1) {
      if (payload.byteLength > 1) yield payload.subarray(1);
    } else if (band === 2) {
      if (payload.byteLength > 1) onProgress?.(decoder.decode(payload.subarray(1)));
    } else if (band === 3) {
      const end = payload[payload.byteLength - 1] === 0x0a ? payload.byteLength - 1 : payload.byteLength;
      throw new PktLineRemoteError(decoder.decode(payload.subarray(1, end)), 'sideband');
    } else {
      throw new PktLineError(
        'PKTLINE_SIDEBAND_BAD_BAND',
        `protocol error: bad band #${band} in side-band frame ${index}`,
      );
    }
  }
}
