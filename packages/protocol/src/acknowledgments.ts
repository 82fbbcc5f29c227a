/**
 * upload-pack's answers to a round of haves, and their mirrored codecs. gitprotocol-pack(5)
 * (v0/v1), one line at a time as the server finds the haves it has:
 *
 *   server-response  =  *ack_multi ack / nak
 *   ack_multi        =  PKT-LINE("ACK" SP obj-id ack_status)
 *   ack_status       =  "continue" / "common" / "ready"
 *   ack              =  PKT-LINE("ACK" SP obj-id)
 *   nak              =  PKT-LINE("NAK")
 *
 * gitprotocol-v2(5), the first section of a `fetch` response that is not after `done`:
 *
 *   acknowledgments  =  PKT-LINE("acknowledgments" LF) (nak | *ack) (ready)
 *   ready            =  PKT-LINE("ready" LF)
 *   nak              =  PKT-LINE("NAK" LF)
 *   ack              =  PKT-LINE("ACK" SP obj-id LF)
 *
 * A section with `ready` ends with a delim-pkt (the other sections and the pack follow); one
 * without ends with a flush-pkt (the client sends another round). `decodeAcknowledgments` reads
 * the lines after the section header (which whoever reads the sections takes), up to that end.
 */
import type { ObjectId } from '@gitport/pack';
import { DELIM, encodeText, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { encodeTextLines } from './advertisement.js';
import { concatBytes, requirePacket } from './connection.js';
import { ProtocolError } from './errors.js';
import { isObjectId } from './ref-store.js';

/** v0/v1: what an `ACK` line adds after the id (multi_ack and multi_ack_detailed). */
export type AckStatus = 'continue' | 'common' | 'ready';

/** v0/v1: one line of the server's answer to a round of haves. */
export type Acknowledgment = { kind: 'nak' } | { kind: 'ack'; oid: ObjectId; status?: AckStatus };

/** v2: the `acknowledgments` section of a `fetch` response. */
export interface Acknowledgments {
  /** The haves of the request the server has (`NAK` when none). */
  acks: ObjectId[];
  /** The server will send the pack without another round. */
  ready: boolean;
}

/** The v2 section header. */
export const ACKNOWLEDGMENTS_SECTION = 'acknowledgments';

const STATUSES: ReadonlySet<string> = new Set<AckStatus>(['continue', 'common', 'ready']);

export function encodeAcknowledgment(ack: Acknowledgment): Uint8Array {
  if (ack.kind === 'nak') return encodeText('NAK\n');
  return encodeText(ack.status ? `ACK ${ack.oid} ${ack.status}\n` : `ACK ${ack.oid}\n`);
}

/** One v0/v1 answer line (without its newline). */
export function decodeAcknowledgment(text: string): Acknowledgment {
  if (text === 'NAK') return { kind: 'nak' };
  if (!text.startsWith('ACK ')) {
    throw new ProtocolError('PROTOCOL_BAD_LINE', `expected ACK or NAK, got ${JSON.stringify(text)}`);
  }
  const oid = ackId(text);
  if (text.length === 44) return { kind: 'ack', oid };
  const status = text.slice(45);
  if (text[44] !== ' ' || !STATUSES.has(status)) {
    throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid ACK line ${JSON.stringify(text)}`);
  }
  return { kind: 'ack', oid, status: status as AckStatus };
}

export function encodeAcknowledgments(section: Acknowledgments): Uint8Array {
  const lines = [`${ACKNOWLEDGMENTS_SECTION}\n`];
  if (section.acks.length === 0) lines.push('NAK\n');
  for (const oid of section.acks) lines.push(`ACK ${oid}\n`);
  if (section.ready) lines.push('ready\n');
  return concatBytes([encodeTextLines(lines), section.ready ? DELIM : FLUSH]);
}

/**
 * Reads the v2 section's lines up to its end: a flush, or after `ready` the delim. An id acked
 * twice is kept once; past `maxAcks` distinct ids (a server acks only haves it was sent) the
 * answer is PROTOCOL_BAD_LINE.
 */
export async function decodeAcknowledgments(
  reader: PacketReader,
  options: { maxAcks?: number } = {},
): Promise<Acknowledgments> {
  const maxAcks = options.maxAcks ?? Number.POSITIVE_INFINITY;
  const acks = new Set<ObjectId>();
  let ready = false;
  for (;;) {
    const p = await requirePacket(reader, 'reading acknowledgments');
    if (p.kind === 'flush') {
      // as fetch-pack.c: `ready` promises the pack, which comes after a delim
      if (ready) throw new ProtocolError('PROTOCOL_UNEXPECTED', 'expected the pack to follow ready');
      return { acks: [...acks], ready };
    }
    if (p.kind === 'delim') {
      if (!ready) throw new ProtocolError('PROTOCOL_UNEXPECTED', 'sections after acknowledgments without ready');
      return { acks: [...acks], ready };
    }
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in acknowledgments`);
    if (text === 'NAK') continue;
    if (text === 'ready') {
      ready = true;
      continue;
    }
    if (!text.startsWith('ACK ')) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', `unexpected acknowledgment ${JSON.stringify(text)}`);
    }
    acks.add(ackId(text));
    if (acks.size > maxAcks) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', `more acknowledgments than the ${maxAcks} haves sent`);
    }
  }
}

/** As git's get_oid_hex: the id is the 40 characters after `ACK `. */
function ackId(line: string): ObjectId {
  const oid = line.slice(4, 44);
  if (!isObjectId(oid)) throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid ACK line ${JSON.stringify(line)}`);
  return oid;
}
