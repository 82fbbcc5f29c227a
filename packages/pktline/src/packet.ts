/**
 * pkt-line framing (git Documentation/gitprotocol-common.adoc, "pkt-line Format"):
 *
 *   pkt-line     =  data-pkt / flush-pkt
 *   data-pkt     =  pkt-len pkt-payload
 *   pkt-len      =  4*(HEXDIG)
 *   pkt-payload  =  (pkt-len - 4)*(OCTET)
 *   flush-pkt    = "0000"
 *
 * plus, from gitprotocol-v2.adoc, `0001` (delim-pkt) and `0002` (response-end-pkt).
 * "The maximum length of a pkt-line's data component is 65516 bytes." An empty data packet
 * (`0004`) "SHOULD NOT" be sent and never is. Text lines end in LF; readers must not require
 * it. Writing is strict (lowercase hex, 4..65520); reading is as lenient as git (see reader.ts).
 */
import { PktLineError } from './errors.js';

export type Packet =
  | { kind: 'data'; payload: Uint8Array }
  | { kind: 'flush' }
  | { kind: 'delim' }
  | { kind: 'response-end' };

/** Largest payload of a data packet we write (total length 65520, git's LARGE_PACKET_MAX). */
export const MAX_PACKET_DATA = 65516;
/** Largest total packet length we write. */
export const MAX_PACKET_LENGTH = MAX_PACKET_DATA + 4;

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));

export const FLUSH: Uint8Array = ascii('0000');
export const DELIM: Uint8Array = ascii('0001');
export const RESPONSE_END: Uint8Array = ascii('0002');

const HEX = ascii('0123456789abcdef');
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Writes a pkt-line length prefix: `length` (the whole packet, prefix included; or 0, 1, 2 for
 * the special packets) as 4 lowercase hex digits at `out[at..at+4)`. For framing packets in place
 * in a buffer of one's own; throws `PKTLINE_TOO_LONG` past MAX_PACKET_LENGTH.
 */
export function writeLength(out: Uint8Array, at: number, length: number): void {
  if (length > MAX_PACKET_LENGTH || length < 0) throw tooLongError(length - 4);
  out[at] = HEX[(length >>> 12) & 15]!;
  out[at + 1] = HEX[(length >>> 8) & 15]!;
  out[at + 2] = HEX[(length >>> 4) & 15]!;
  out[at + 3] = HEX[length & 15]!;
}

function emptyError(): PktLineError {
  return new PktLineError('PKTLINE_EMPTY', 'an empty data packet (0004) is never written; use a flush packet');
}

function tooLongError(size: number): PktLineError {
  return new PktLineError(
    'PKTLINE_TOO_LONG',
    `pkt-line payload of ${size} bytes exceeds ${MAX_PACKET_DATA}; split it (side-band) first`,
  );
}

/** Longest string the ASCII fast path tries (short lines are the common case). */
const ASCII_FAST_PATH = 4096;

/**
 * `text` (plus LF when `lf`) as a data packet. Short ASCII text is written straight into the
 * packet (no TextEncoder call, one allocation); anything else goes through UTF-8 encoding.
 */
function encodeString(text: string, lf: boolean): Uint8Array {
  const n = text.length;
  if (n <= ASCII_FAST_PATH) {
    const size = n + (lf ? 1 : 0);
    if (size === 0) throw emptyError();
    const out = new Uint8Array(size + 4);
    let bits = 0;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      bits |= c;
      out[4 + i] = c;
    }
    if (bits < 0x80) {
      if (lf) out[4 + n] = 0x0a;
      writeLength(out, 0, size + 4);
      return out;
    }
  }
  return encodeBytes(encoder.encode(lf ? `${text}\n` : text));
}

function encodeBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.byteLength === 0) throw emptyError();
  if (bytes.byteLength > MAX_PACKET_DATA) throw tooLongError(bytes.byteLength);
  const out = new Uint8Array(bytes.byteLength + 4);
  writeLength(out, 0, bytes.byteLength + 4);
  out.set(bytes, 4);
  return out;
}

/** One data packet (a new array: length prefix + a copy of the payload). */
export function encodeData(payload: Uint8Array | string): Uint8Array {
  return typeof payload === 'string' ? encodeString(payload, false) : encodeBytes(payload);
}

/** A text line as a data packet; appends LF when missing. */
export function encodeText(line: string): Uint8Array {
  return encodeString(line, !line.endsWith('\n'));
}

/** Any packet's wire bytes (special packets return the shared constants: do not modify them). */
export function encodePacket(packet: Packet): Uint8Array {
  switch (packet.kind) {
    case 'data':
      return encodeData(packet.payload);
    case 'flush':
      return FLUSH;
    case 'delim':
      return DELIM;
    case 'response-end':
      return RESPONSE_END;
  }
}

/** Several packets as one buffer. */
export function encodePackets(packets: Iterable<Packet | Uint8Array>): Uint8Array {
  const parts: Uint8Array[] = [];
  let total = 0;
  for (const p of packets) {
    const bytes = p instanceof Uint8Array ? p : encodePacket(p);
    parts.push(bytes);
    total += bytes.byteLength;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** The payload of a data packet as UTF-8 text with one trailing LF removed; undefined otherwise. */
export function packetText(packet: Packet): string | undefined {
  if (packet.kind !== 'data') return undefined;
  const { payload } = packet;
  const end = payload.byteLength > 0 && payload[payload.byteLength - 1] === 0x0a ? payload.byteLength - 1 : undefined;
  return decoder.decode(end === undefined ? payload : payload.subarray(0, end));
}

export const flushPacket: Packet = Object.freeze({ kind: 'flush' });
export const delimPacket: Packet = Object.freeze({ kind: 'delim' });
export const responseEndPacket: Packet = Object.freeze({ kind: 'response-end' });

/** A data packet value (no copy: the packet references `payload`). */
export function dataPacket(payload: Uint8Array | string): Packet {
  return { kind: 'data', payload: typeof payload === 'string' ? encoder.encode(payload) : payload };
}
