/**
 * The fetch request a client sends upload-pack, as one value for both protocol versions, and
 * its mirrored codecs. gitprotocol-pack(5) "Packfile Negotiation" (v0/v1):
 *
 *   upload-request    =  want-list *shallow-line *1depth-request flush-pkt
 *   want-list         =  first-want *additional-want
 *   first-want        =  PKT-LINE("want" SP obj-id SP capability-list)
 *   additional-want   =  PKT-LINE("want" SP obj-id)
 *   shallow-line      =  PKT-LINE("shallow" SP obj-id)
 *   depth-request     =  PKT-LINE("deepen" SP depth) / PKT-LINE("deepen-since" SP timestamp) /
 *                        PKT-LINE("deepen-not" SP ref)
 *   upload-haves      =  have-list compute-end
 *   have-line         =  PKT-LINE("have" SP obj-id)
 *   compute-end       =  flush-pkt / PKT-LINE("done")
 *
 * and gitprotocol-v2(5) "fetch", whose arguments follow the command's delim-pkt, one a line:
 *
 *   want <oid> | have <oid> | done | thin-pack | no-progress | include-tag | ofs-delta |
 *   shallow <oid> | deepen <depth> | deepen-relative | deepen-since <timestamp> |
 *   deepen-not <rev> | wait-for-done
 *
 * A server takes the request line by line as it arrives (`decodeWantListLine`,
 * `decodeUploadHavesLine`, `decodeFetchArgument`), so each line costs bounded work; the whole
 * value is for clients (`encodeUploadRequestV0`, `encodeFetchArguments`) and the tests that
 * prove the two sides agree (`decodeUploadRequestV0`, `decodeFetchArguments`).
 *
 * v0 says `deepen-relative` as a capability on the first want; v2 as an argument. The value
 * keeps it in `deepen.relative` for both, and v0 also accepts it as a line (a deepen request
 * of its own, as v2's argument is).
 */
