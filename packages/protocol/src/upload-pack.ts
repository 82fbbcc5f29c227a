/**
 * The upload-pack server (what `git fetch` and `git clone` talk to), v0/v1 and v2, stateful
 * and stateless. gitprotocol-pack(5) "Packfile Negotiation", gitprotocol-v2(5) "fetch"; the
 * request's grammar and codecs are in upload-request.ts, the shallow boundary's in
 * shallow-info.ts.
 *
 * With multi_ack_detailed the server answers each round with `ACK <id> common` for every have it
 * has, `ACK <id> ready` once every want reaches a common commit, then `NAK`; after `done` it
 * sends `ACK <last common>` (or `NAK`) and the pack. With `no-done` (stateless only) it sends
 * `NAK`, `ACK <id>` and the pack right after the round that said `ready`. This follows
 * upload-pack.c's `get_common_commits`.
 *
 * v2 `fetch` response: [acknowledgments] [shallow-info] packfile, sections separated by delim;
 * a round without `done` that is not ready ends with flush after the acknowledgments. The
 * answers' grammar and codecs are in acknowledgments.ts.
 */
import type { ObjectFilter, ObjectId, PackEncoding } from '@gitport/pack';
import { createPack } from '@gitport/pack/internal/pack-writer';
import { hasStoredPacks } from '@gitport/pack/internal/stored-reads';
import { encodeText, FLUSH, type Packet, packetText, SidebandMuxer } from '@gitport/pktline';
import { type Acknowledgment, encodeAcknowledgment, encodeAcknowledgments } from './acknowledgments.js';
import {
  type AdvertisedRef,
  collectRefs,
  encodeAdvertisementV0,
  encodeCapabilitiesV2,
  encodeLsRefs,
} from './advertisement.js';
import { Capabilities, DEFAULT_AGENT, uploadPackCapabilities, v2Capabilities } from './capabilities.js';
import { readCommandHead } from './command-request.js';
import { CommitGraph, computeShallow, type ShallowRequest } from './commit-graph.js';
import { CommonReach } from './common-reach.js';
import { type Connection, newReader, type Repository, requirePacket } from './connection.js';
import { hasCode, ProtocolError, peerErrorMessage, throwIfAborted } from './errors.js';
import { type FilterPolicy, filterAdvertised, firstUnreachableObject, parseFilterLine } from './filter-request.js';
import { objectInfo } from './object-info.js';
import { PACK_REUSE } from './pack-reuse.js';
import { TOO_MANY_PREFIXES } from './ref-prefixes.js';
import { isObjectId, type Ref } from './ref-store.js';
import { encodeShallowInfo, type ShallowInfo } from './shallow-info.js';
import {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_HAVES,
  DEFAULT_MAX_WANTS,
  decodeFetchArgument,
  decodeUploadHavesLine,
  decodeWantListLine,
  type WantListLine,
} from './upload-request.js';

export interface UploadPackLimits {
  /** Most `want` lines in one request (default 100,000). */
  maxWants?: number;
  /** Most `have` lines over a whole negotiation (default 1,000,000). */
  maxHaves?: number;
  /** Largest `deepen` (default 2^31-1). */
  maxDepth?: number;
}

export interface UploadPackOptions {
  agent?: string;
  /** Stateless RPC (smart HTTP): one request in, one response out, no advertisement. */
  stateless?: boolean;
  /** Stateful only: send the advertisement first (default true). */
  advertise?: boolean;
  /** 0/1 (default) or 2. */
  protocol?: 0 | 1 | 2;
  signal?: AbortSignal;
  limits?: UploadPackLimits;
  /** Pack writing: deltas on by default. */
  pack?: Pick<PackEncoding, 'deltas' | 'window' | 'depth'>;
  /** Partial clone: whether `filter` is advertised and honoured, which kinds, how deep a tree filter. */
  allowFilter?: FilterPolicy['allowFilter'];
  allowedFilters?: FilterPolicy['allowedFilters'];
  maxTreeDepth?: FilterPolicy['maxTreeDepth'];
}

