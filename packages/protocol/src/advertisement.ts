/**
 * Ref advertisements: v0/v1 (gitprotocol-pack(5) "Reference Discovery"), the smart-HTTP
 * `# service=` prefix (gitprotocol-http(5)), the v2 capability advertisement and v2 `ls-refs`
 * (gitprotocol-v2(5)).
 *
 *   advertised-refs  =  *1("version 1")
 *                       (no-refs / list-of-refs)
 *                       *shallow
 *                       flush-pkt
 *   no-refs          =  PKT-LINE(zero-id SP "capabilities^{}" NUL capability-list)
 *   list-of-refs     =  first-ref *other-ref
 *   first-ref        =  PKT-LINE(obj-id SP refname NUL capability-list)
 *   other-ref        =  PKT-LINE(other-tip / other-peeled)
 *   other-peeled     =  obj-id SP refname "^{}"
 *   shallow          =  PKT-LINE("shallow" SP obj-id)
 *
 *   capability-advertisement = protocol-version capability-list flush-pkt
 *   protocol-version = PKT-LINE("version 2" LF)
 *
 *   ls-refs output   = *ref flush-pkt
 *   ref = PKT-LINE(obj-id-or-unborn SP refname *(SP ref-attribute) LF)
 *   ref-attribute = (symref | peeled);  symref = "symref-target:" symref-target;  peeled = "peeled:" obj-id
 */
import type { ObjectId } from '@gitport/pack';
import { ZERO_ID } from '@gitport/pack/internal/object';
import {
  encodeText,
  FLUSH,
  MAX_PACKET_DATA,
  type Packet,
  type PacketReader,
  packetText,
  writeLength,
} from '@gitport/pktline';
import { Capabilities } from './capabilities.js';
import type { CommitGraph } from './commit-graph.js';
import { concatBytes } from './concat-bytes.js';
import { ProtocolError } from './errors.js';
import { prefixMatcher } from './ref-prefixes.js';
import { isObjectId, type Ref, type RefStore } from './ref-store.js';

export interface AdvertisedRef {
  name: string;
  oid: ObjectId;
  /** For annotated tags: the object the tag finally points at (`^{}` line / `peeled:`). */
  peeled?: ObjectId;
  /** For symbolic refs (v2 `symref-target:`). */
  target?: string;
}

/** Most refs a client accepts in one advertisement or ls-refs answer (a hostile server cannot grow memory without bound). */
export const DEFAULT_MAX_REFS = 1_000_000;

/** A decoded v0/v1 advertisement. */
export interface AdvertisementV0 {
  version: 0 | 1;
  refs: AdvertisedRef[];
  capabilities: Capabilities;
  /** From `symref=HEAD:refs/heads/main` capabilities. */
  symrefs: Map<string, string>;
  shallow: ObjectId[];
}

export interface AdvertisementV2 {
  version: 2;
  capabilities: Capabilities;
}

export type Advertisement = AdvertisementV0 | AdvertisementV2;

/**
 * Peeled values of annotated tags, per object store. Objects never change, so a tag's peeled
 * target can be remembered for as long as its store lives; bounded so a store with millions of
 * tags cannot grow it without limit.
 */
const peelCaches = new WeakMap<object, Map<ObjectId, ObjectId | null>>();
const PEEL_CACHE_LIMIT = 100_000;

async function peelCached(graph: CommitGraph, oid: ObjectId): Promise<ObjectId | undefined> {
  let cache = peelCaches.get(graph.store);
  if (!cache) {
    cache = new Map();
    peelCaches.set(graph.store, cache);
  }
  const hit = cache.get(oid);
  if (hit !== undefined) return hit ?? undefined;
  const peeled = await graph.peelTag(oid);
  if (cache.size >= PEEL_CACHE_LIMIT) cache.clear();
  cache.set(oid, peeled ?? null);
  return peeled;
}

/**
 * Collects refs for an advertisement: `HEAD` first if it resolves, then refs sorted, peeled tags.
 * `HEAD` and the listing are read at once, and a symbolic `HEAD` is resolved from the listing when
 * its target is a listed ref. `listed`: every direct ref under `refs/` as read before (a session
 * that advertised once validates later requests against what it advertised, as git's v0 does);
 * the answer's `listed` is the listing used, for such reuse.
 */