import type { ObjectId } from '@gitport/pack';
import { encodeText, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { concatBytes, requirePacket } from './connection.js';
import { ProtocolError } from './errors.js';
import { isObjectId } from './ref-store.js';

/** What a client asks of the history besides whole commits: `--depth`, `--shallow-since`, ... */
export interface DeepenRequest {
  /** `deepen <n>`: commits from each want (with `relative`: from the current shallow boundary). */
  depth?: number;
  /** `deepen-since <seconds since the epoch>`. */
  since?: number;
  /** `deepen-not <ref>`: refs whose history is left out. */
  not: string[];
  relative: boolean;
}

/** One fetch request of upload-pack. */
export interface UploadRequest {
  wants: ObjectId[];
  /**
   * v0: the capabilities on the first want (`multi_ack_detailed side-band-64k ... agent=...`);
   * v2: the arguments that are single words (`thin-pack ofs-delta include-tag no-progress
   * wait-for-done`).
   */
  capabilities: string[];
  /** The client's shallow commits. */
  shallow: ObjectId[];
  deepen?: DeepenRequest;
  /** Partial clone: the `filter <spec>` line's spec, as sent (upload-pack parses it by its policy). */
  filter?: string;
  /** Objects the client has (in v0 stateless requests, the have-list after the want-list). */
  haves: ObjectId[];
  done: boolean;
}

/** A line that says what the client wants: the v0 want-list's lines. */
export type WantListLine =
  | { kind: 'want'; oid: ObjectId /** v0: the capability list after the id. */; capabilities?: string }
  | { kind: 'shallow'; oid: ObjectId }
  | { kind: 'deepen'; depth: number }
  | { kind: 'deepen-since'; since: number }
  | { kind: 'deepen-not'; ref: string }
  | { kind: 'deepen-relative' }
  | { kind: 'filter'; spec: string };

/** One line of a request, as a server takes it. */
export type UploadRequestLine =
  | WantListLine
  | { kind: 'have'; oid: ObjectId }
  | { kind: 'done' }
  | { kind: 'capability'; name: FetchCapability };

/** The single-word v2 fetch arguments this package knows. */
export type FetchCapability = 'thin-pack' | 'ofs-delta' | 'include-tag' | 'no-progress' | 'wait-for-done';
const FETCH_CAPABILITIES: ReadonlySet<string> = new Set<FetchCapability>([
  'thin-pack',
  'ofs-delta',
  'include-tag',
  'no-progress',
  'wait-for-done',
]);

/** Largest `deepen` by default: git's int. */
export const DEFAULT_MAX_DEPTH = 0x7fffffff;

export interface UploadRequestLimits {
  /** Most distinct `want`s (default 100,000). */
  maxWants?: number;
  /** Most `have` lines (default 1,000,000). */
  maxHaves?: number;
  /** Largest `deepen` (default 2^31-1). */
  maxDepth?: number;
}

export const DEFAULT_MAX_WANTS = 100_000;
export const DEFAULT_MAX_HAVES = 1_000_000;

function objectId(kind: 'want' | 'have' | 'shallow', value: string): ObjectId {
  if (!isObjectId(value)) throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid ${kind} ${JSON.stringify(value)}`);
  return value;
}

/** `deepen*` and `filter` lines, shared by both versions; undefined for any other line. */
function decodeSharedLine(text: string, maxDepth: number): WantListLine | undefined {
  if (text.startsWith('deepen ')) {
    const depth = Number(text.slice(7));
    if (!Number.isInteger(depth) || depth <= 0 || depth > maxDepth) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid ${text}`);
    }
    return { kind: 'deepen', depth };
  }
  if (text.startsWith('deepen-since ')) {
    const since = Number(text.slice(13));
    if (!Number.isFinite(since)) throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid ${text}`);
    return { kind: 'deepen-since', since };
  }
  if (text.startsWith('deepen-not ')) return { kind: 'deepen-not', ref: text.slice(11) };
  if (text === 'deepen-relative') return { kind: 'deepen-relative' };
  if (text.startsWith('filter ')) return { kind: 'filter', spec: text.slice(7) };
  return undefined;
}

/** One line of the v0 want-list (before its flush): `want`, `shallow` or a `deepen*` line. */
export function decodeWantListLine(text: string, options: { maxDepth?: number } = {}): WantListLine {
  if (text.startsWith('want ')) {
    const oid = objectId('want', text.slice(5, 45));
    return { kind: 'want', oid, capabilities: text.slice(46) };
  }
  if (text.startsWith('shallow ')) return { kind: 'shallow', oid: objectId('shallow', text.slice(8)) };
  const deepen = decodeSharedLine(text, options.maxDepth ?? DEFAULT_MAX_DEPTH);
  if (deepen) return deepen;
  throw new ProtocolError('PROTOCOL_BAD_LINE', `upload-pack: protocol error, unexpected ${JSON.stringify(text)}`);
}

/** One line of a v0 have-list: `have <oid>` or `done` (a flush ends a round). */
export function decodeUploadHavesLine(text: string): { kind: 'have'; oid: ObjectId } | { kind: 'done' } {
  if (text.startsWith('have ')) return { kind: 'have', oid: objectId('have', text.slice(5)) };
  if (text === 'done') return { kind: 'done' };
  throw new ProtocolError('PROTOCOL_BAD_LINE', `upload-pack: expected have or done, got ${JSON.stringify(text)}`);
}

/** One argument of a v2 `fetch`. */
export function decodeFetchArgument(text: string, options: { maxDepth?: number } = {}): UploadRequestLine {
  if (text.startsWith('want ')) return { kind: 'want', oid: objectId('want', text.slice(5)) };
  if (text.startsWith('have ')) return { kind: 'have', oid: objectId('have', text.slice(5)) };
  if (text === 'done') return { kind: 'done' };
  if (FETCH_CAPABILITIES.has(text)) return { kind: 'capability', name: text as FetchCapability };
  if (text.startsWith('shallow ')) return { kind: 'shallow', oid: objectId('shallow', text.slice(8)) };
  const deepen = decodeSharedLine(text, options.maxDepth ?? DEFAULT_MAX_DEPTH);
  if (deepen) return deepen;
  throw new ProtocolError('PROTOCOL_BAD_LINE', `fetch: unexpected argument ${JSON.stringify(text)}`);
}

/** The `deepen*` lines of a request, in the order git sends them. */
function deepenLines(deepen: DeepenRequest | undefined, relativeLine: boolean): string[] {
  if (!deepen) return [];
  const lines: string[] = [];
  if (deepen.depth !== undefined) lines.push(`deepen ${deepen.depth}`);
  if (deepen.relative && relativeLine) lines.push('deepen-relative');
  if (deepen.since !== undefined) lines.push(`deepen-since ${Math.floor(deepen.since)}`);
  for (const ref of deepen.not) lines.push(`deepen-not ${ref}`);
  return lines;
}

function filterLines(request: UploadRequest): string[] {
  return request.filter === undefined ? [] : [`filter ${request.filter}`];
}

function pkt(text: string): Uint8Array {
  return encodeText(`${text}\n`);
}

/**
 * The v0 upload-request: the want-list (capabilities on the first want; `deepen-relative` among
 * them when asked), shallow and deepen lines, flush; then, when the request has haves or is
 * `done`, its have-list (`encodeUploadHaves`), as a stateless request carries it. A stateful
 * client sends the want-list alone (no haves, not done) and its rounds after it.
 */
export function encodeUploadRequestV0(request: UploadRequest): Uint8Array {
  const capabilities =
    request.deepen?.relative && !request.capabilities.includes('deepen-relative')
      ? [...request.capabilities, 'deepen-relative']
      : request.capabilities;
  const parts: Uint8Array[] = [];
  request.wants.forEach((oid, i) => {
    parts.push(pkt(i === 0 && capabilities.length > 0 ? `want ${oid} ${capabilities.join(' ')}` : `want ${oid}`));
  });
  for (const oid of request.shallow) parts.push(pkt(`shallow ${oid}`));
  for (const line of deepenLines(request.deepen, false)) parts.push(pkt(line));
  for (const line of filterLines(request)) parts.push(pkt(line));
  parts.push(FLUSH);
  if (request.haves.length > 0 || request.done) parts.push(encodeUploadHaves(request.haves, request.done));
  return concatBytes(parts);
}

/** One v0 round of haves: the have lines, then `done` or the flush that asks for acknowledgments. */
export function encodeUploadHaves(haves: readonly ObjectId[], done: boolean): Uint8Array {
  const parts = haves.map((oid) => pkt(`have ${oid}`));
  parts.push(done ? pkt('done') : FLUSH);
  return concatBytes(parts);
}

/** The v2 `fetch` arguments of a request (the command's capabilities and framing are its own). */
export function encodeFetchArguments(request: UploadRequest): string[] {
  const args = [...request.capabilities];
  for (const oid of request.wants) args.push(`want ${oid}`);
  for (const oid of request.shallow) args.push(`shallow ${oid}`);
  args.push(...deepenLines(request.deepen, true));
  args.push(...filterLines(request));
  for (const oid of request.haves) args.push(`have ${oid}`);
  if (request.done) args.push('done');
  return args;
}

/**
 * Gathers decoded lines into a request, as a server applies them: a repeated want counts once,
 * the last `deepen` and `deepen-since` win, and the limits hold.
 */
class RequestBuilder {
  readonly request: UploadRequest = { wants: [], capabilities: [], shallow: [], haves: [], done: false };
  readonly #wants = new Set<ObjectId>();
  readonly #maxWants: number;
  readonly #maxHaves: number;

  constructor(limits: UploadRequestLimits) {
    this.#maxWants = limits.maxWants ?? DEFAULT_MAX_WANTS;
    this.#maxHaves = limits.maxHaves ?? DEFAULT_MAX_HAVES;
  }

  add(line: UploadRequestLine): void {
    const r = this.request;
    switch (line.kind) {
      case 'want':
        if (this.#wants.has(line.oid)) return;
        if (this.#wants.size >= this.#maxWants) {
          throw new ProtocolError('PROTOCOL_LIMIT', `more than ${this.#maxWants} wants`);
        }
        if (this.#wants.size === 0 && line.capabilities !== undefined) {
          r.capabilities = line.capabilities.split(' ').filter((word) => word !== '');
        }
        this.#wants.add(line.oid);
        r.wants.push(line.oid);
        return;
      case 'have':
        if (r.haves.length >= this.#maxHaves)
          throw new ProtocolError('PROTOCOL_LIMIT', `more than ${this.#maxHaves} haves`);
        r.haves.push(line.oid);
        return;
      case 'shallow':
        r.shallow.push(line.oid);
        return;
      case 'done':
        r.done = true;
        return;
      case 'capability':
        r.capabilities.push(line.name);
        return;
      case 'deepen':
        this.#deepen().depth = line.depth;
        return;
      case 'deepen-since':
        this.#deepen().since = line.since;
        return;
      case 'deepen-not':
        this.#deepen().not.push(line.ref);
        return;
      case 'deepen-relative':
        this.#deepen().relative = true;
        return;
      case 'filter':
        // git allows one filter line per request
        if (r.filter !== undefined)
          throw new ProtocolError('PROTOCOL_BAD_LINE', 'multiple filter-specs cannot be combined');
        r.filter = line.spec;
        return;
    }
  }

  #deepen(): DeepenRequest {
    this.request.deepen ??= { not: [], relative: false };
    return this.request.deepen;
  }
}