/**
 * The state of one fetch negotiation on the server (shared by v0 and v2). Every line of the
 * request is taken as it arrives and costs a bounded amount of work and memory: wants, shallow
 * commits and deepen-not refs must name objects of the repository (so their sets are bounded by
 * it, as git's object flags bound its own), and the give-up check is kept up to date instead of
 * walked again per have (see common-reach.ts). Exported for tests, not from the package.
 */
export class UploadSession {
  readonly graph: CommitGraph;
  readonly wants: ObjectId[] = [];
  readonly #wantSet = new Set<ObjectId>();
  /**
   * The wants peeled to commits, once something needs them: the give-up check (a negotiation
   * with common commits) and the shallow walks. A clone needs neither, so it reads no want.
   */
  #wantCommits: Promise<ObjectId[]> | undefined;
  /** The client's shallow commits that are commits here (git ignores the others). */
  readonly clientShallow = new Set<ObjectId>();
  deepen: ShallowRequest | undefined;
  /** `deepen-not` refs, resolved as they arrive. */
  readonly deepenNot = new Set<ObjectId>();
  /** `deepen-not` names already resolved (each names a ref, so they are bounded by the refs). */
  readonly #deepenNotNames = new Set<string>();
  #deepenNotSeen = false;
  /** The direct refs by name, read once for `deepen-not` names. */
  #refsByName: Map<string, ObjectId> | undefined;
  /** Haves that we have (the common objects, in the order received). */
  readonly common: ObjectId[] = [];
  readonly #commonSet = new Set<ObjectId>();
  readonly #reach: CommonReach;
  havesSeen = 0;
  newShallow = new Set<ObjectId>();
  unshallow = new Set<ObjectId>();
  refs: AdvertisedRef[] | undefined;
  /** The request's `filter` (partial clone), if any. */
  filter: ObjectFilter | undefined;
  /**
   * The refs this connection already advertised, if it did: wants are checked against them (as
   * git's v0 checks them against its advertisement) instead of listing the refs again.
   */
  listed: readonly Ref[] | undefined;

  constructor(
    readonly repo: Repository,
    readonly options: UploadPackOptions,
  ) {
    this.graph = new CommitGraph(repo.objects);
    this.#reach = new CommonReach(this.graph, options.signal);
  }

  /** Commits the give-up check walked so far (a work counter for tests). */
  get reachSteps(): number {
    return this.#reach.expanded;
  }

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  async allRefs(): Promise<AdvertisedRef[]> {
    if (!this.refs) {
      const listed = this.listed;
      this.refs = (await collectRefs(this.repo.refs, this.graph, { head: false, ...(listed ? { listed } : {}) })).refs;
    }
    return this.refs;
  }

  /** The largest `deepen` this server takes. */
  get maxDepth(): number {
    return this.options.limits?.maxDepth ?? DEFAULT_MAX_DEPTH;
  }

  /** One line of what the client wants (the haves and `done` belong to the negotiation). */
  async take(line: WantListLine): Promise<void> {
    switch (line.kind) {
      case 'want':
        return this.addWant(line.oid);
      case 'shallow':
        return this.addShallow(line.oid);
      case 'deepen':
        this.#deepenRequest().depth = line.depth;
        return;
      case 'deepen-since':
        this.#deepenRequest().since = line.since;
        return;
      case 'deepen-not':
        this.#deepenRequest();
        return this.#addDeepenNot(line.ref);
      case 'deepen-relative':
        this.#deepenRequest().relative = true;
        return;
      case 'filter':
        return this.setFilter(line.spec);
    }
  }