export async function collectRefs(
  refs: RefStore,
  graph: CommitGraph,
  options: { peel?: boolean; head?: boolean; prefixes?: readonly string[]; listed?: readonly Ref[] } = {},
): Promise<{ refs: AdvertisedRef[]; symrefs: Map<string, string>; unbornHead?: string; listed: readonly Ref[] }> {
  const out: AdvertisedRef[] = [];
  const symrefs = new Map<string, string>();
  let unbornHead: string | undefined;
  const wanted = prefixMatcher(options.prefixes ?? []);
  const [head, all] = await Promise.all([
    options.head !== false ? refs.read('HEAD') : undefined,
    options.listed ?? refs.list('refs/'),
  ]);
  if (head?.kind === 'symbolic') {
    const oid = all.find((r) => r.name === head.target)?.oid ?? (await refs.resolve('HEAD'));
    if (oid) symrefs.set('HEAD', head.target);
    else unbornHead = head.target;
    if (oid && wanted('HEAD')) out.push({ name: 'HEAD', oid, target: head.target });
  } else if (head?.kind === 'direct' && wanted('HEAD')) out.push({ name: 'HEAD', oid: head.oid });
  for (const ref of all) {
    if (!wanted(ref.name)) continue;
    const entry: AdvertisedRef = { name: ref.name, oid: ref.oid };
    if (options.peel !== false && ref.name.startsWith('refs/tags/')) {
      const peeled = await peelCached(graph, ref.oid);
      if (peeled) entry.peeled = peeled;
    }
    out.push(entry);
  }
  return unbornHead === undefined
    ? { refs: out, symrefs, listed: all }
    : { refs: out, symrefs, unbornHead, listed: all };
}

/**
 * Frames many text lines (each already ending in LF) as pkt-lines into one buffer: each line is
 * UTF-8 encoded in place after a 4-byte gap that then receives its length. `null` entries are
 * flush packets.
 */
export function encodeTextLines(lines: readonly (string | null)[]): Uint8Array {
  let capacity = 0;
  for (const line of lines) capacity += line === null ? 4 : 4 + line.length * 3;
  const out = new Uint8Array(capacity);
  let at = 0;
  for (const line of lines) {
    if (line === null) {
      out[at++] = 0x30;
      out[at++] = 0x30;
      out[at++] = 0x30;
      out[at++] = 0x30;
      continue;
    }
    const { written } = textEncoder.encodeInto(line, out.subarray(at + 4));
    if (written > MAX_PACKET_DATA) {
      throw new ProtocolError('PROTOCOL_LIMIT', `line of ${written} bytes does not fit in a pkt-line`);
    }
    const size = written + 4;
    writeLength(out, at, size);
    at += size;
  }
  return out.slice(0, at);
}

const textEncoder = new TextEncoder();

/**
 * Encodes a v0 advertisement (ends with a flush). With `service`, prefixes the smart-HTTP
 * `# service=<service>` line and its flush.
 */
export function encodeAdvertisementV0(
  refs: readonly AdvertisedRef[],
  capabilities: Capabilities,
  options: { service?: string; shallow?: readonly ObjectId[]; version?: 0 | 1 } = {},
): Uint8Array {
  const lines: (string | null)[] = [];
  if (options.service) lines.push(`# service=${options.service}\n`, null);
  if (options.version === 1) lines.push('version 1\n');
  const caps = capabilities.toString();
  if (refs.length === 0) {
    lines.push(`${ZERO_ID} capabilities^{}\0${caps}\n`);
  } else {
    let first = true;
    for (const ref of refs) {
      lines.push(first ? `${ref.oid} ${ref.name}\0${caps}\n` : `${ref.oid} ${ref.name}\n`);
      first = false;
      if (ref.peeled) lines.push(`${ref.peeled} ${ref.name}^{}\n`);
    }
  }
  for (const oid of options.shallow ?? []) lines.push(`shallow ${oid}\n`);
  lines.push(null);
  return encodeTextLines(lines);
}

/** Encodes the v2 capability advertisement (`version 2`, one capability per line, flush). */
export function encodeCapabilitiesV2(capabilities: Capabilities, options: { service?: string } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  if (options.service) parts.push(encodeText(`# service=${options.service}\n`), FLUSH);
  parts.push(encodeText('version 2\n'));
  for (const c of capabilities.list)
    parts.push(encodeText(c.value === undefined ? `${c.name}\n` : `${c.name}=${c.value}\n`));
  parts.push(FLUSH);
  return concatBytes(parts);
}

/** Encodes `ls-refs` output lines and the final flush. */
export function encodeLsRefs(
  refs: readonly AdvertisedRef[],
  options: { symrefs?: boolean; peel?: boolean; unbornHead?: string },
): Uint8Array {
  const lines: (string | null)[] = [];
  if (options.unbornHead !== undefined) {
    lines.push(`unborn HEAD${options.symrefs ? ` symref-target:${options.unbornHead}` : ''}\n`);
  }
  for (const ref of refs) {
    let line = `${ref.oid} ${ref.name}`;
    if (options.symrefs && ref.target) line += ` symref-target:${ref.target}`;
    if (options.peel && ref.peeled) line += ` peeled:${ref.peeled}`;
    lines.push(`${line}\n`);
  }
  lines.push(null);
  return encodeTextLines(lines);
}

