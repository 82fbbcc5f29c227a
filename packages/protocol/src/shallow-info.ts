/**
 * The shallow boundary a server sends back to a deepening (or shallow) client, and its mirrored
 * codecs. gitprotocol-pack(5) (v0/v1, before the acknowledgments of every round of a deepen
 * request):
 *
 *   shallow-update   =  *shallow-line *unshallow-line flush-pkt
 *   shallow-line     =  PKT-LINE("shallow" SP obj-id)
 *   unshallow-line   =  PKT-LINE("unshallow" SP obj-id)
 *
 * gitprotocol-v2(5), a section of the `fetch` response:
 *
 *   shallow-info     =  PKT-LINE("shallow-info" LF) *PKT-LINE((shallow | unshallow) LF) delim-pkt
 *
 * `decodeShallowInfo` reads the lines after the v2 section header (which whoever reads the
 * sections takes), up to the flush or delim that ends them.
 */
import type { ObjectId } from '@gitport/pack';
import { DELIM, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { encodeTextLines } from './advertisement.js';
import { concatBytes, requirePacket } from './connection.js';
import { ProtocolError } from './errors.js';
import { isObjectId } from './ref-store.js';

export interface ShallowInfo {
  /** Commits that become shallow on the client. */
  shallow: ObjectId[];
  /** Client shallow commits whose parents now come. */
  unshallow: ObjectId[];
}

/** The v2 section header. */
export const SHALLOW_INFO_SECTION = 'shallow-info';

export function encodeShallowInfo(info: ShallowInfo, version: 0 | 2): Uint8Array {
  const lines: string[] = version === 2 ? [`${SHALLOW_INFO_SECTION}\n`] : [];
  for (const oid of info.shallow) lines.push(`shallow ${oid}\n`);
  for (const oid of info.unshallow) lines.push(`unshallow ${oid}\n`);
  return concatBytes([encodeTextLines(lines), version === 2 ? DELIM : FLUSH]);
}

/** Reads `shallow`/`unshallow` lines up to the flush (v0) or delim (v2). */
export async function decodeShallowInfo(reader: PacketReader): Promise<ShallowInfo> {
  const info: ShallowInfo = { shallow: [], unshallow: [] };
  for (;;) {
    const p = await requirePacket(reader, 'reading shallow lines');
    if (p.kind === 'flush' || p.kind === 'delim') return info;
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in shallow lines`);
    // as git's get_oid_hex: the id is the 40 characters after the keyword
    if (text.startsWith('shallow ')) info.shallow.push(shallowId(text, text.slice(8, 48)));
    else if (text.startsWith('unshallow ')) info.unshallow.push(shallowId(text, text.slice(10, 50)));
    else throw new ProtocolError('PROTOCOL_BAD_LINE', `expected shallow lines, got ${JSON.stringify(text)}`);
  }
}

function shallowId(line: string, oid: string): ObjectId {
  if (!isObjectId(oid)) throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid shallow line ${JSON.stringify(line)}`);
  return oid;
}

/** The client's shallow list after `info`: its `shallow` commits added, then `unshallow` ones removed. */
export function applyShallowInfo(shallow: Iterable<ObjectId>, info: ShallowInfo): Set<ObjectId> {
  const after = new Set(shallow);
  for (const oid of info.shallow) after.add(oid);
  for (const oid of info.unshallow) after.delete(oid);
  return after;
}