  #deepenRequest(): ShallowRequest {
    this.deepen ??= {};
    return this.deepen;
  }

  /** One `want`: a repeat costs nothing, an object we do not have is refused at once (as git does). */
  async addWant(oid: ObjectId): Promise<void> {
    if (this.#wantSet.has(oid)) return;
    const max = this.options.limits?.maxWants ?? DEFAULT_MAX_WANTS;
    if (this.wants.length >= max) throw new ProtocolError('PROTOCOL_LIMIT', `more than ${max} wants`);
    if (!(await this.repo.objects.has(oid))) throw notOurRef(oid);
    this.#wantSet.add(oid);
    this.wants.push(oid);
  }

  /**
   * One `shallow` line. As in git's upload-pack (process_shallow), an object we do not have is
   * ignored and one that is not a commit is refused.
   */
  async addShallow(oid: ObjectId): Promise<void> {
    if (this.clientShallow.has(oid) || !(await this.repo.objects.has(oid))) return;
    if (!(await this.graph.commit(oid))) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', `invalid shallow object ${oid}`);
    }
    this.clientShallow.add(oid);
  }

  /** One `filter <spec>` line (see filter-request.ts). */
  setFilter(spec: string): void {
    this.filter = parseFilterLine(spec, this.filter, this.options);
  }

  /**
   * Every want must exist; a want that is not a ref tip must be reachable from one
   * (allow-reachable-sha1-in-want; also what a stateless server needs when refs moved).
   */
  async validateWants(): Promise<void> {
    let refused = await this.#notReachableUnderFilter(await this.#notReachable(await this.allRefs()));
    if (refused !== undefined && this.listed !== undefined) {
      // not among what this connection listed: a ref may have moved on since; the refs as they
      // are now decide, as for a request over a connection of its own
      this.listed = undefined;
      this.refs = undefined;
      refused = await this.#notReachableUnderFilter(await this.#notReachable(await this.allRefs()));
    }
    if (refused !== undefined) throw notOurRef(refused);
    this.#wantCommits = undefined;
    this.#reach.setWants(() => this.wantCommits());
  }

  /** The wants peeled to commits (read on the first call after `validateWants`). */
  wantCommits(): Promise<ObjectId[]> {
    this.#wantCommits ??= (async () => {
      const commits: ObjectId[] = [];
      for (const oid of this.wants) {
        const peeled = await this.graph.peel(oid);
        if (peeled?.type === 'commit') commits.push(peeled.oid);
      }
      return commits;
    })();
    return this.#wantCommits;
  }

  /** With a filter, wants of trees and blobs reachable from the refs are allowed too. */
  async #notReachableUnderFilter(refused: ObjectId | undefined): Promise<ObjectId | undefined> {
    if (refused === undefined || this.filter === undefined) return refused;
    const refs = await this.allRefs();
    const tips = refs.map((r) => r.oid);
    const tipSet = new Set(tips);
    const others = this.wants.filter((oid) => !tipSet.has(oid));
    const found = await this.graph.reachableFrom(others, tips, this.signal);
    return firstUnreachableObject(
      this.repo.objects,
      others.filter((oid) => !found.has(oid)),
      tips,
      this.signal,
    );
  }

  /** The first want that is neither a tip of `refs` nor reachable from one. */
  async #notReachable(refs: readonly AdvertisedRef[]): Promise<ObjectId | undefined> {
    const tips = new Set<ObjectId>();
    for (const r of refs) {
      tips.add(r.oid);
      if (r.peeled) tips.add(r.peeled);
    }
    const others = this.wants.filter((oid) => !tips.has(oid));
    if (others.length === 0) return undefined;
    const found = await this.graph.reachableFrom(others, tips, this.signal);
    return others.find((oid) => !found.has(oid));
  }

  get deepening(): boolean {
    return this.deepen !== undefined || this.#deepenNotSeen;
  }

  /** Computes the shallow boundary; returns what to send of it. */
  async processShallow(): Promise<ShallowInfo> {
    if (!this.deepening) return { shallow: [], unshallow: [] };
    const request: ShallowRequest = { ...this.deepen };
    if (request.depth !== undefined && (request.since !== undefined || this.#deepenNotSeen)) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', 'deepen and deepen-since (or deepen-not) cannot be used together');
    }
    if (this.deepenNot.size > 0) request.not = [...this.deepenNot];
    const { shallow, unshallow } = await computeShallow(
      this.graph,
      await this.wantCommits(),
      this.clientShallow,
      request,
      this.signal,
    );
    this.newShallow = shallow;
    this.unshallow = unshallow;
    return { shallow: [...shallow].filter((oid) => !this.clientShallow.has(oid)), unshallow: [...unshallow] };
  }

  /**
   * One `deepen-not`: a ref name (as git's expand_ref tries it: as given, then under `refs/`,
   * `refs/tags/`, `refs/heads/`), or an object id. A name is resolved once, names under `refs/`
   * from one listing of the refs, so many lines cost one listing; an object we do not have is
   * ignored.
   */
  async #addDeepenNot(name: string): Promise<void> {
    // a deepen request even when nothing comes of it: the client expects the shallow section
    this.#deepenNotSeen = true;
    if (isObjectId(name)) {
      if (await this.repo.objects.has(name)) this.deepenNot.add(name);
      return;
    }
    if (this.#deepenNotNames.has(name)) return;
    const oid = await this.#resolveShortRef(name);
    if (!oid) throw new ProtocolError('PROTOCOL_BAD_LINE', `git upload-pack: deepen-not is not a ref: ${name}`);
    this.#deepenNotNames.add(name);
    this.deepenNot.add(oid);
  }

  async #resolveShortRef(name: string): Promise<ObjectId | undefined> {
    for (const candidate of [name, `refs/${name}`, `refs/tags/${name}`, `refs/heads/${name}`]) {
      if (candidate.startsWith('refs/')) {
        if (!this.#refsByName) {
          const listing = this.listed ?? (await this.repo.refs.list('refs/'));
          this.#refsByName = new Map(listing.map((r) => [r.name, r.oid]));
        }
        const oid = this.#refsByName.get(candidate);
        if (oid) return oid;
      } else {
        // HEAD and other refs outside refs/ (symbolic ones included)
        const oid = await this.repo.refs.resolve(candidate);
        if (oid) return oid;
      }
    }
    return undefined;
  }

  /** Records one `have`; returns whether we have the object. */
  async have(oid: ObjectId): Promise<boolean> {
    const max = this.options.limits?.maxHaves ?? DEFAULT_MAX_HAVES;
    if (++this.havesSeen > max) throw new ProtocolError('PROTOCOL_LIMIT', `more than ${max} haves`);
    if (!(await this.repo.objects.has(oid))) return false;
    if (!this.#commonSet.has(oid)) {
      this.#commonSet.add(oid);
      this.common.push(oid);
      const c = await this.graph.commit(oid);
      if (c) this.#reach.addCommon(c);
    }
    return true;
  }

  /** git's ok_to_give_up: every want reaches a commit the client has. */
  okToGiveUp(): Promise<boolean> {
    return this.#reach.reachesAll();
  }

  /** Streams the pack to `conn` (side-banded when `features.sideband` is set). */
  async sendPack(
    conn: Connection,
    features: { sideband: number; thin: boolean; ofsDelta: boolean; includeTag: boolean; progress: boolean },
  ): Promise<void> {
    const write = (bytes: Uint8Array) => conn.write(bytes);
    const wants = [...this.wants];
    const wanted = new Set(wants);
    const shallowBoundary = new Set<ObjectId>([...this.newShallow, ...this.clientShallow]);
    for (const oid of this.unshallow) {
      // the client gets the parents of commits that stop being shallow: walk them as wants
      const c = await this.graph.commit(oid);
      for (const p of c?.parents ?? []) {
        if (wanted.has(p)) continue;
        wanted.add(p);
        wants.push(p);
      }
    }
    const tags: ObjectId[] = [];
    if (features.includeTag) {
      for (const ref of await this.allRefs()) {
        if (ref.name.startsWith('refs/tags/') && ref.peeled && !wanted.has(ref.oid)) tags.push(ref.oid);
      }
    }
    // frames several to a buffer of the connection's write size, each buffer handed over whole
    const muxer =
      features.sideband > 0
        ? new SidebandMuxer((bytes, options) => conn.write(bytes, options), {
            maxData: features.sideband,
            ...(conn.writeSize !== undefined ? { writeSize: conn.writeSize } : {}),
          })
        : undefined;
    const packOptions = this.options.pack ?? {};
    // progress (band 2) as git words it; createPack reports synchronously, the lines go out
    // between pack chunks
    const progress: string[] = [];
    let lastPercent = -1;
    let lastPhase = '';
    const onProgress =
      muxer && features.progress
        ? (p: { phase: string; done: number; total: number }) => {
            const label =
              p.phase === 'compressing'
                ? 'Compressing objects'
                : p.phase === 'writing'
                  ? 'Writing objects'
                  : 'Counting objects';
            const percent = p.total > 0 ? Math.floor((100 * p.done) / p.total) : 0;
            if (percent === lastPercent && p.phase === lastPhase) return;
            lastPercent = percent;
            lastPhase = p.phase;
            progress.push(`${label}: ${String(percent).padStart(3)}% (${p.done}/${p.total})\r`);
          }
        : undefined;
    let objectCount = -1;
    const store = this.repo.objects;
    // a clone of wants whose objects were found to be exactly a stored pack's goes out as that
    // pack again without walking the history (see pack-reuse.ts)
    const reuseKey =
      this.common.length === 0 &&
      shallowBoundary.size === 0 &&
      this.filter === undefined &&
      (packOptions.deltas ?? true) &&
      hasStoredPacks(store)
        ? `${[...wants].sort().join(' ')}|${[...tags].sort().join(' ')}`
        : undefined;
    let reusedObjects: readonly ObjectId[] | undefined;
    // a clone: HEAD's commit, when wanted, goes first with its trees, so that a client can show
    // HEAD's tree while the rest of the pack comes (only an order: a HEAD that does not resolve
    // leaves the pack's own)
    const head = this.common.length === 0 ? await this.repo.refs.resolve('HEAD').catch(() => undefined) : undefined;
    const lead = head !== undefined && wanted.has(head) ? head : undefined;
    try {
      // side-band frames copy each chunk in before the next is asked for: a stored pack may come
      // in buffers its store reuses
      const borrow = muxer !== undefined;
      const reused = reuseKey
        ? await PACK_REUSE.stream(store, reuseKey, features.ofsDelta, this.signal, borrow)
        : undefined;
      const pack =
        reused ??
        createPack(
          store,
          {
            wants,
            haves: [...this.common],
            shallow: [...shallowBoundary],
            includeTags: tags.length > 0,
            tags,
            ...(this.filter ? { filter: this.filter } : {}),
          },
          {
            thin: features.thin,
            ofsDelta: features.ofsDelta,
            deltas: packOptions.deltas ?? true,
            ...(packOptions.window !== undefined ? { window: packOptions.window } : {}),
            ...(packOptions.depth !== undefined ? { depth: packOptions.depth } : {}),
            ...(this.signal ? { signal: this.signal } : {}),
            ...(onProgress ? { onProgress } : {}),
            ...(reuseKey ? { onStoredPack: (oids: readonly ObjectId[]) => (reusedObjects = oids) } : {}),
            ...(lead !== undefined ? { lead } : {}),
            borrow,
          },
        );
      for await (const chunk of pack) {
        if (objectCount < 0 && chunk.length >= 12) {
          objectCount = ((chunk[8]! << 24) | (chunk[9]! << 16) | (chunk[10]! << 8) | chunk[11]!) >>> 0;
        }
        while (muxer && progress.length > 0) await muxer.progress(progress.shift() as string);
        if (muxer) await muxer.data(chunk);
        else await write(chunk);
      }
      if (muxer && features.progress && objectCount >= 0) await muxer.progress(`Total ${objectCount}\n`);
      await muxer?.send();
      if (reuseKey && reusedObjects) PACK_REUSE.remember(store, reuseKey, reusedObjects);
    } catch (error) {
      if (muxer && !hasCode(error, 'PROTOCOL_ABORTED')) {
        await muxer.error(`upload-pack: ${peerErrorMessage(error)}\n`).catch(() => {});
      }
      throw error;
    }
    if (muxer) await write(FLUSH);
  }
}