function badLine(line: string, why: string): ProtocolError {
  return new ProtocolError('PROTOCOL_BAD_LINE', `${why}: ${JSON.stringify(line.slice(0, 200))}`);
}

async function readPacket(reader: PacketReader): Promise<Packet> {
  const packet = await reader.read();
  if (!packet) throw new ProtocolError('PROTOCOL_UNEXPECTED_EOF', 'the remote end hung up during ref discovery');
  return packet;
}

/**
 * Decodes a v0/v1 advertisement or a v2 capability advertisement, accepting the smart-HTTP
 * `# service=` prefix. Tolerates a missing capability list and the pre-2.41 empty form (flush only).
 */
export async function decodeAdvertisement(
  reader: PacketReader,
  options: { maxRefs?: number } = {},
): Promise<Advertisement> {
  const maxRefs = options.maxRefs ?? DEFAULT_MAX_REFS;
  let packet = await readPacket(reader);
  let text = packetText(packet);
  if (text?.startsWith('# service=')) {
    packet = await readPacket(reader);
    if (packet.kind !== 'flush') throw new ProtocolError('PROTOCOL_UNEXPECTED', 'expected flush after # service line');
    packet = await readPacket(reader);
    text = packetText(packet);
  }
  if (text === 'version 2') {
    const list: string[] = [];
    for (;;) {
      const p = await readPacket(reader);
      if (p.kind === 'flush') break;
      if (list.length >= 1000) throw new ProtocolError('PROTOCOL_LIMIT', 'more than 1000 capability lines');
      const line = packetText(p);
      if (line === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in capabilities`);
      list.push(line);
    }
    // one capability per line; a value may hold spaces (`fetch=shallow wait-for-done`)
    return {
      version: 2,
      capabilities: new Capabilities(
        list.map((l) => {
          const eq = l.indexOf('=');
          return eq < 0 ? { name: l } : { name: l.slice(0, eq), value: l.slice(eq + 1) };
        }),
      ),
    };
  }
  let version: 0 | 1 = 0;
  if (text === 'version 1') {
    version = 1;
    packet = await readPacket(reader);
    text = packetText(packet);
  }
  const refs: AdvertisedRef[] = [];
  const shallow: ObjectId[] = [];
  let capabilities = new Capabilities();
  let first = true;
  while (packet.kind !== 'flush') {
    if (text === undefined)
      throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${packet.kind} in advertisement`);
    if (refs.length + shallow.length >= maxRefs) {
      throw new ProtocolError('PROTOCOL_LIMIT', `the advertisement has more than ${maxRefs} refs`);
    }
    let line = text;
    if (first) {
      const nul = line.indexOf('\0');
      if (nul >= 0) {
        capabilities = Capabilities.parse(line.slice(nul + 1));
        line = line.slice(0, nul);
      }
      first = false;
    }
    if (line.startsWith('shallow ')) {
      const oid = line.slice(8);
      if (!isObjectId(oid)) throw badLine(line, 'bad shallow line');
      shallow.push(oid);
    } else {
      const space = line.indexOf(' ');
      const oid = line.slice(0, space);
      const name = line.slice(space + 1);
      if (space !== 40 || !isObjectId(oid) || name === '') throw badLine(line, 'bad ref line');
      if (name === 'capabilities^{}') {
        // the empty-repository form
      } else if (name.endsWith('^{}')) {
        const last = refs[refs.length - 1];
        if (!last || last.name !== name.slice(0, -3)) throw badLine(line, 'peeled line without its tag');
        last.peeled = oid;
      } else refs.push({ name, oid });
    }
    packet = await readPacket(reader);
    text = packetText(packet);
  }
  const symrefs = new Map<string, string>();
  for (const value of capabilities.getAll('symref')) {
    const colon = value.indexOf(':');
    if (colon > 0) symrefs.set(value.slice(0, colon), value.slice(colon + 1));
  }
  const head = refs.find((r) => r.name === 'HEAD');
  if (head && symrefs.has('HEAD')) head.target = symrefs.get('HEAD') as string;
  return { version, refs, capabilities, symrefs, shallow };
}

/** Parses one `ls-refs` output line. */
export function parseLsRefsLine(line: string): AdvertisedRef & { unborn?: boolean } {
  const words = line.split(' ');
  const [first, name] = words;
  if (!first || !name) throw badLine(line, 'bad ls-refs line');
  const unborn = first === 'unborn';
  if (!unborn && !isObjectId(first)) throw badLine(line, 'bad ls-refs line');
  const ref: AdvertisedRef & { unborn?: boolean } = { name, oid: unborn ? ZERO_ID : first };
  if (unborn) ref.unborn = true;
  for (const attr of words.slice(2)) {
    if (attr.startsWith('symref-target:')) ref.target = attr.slice(14);
    else if (attr.startsWith('peeled:')) ref.peeled = attr.slice(7);
  }
  return ref;
}