/**
 * Reads a v0 upload-request up to its want-list's flush, then its have-list up to `done`, the
 * flush that ends a round, or the end of the input. Undefined for an empty request (a flush or
 * nothing first: what `git ls-remote` sends).
 */
export async function decodeUploadRequestV0(
  reader: PacketReader,
  limits: UploadRequestLimits = {},
): Promise<UploadRequest | undefined> {
  let packet = await reader.read();
  if (!packet || packet.kind === 'flush') return undefined;
  const builder = new RequestBuilder(limits);
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  while (packet.kind !== 'flush') {
    const text = packetText(packet);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${packet.kind} in want list`);
    builder.add(decodeWantListLine(text, { maxDepth }));
    packet = await requirePacket(reader, 'reading wants');
  }
  const request = builder.request;
  if (request.deepen && request.capabilities.includes('deepen-relative')) request.deepen.relative = true;
  for (;;) {
    const p = await reader.read();
    if (!p || p.kind === 'flush') return request;
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in negotiation`);
    const line = decodeUploadHavesLine(text);
    builder.add(line);
    if (line.kind === 'done') return request;
  }
}

/** Gathers the arguments of a v2 `fetch` into a request. */
export async function decodeFetchArguments(
  args: Iterable<string> | AsyncIterable<string>,
  limits: UploadRequestLimits = {},
): Promise<UploadRequest> {
  const builder = new RequestBuilder(limits);
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  for await (const arg of args) builder.add(decodeFetchArgument(arg, { maxDepth }));
  return builder.request;
}