function notOurRef(oid: ObjectId): ProtocolError {
  return new ProtocolError('PROTOCOL_NOT_OUR_REF', `upload-pack: not our ref ${oid}`, { data: { oid } });
}

const NAK: Acknowledgment = { kind: 'nak' };

function line(text: string): Uint8Array {
  return encodeText(`${text}\n`);
}

async function sendError(conn: Connection, error: unknown): Promise<void> {
  const message = hasCode(error, 'PROTOCOL_NOT_OUR_REF')
    ? peerErrorMessage(error)
    : `upload-pack: ${peerErrorMessage(error)}`;
  await conn.write(encodeText(`ERR ${message}\n`)).catch(() => {});
}

/**
 * Serves one upload-pack exchange over `conn`: the advertisement (stateful), the request,
 * negotiation and the pack. In stateless mode it answers exactly one round. Errors go to the
 * client as `ERR` lines (or side-band 3 once the pack started) and are rethrown.
 */
export async function serveUploadPack(
  repo: Repository,
  conn: Connection,
  options: UploadPackOptions = {},
): Promise<void> {
  try {
    if (options.protocol === 2) await serveV2(repo, conn, options);
    else await serveV0(repo, conn, options);
  } finally {
    await conn.end().catch(() => {});
  }
}

async function serveV0(repo: Repository, conn: Connection, options: UploadPackOptions): Promise<void> {
  const stateless = options.stateless === true;
  const session = new UploadSession(repo, options);
  const reader = newReader(conn.input, options.signal);
  if (!stateless && options.advertise !== false) {
    const { refs, symrefs, listed } = await collectRefs(repo.refs, session.graph);
    session.listed = listed;
    const caps = uploadPackCapabilities({
      stateless,
      agent: options.agent ?? DEFAULT_AGENT,
      symrefs,
      filter: filterAdvertised(options),
    });
    await conn.write(encodeAdvertisementV0(refs, caps, options.protocol === 1 ? { version: 1 } : {}));
  }
  // once the pack has started, errors travel on side-band 3 (sendPack), not as ERR lines
  let packStarted = false;
  try {
    const first = await reader.read();
    if (!first || first.kind === 'flush') return; // ls-remote, or nothing wanted
    let caps: Capabilities | undefined;
    const maxDepth = session.maxDepth;
    for (let packet: Packet = first; packet.kind !== 'flush'; packet = await requirePacket(reader, 'reading wants')) {
      const text = packetText(packet);
      if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${packet.kind} in want list`);
      const request = decodeWantListLine(text, { maxDepth });
      if (request.kind === 'want' && caps === undefined) caps = Capabilities.parse(request.capabilities ?? '');
      await session.take(request);
    }
    caps ??= new Capabilities();
    if (session.wants.length === 0) throw new ProtocolError('PROTOCOL_BAD_LINE', 'upload-pack: no wants');
    if (caps.has('deepen-relative') && session.deepen) session.deepen.relative = true;
    await session.validateWants();
    if (session.deepening) await conn.write(encodeShallowInfo(await session.processShallow(), 0));
    const multiAck = caps.has('multi_ack_detailed') ? 2 : caps.has('multi_ack') ? 1 : 0;
    const noDone = stateless && caps.has('no-done');
    const answer = (ack: Acknowledgment) => conn.write(encodeAcknowledgment(ack));
    let lastHex: ObjectId | undefined;
    let gotCommon = false;
    let gotOther = false;
    let sentReady = false;
    for (;;) {
      throwIfAborted(options.signal);
      const p = await reader.read();
      if (!p) {
        if (stateless) return; // the client will come back with a new POST
        throw new ProtocolError('PROTOCOL_UNEXPECTED_EOF', 'the remote end hung up during negotiation');
      }
      if (p.kind === 'flush') {
        if (multiAck === 2 && gotCommon && !gotOther && (await session.okToGiveUp())) {
          sentReady = true;
          await answer({ kind: 'ack', oid: lastHex as ObjectId, status: 'ready' });
        }
        if (session.common.length === 0 || multiAck) await answer(NAK);
        if (noDone && sentReady) {
          await answer({ kind: 'ack', oid: lastHex as ObjectId });
          break;
        }
        if (stateless) return;
        gotCommon = false;
        gotOther = false;
        continue;
      }
      const text = packetText(p);
      if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in negotiation`);
      const request = decodeUploadHavesLine(text);
      if (request.kind === 'have') {
        const oid = request.oid;
        if (await session.have(oid)) {
          gotCommon = true;
          lastHex = oid;
          if (multiAck === 2) await answer({ kind: 'ack', oid, status: 'common' });
          else if (multiAck === 1) await answer({ kind: 'ack', oid, status: 'continue' });
          else if (session.common.length === 1) await answer({ kind: 'ack', oid });
        } else {
          gotOther = true;
          if (multiAck && (await session.okToGiveUp())) {
            if (multiAck === 2) {
              sentReady = true;
              await answer({ kind: 'ack', oid, status: 'ready' });
            } else await answer({ kind: 'ack', oid, status: 'continue' });
          }
        }
        continue;
      }
      // done
      if (session.common.length > 0) {
        if (multiAck) await answer({ kind: 'ack', oid: lastHex as ObjectId });
      } else await answer(NAK);
      break;
    }
    packStarted = true;
    const sideband = caps.has('side-band-64k') ? 65515 : caps.has('side-band') ? 995 : 0;
    await session.sendPack(conn, {
      sideband,
      thin: caps.has('thin-pack'),
      ofsDelta: caps.has('ofs-delta'),
      includeTag: caps.has('include-tag'),
      progress: !caps.has('no-progress'),
    });
  } catch (error) {
    if (!packStarted && !hasCode(error, 'PROTOCOL_ABORTED')) await sendError(conn, error);
    throw error;
  }
}

async function serveV2(repo: Repository, conn: Connection, options: UploadPackOptions): Promise<void> {
  const stateless = options.stateless === true;
  const reader = newReader(conn.input, options.signal);
  if (!stateless && options.advertise !== false) {
    await conn.write(
      encodeCapabilitiesV2(
        v2Capabilities({ agent: options.agent ?? DEFAULT_AGENT, filter: filterAdvertised(options) }),
      ),
    );
  }
  // what this connection's last ls-refs listed: its fetches check wants against it
  let listed: readonly Ref[] | undefined;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      const request = await readCommandHead(reader);
      if (!request) return;
      if (request.command === 'ls-refs') listed = await lsRefs(repo, conn, request.args);
      else if (request.command === 'fetch') await fetchV2(repo, conn, request.args, options, listed);
      else if (request.command === 'object-info') await objectInfo(repo.objects, conn, request.args);
      else throw new ProtocolError('PROTOCOL_UNSUPPORTED', `unknown command ${JSON.stringify(request.command)}`);
      if (stateless) return;
    }
  } catch (error) {
    if (!hasCode(error, 'PROTOCOL_ABORTED') && !hasCode(error, PACK_STARTED)) await sendError(conn, error);
    throw hasCode(error, PACK_STARTED) ? (error as ProtocolError).cause : error;
  }
}

/** Past this many bytes of `ref-prefix` values, ls-refs lists every ref. */
const MAX_PREFIX_BYTES = 16 << 20;

/** Marks an error raised after the v2 packfile section started (already reported on band 3). */
const PACK_STARTED = 'PROTOCOL_PACK_STARTED';

/**
 * Answers one ls-refs; resolves to every ref it read (whatever the prefixes). Past git's limit on
 * `ref-prefix` lines the prefixes are dropped and every ref is listed, as git does; so they are
 * past a total of 16 MiB of prefixes (git holds them all; listing more than asked is allowed).
 */
async function lsRefs(repo: Repository, conn: Connection, args: AsyncIterable<string>): Promise<readonly Ref[]> {
  let symrefs = false;
  let peel = false;
  let unborn = false;
  const prefixes: string[] = [];
  let prefixLines = 0;
  let prefixBytes = 0;
  for await (const arg of args) {
    if (arg === 'symrefs') symrefs = true;
    else if (arg === 'peel') peel = true;
    else if (arg === 'unborn') unborn = true;
    else if (arg.startsWith('ref-prefix ')) {
      // once too many, the rest is only counted
      if (prefixLines < TOO_MANY_PREFIXES) {
        prefixBytes += arg.length - 11;
        prefixLines = prefixBytes > MAX_PREFIX_BYTES ? TOO_MANY_PREFIXES : prefixLines + 1;
        if (prefixLines < TOO_MANY_PREFIXES) prefixes.push(arg.slice(11));
        else prefixes.length = 0;
      }
    } else throw new ProtocolError('PROTOCOL_BAD_LINE', `ls-refs: unexpected argument ${JSON.stringify(arg)}`);
  }
  const graph = new CommitGraph(repo.objects);
  const collected = await collectRefs(repo.refs, graph, {
    peel,
    ...(prefixes.length > 0 ? { prefixes } : {}),
  });
  const headWanted = prefixes.length === 0 || prefixes.some((p) => 'HEAD'.startsWith(p));
  await conn.write(
    encodeLsRefs(collected.refs, {
      symrefs,
      peel,
      ...(unborn && headWanted && collected.unbornHead !== undefined ? { unbornHead: collected.unbornHead } : {}),
    }),
  );
  return collected.listed;
}

async function fetchV2(
  repo: Repository,
  conn: Connection,
  args: AsyncIterable<string>,
  options: UploadPackOptions,
  listed: readonly Ref[] | undefined,
): Promise<void> {
  const session = new UploadSession(repo, options);
  session.listed = listed;
  // each have is looked up as it arrives; only the common ones are kept (for the ACKs)
  const acks: ObjectId[] = [];
  let done = false;
  const features = { sideband: 65515, thin: false, ofsDelta: false, includeTag: false, progress: true };
  let waitForDone = false;
  const maxDepth = session.maxDepth;
  for await (const arg of args) {
    const request = decodeFetchArgument(arg, { maxDepth });
    if (request.kind === 'have') {
      if (await session.have(request.oid)) acks.push(request.oid);
    } else if (request.kind === 'done') done = true;
    else if (request.kind === 'capability') {
      if (request.name === 'thin-pack') features.thin = true;
      else if (request.name === 'ofs-delta') features.ofsDelta = true;
      else if (request.name === 'include-tag') features.includeTag = true;
      else if (request.name === 'no-progress') features.progress = false;
      else waitForDone = true;
    } else await session.take(request);
  }
  if (session.wants.length === 0) throw new ProtocolError('PROTOCOL_BAD_LINE', 'fetch: no wants');
  await session.validateWants();
  if (!done) {
    const ready = !waitForDone && (await session.okToGiveUp());
    await conn.write(encodeAcknowledgments({ acks, ready }));
    if (!ready) return;
  }
  if (session.deepening || session.clientShallow.size > 0) {
    await conn.write(encodeShallowInfo(await session.processShallow(), 2));
  }
  await conn.write(line('packfile'));
  try {
    await session.sendPack(conn, features);
  } catch (error) {
    throw new ProtocolError(PACK_STARTED, 'the pack failed after it started', { cause: error });
  }
}
