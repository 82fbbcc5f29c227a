/**
 * The fetch client (`lsRemote`, `fetch`, `clone`) over a Connection or smart HTTP, protocol v0/v1
 * or v2. fetch-pack.c is the model: wants (with capabilities on the first), shallow and deepen
 * lines, then rounds of haves chosen by the negotiator until the server is ready, the haves run
 * out or 256 haves in a row found nothing new; then the pack, side-banded, into the local object
 * store (thin packs completed), then the local refs, compare-and-swap.
 *
 * Stateless rounds (HTTP) repeat the wants, shallow/deepen lines and every have the server
 * acknowledged, as the server keeps no state between POSTs.
 */
import type { ImportOptions, ObjectId, PackLimits, PackSpool } from '@gitport/pack';
import { beginPack, importPack, spoolsPacks } from '@gitport/pack/internal/pack-import';
import { demuxSideband, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { ACKNOWLEDGMENTS_SECTION, decodeAcknowledgment, decodeAcknowledgments } from './acknowledgments.js';
import { type AdvertisedRef, DEFAULT_MAX_REFS, parseLsRefsLine } from './advertisement.js';
import { type Capabilities, DEFAULT_AGENT } from './capabilities.js';
import { encodeCommandRequest } from './command-request.js';
import { CommitGraph } from './commit-graph.js';
import { type Repository, requireLine, requirePacket } from './connection.js';
import { ProtocolError, throwIfAborted } from './errors.js';
import { checkFilterSpec } from './filter-spec.js';
import { INITIAL_FLUSH, MAX_IN_VAIN, Negotiator, nextFlush } from './negotiator.js';
import type { PreparedRefs, RefUpdate, RefUpdateResult, RefValue } from './ref-store.js';
import { matchRefspec, parseRefspec, type Refspec, refspecPrefix } from './refspec.js';
import { openSession, type Remote, remoteError, type ServiceSession, type SessionOpener } from './remote.js';
import { applyShallowInfo, decodeShallowInfo, SHALLOW_INFO_SECTION } from './shallow-info.js';
import {
  type DeepenRequest,
  encodeFetchArguments,
  encodeUploadHaves,
  encodeUploadRequestV0,
  type UploadRequest,
} from './upload-request.js';

export interface LsRemoteOptions {
  /** The version to ask for (HTTP: `Git-Protocol`); the server's answer decides. */
  protocol?: 0 | 1 | 2;
  /** v2: only refs under these prefixes (the server may send more). */
  prefixes?: string[];
  agent?: string;
  signal?: AbortSignal;
}

export interface LsRemoteResult {
  version: 0 | 1 | 2;
  refs: AdvertisedRef[];
  /** The remote HEAD's target, when it is symbolic. */
  head?: string;
  capabilities: Capabilities;
}

export interface FetchOptions {
  /** Default `+refs/heads/*:refs/remotes/origin/*`. */
  refspecs?: string[];
  /** `follow` (default): tags pointing into what was fetched; `all`; `none`. */
  tags?: 'follow' | 'all' | 'none';
  /** `--depth`: history depth from the fetched tips. */
  depth?: number;
  /** `--deepen`: deepen the current shallow boundary by this many commits. */
  deepen?: number;
  /** `--shallow-since`: seconds since the epoch. */
  since?: number;
  /** `--shallow-exclude`: refs (names) whose history is left out. */
  exclude?: string[];
  /** The local repository's shallow commits (its `.git/shallow`). */
  shallow?: ObjectId[];
  protocol?: 0 | 1 | 2;
  agent?: string;
  /** Ask for a thin pack (completed locally). Default true. */
  thin?: boolean;
  /** Default true: update local refs per the refspecs. */
  updateRefs?: boolean;
  maxInVain?: number;
  /**
   * With `protocol: 2`, `ls-refs` goes out before the capability advertisement is read, one
   * round trip less. On a stateful connection to a server known to answer v2 (gitport's host
   * when asked for v2) it travels with the connection's first bytes, and a server that answers
   * v0 fails the fetch (`PROTOCOL_UNEXPECTED`). Over smart HTTP it is POSTed beside the
   * discovery GET; a server that answers v0 (or refuses that request) gets the fetch the usual
   * way, the request sent ahead dropped.
   */
  pipelineLsRefs?: boolean;
  /**
   * Partial clone: a filter-spec as git's `--filter=<spec>` (`blob:none`, `blob:limit=1m`,
   * `tree:0`, `object:type=commit`, `combine:...`), checked before anything is sent (a bad one
   * is `PROTOCOL_BAD_FILTER`). A server that does not advertise `filter` gets the request
   * without it, as git does ("filtering not recognized by server, ignoring"): `onWarning` is
   * told, and the result's `filter` is undefined.
   */
  filter?: string;
  /** What git prints as `warning: ...` (a filter the server ignores). */
  onWarning?: (message: string) => void;
  limits?: PackLimits;
  signal?: AbortSignal;
  onProgress?: (text: string) => void;
  /** Told the remote's refs (and HEAD's target) as soon as they are listed, before any pack. */
  onRefs?: (refs: readonly AdvertisedRef[], head: string | undefined) => void;
  /**
   * Told of each object of the pack as soon as it is resolved, before the pack is indexed and
   * stored (importPack's `onObject`: `data` is lent until the callback returns).
   */
  onObject?: ImportOptions['onObject'];
}

export interface FetchResult {
  version: 0 | 1 | 2;
  /** The remote's refs (as advertised or listed). */
  refs: AdvertisedRef[];
  head?: string;
  wants: ObjectId[];
  /** Local ref updates (rejected ones say why). */
  updates: RefUpdateResult[];
  /** The received pack: its checksum, objects (thin bases appended locally included) and bytes. */
  pack?: { hash: string; objects: number; bytes: number };
  /** The local shallow list after this fetch (store it as `.git/shallow`). */
  shallow: ObjectId[];
  /** Negotiation figures: requests sent and haves offered. */
  rounds: number;
  haves: number;
  /** The filter-spec the server applied (undefined without one, or when it ignored it). */
  filter?: string;
}

/**
 * How the clients reach a remote and check filter-specs. `lsRemote`, `fetch`, `clone` and
 * `fetchObjects` open any remote (`openSession`) and check a filter-spec before anything is sent;
 * their `...With` forms open sessions with the opener given (a caller whose remotes are all of
 * one kind passes that kind's, and its bundle leaves the other out) and send a filter-spec as
 * given: the caller checked it (`checkFilterSpec`).
 */
interface Client {
  open: SessionOpener;
  check?: (spec: string) => unknown;
}

const ANY_REMOTE: Client = { open: openSession, check: checkFilterSpec };

/** Whether the server's advertisement says it honours `filter` (v0 capability, v2 fetch feature). */
function serverFilters(session: ServiceSession): boolean {
  const adv = session.advertisement;
  return adv.version === 2 ? adv.capabilities.features('fetch').has('filter') : adv.capabilities.has('filter');
}

/** A v2 command request with this client's capabilities. */
function v2Request(command: string, agent: string, args: string[]): Uint8Array {
  return encodeCommandRequest({ command, capabilities: [`agent=${agent}`, 'object-format=sha1'], args });
}

function lsRefsRequest(agent: string, prefixes: readonly string[] | undefined): Uint8Array {
  const args = ['symrefs', 'peel', 'unborn', ...(prefixes ?? []).map((p) => `ref-prefix ${p}`)];
  return v2Request('ls-refs', agent, args);
}

/** v2 `ls-refs`; `sent`: the request already went out with the connection's start. */
async function listRefsV2(
  session: ServiceSession,
  agent: string,
  prefixes: readonly string[] | undefined,
  sent = false,
): Promise<{ refs: AdvertisedRef[]; head?: string }> {
  const reader = await session.round(sent ? new Uint8Array(0) : lsRefsRequest(agent, prefixes));
  const refs: AdvertisedRef[] = [];
  let head: string | undefined;
  for (;;) {
    const p = await requirePacket(reader, 'reading ls-refs');
    if (p.kind === 'flush') break;
    if (refs.length >= DEFAULT_MAX_REFS)
      throw new ProtocolError('PROTOCOL_LIMIT', `more than ${DEFAULT_MAX_REFS} refs`);
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in ls-refs output`);
    const ref = parseLsRefsLine(text);
    if (ref.name === 'HEAD' && ref.target) head = ref.target;
    if (ref.unborn) continue;
    refs.push(ref);
  }
  return head === undefined ? { refs } : { refs, head };
}

async function remoteRefs(
  session: ServiceSession,
  agent: string,
  prefixes?: readonly string[],
  sent = false,
): Promise<{ refs: AdvertisedRef[]; head?: string }> {
  const adv = session.advertisement;
  if (adv.version === 2) return listRefsV2(session, agent, prefixes, sent);
  if (sent) {
    throw new ProtocolError(
      'PROTOCOL_UNEXPECTED',
      `ls-refs was sent ahead, but the server speaks protocol v${adv.version}`,
    );
  }
  const head = adv.symrefs.get('HEAD');
  return head === undefined ? { refs: adv.refs } : { refs: adv.refs, head };
}

/** Lists the remote's refs (`git ls-remote --symref`). */
export function lsRemote(remote: Remote, options: LsRemoteOptions = {}): Promise<LsRemoteResult> {
  return lsRemoteWith(openSession, remote, options);
}

/** `lsRemote` over the sessions `open` opens. */
export async function lsRemoteWith<R extends Remote>(
  open: SessionOpener<R>,
  remote: R,
  options: LsRemoteOptions = {},
): Promise<LsRemoteResult> {
  const agent = options.agent ?? DEFAULT_AGENT;
  // over smart HTTP a v2 ls-refs goes out beside the discovery GET (dropped if the server turns
  // out to speak v0); a connection's first bytes are sent only to a server known to speak v2
  const early =
    !('connection' in remote) && options.protocol === 2 ? lsRefsRequest(agent, options.prefixes) : undefined;
  const session = await open(remote, 'git-upload-pack', { ...options, ...(early ? { first: early } : {}) });
  try {
    const { refs, head } = await remoteRefs(session, agent, options.prefixes, session.firstSent);
    if (!session.stateless) await session.round(FLUSH).catch(() => undefined);
    const adv = session.advertisement;
    return { version: adv.version, refs, capabilities: adv.capabilities, ...(head ? { head } : {}) };
  } catch (error) {
    throw remoteError(error);
  } finally {
    await session.close().catch(() => {});
  }
}

interface Want {
  ref: AdvertisedRef;
  dst?: string;
  force: boolean;
}

/** Fetches from `remote` into `local` (objects, then refs). */
export function fetch(local: Repository, remote: Remote, options: FetchOptions = {}): Promise<FetchResult> {
  return fetchInto(ANY_REMOTE, local, remote, options, false);
}

/** `fetch` over the sessions `open` opens, the filter-spec (if any) sent as given. */
export function fetchWith<R extends Remote>(
  open: SessionOpener<R>,
  local: Repository,
  remote: R,
  options: FetchOptions = {},
): Promise<FetchResult> {
  return fetchInto({ open: open as SessionOpener }, local, remote, options, false);
}

/**
 * `fetch`; `initial`: `local` is a new repository (a clone): every tip is wanted without asking
 * the store, and the refs go in with the ref store's `prepareInitialize` (claimed while the pack
 * comes) or `initialize` when it has one (one write instead of one locked update per ref).
 */
async function fetchInto(
  client: Client,
  localIn: LocalRepository,
  remote: Remote,
  options: FetchOptions,
  initial: boolean,
): Promise<FetchResult> {
  const agent = options.agent ?? DEFAULT_AGENT;
  const { signal } = options;
  if (options.filter !== undefined) client.check?.(options.filter);
  const specs: Refspec[] = (options.refspecs ?? ['+refs/heads/*:refs/remotes/origin/*']).map(parseRefspec);
  const tagMode = options.tags ?? 'follow';
  if (tagMode === 'all') specs.push({ force: true, src: 'refs/tags/*', dst: 'refs/tags/*' });
  const prefixes = [...new Set([...specs.map(refspecPrefix), ...(tagMode === 'follow' ? ['refs/tags/'] : []), 'HEAD'])];
  const early =
    options.pipelineLsRefs && ('connection' in remote || options.protocol === 2)
      ? lsRefsRequest(agent, prefixes)
      : undefined;
  // the request goes out now; a repository at hand or being created is awaited meanwhile
  const opening = client.open(remote, 'git-upload-pack', { ...options, ...(early ? { first: early } : {}) });
  // a new repository made by a function: made only once the fetch request is on its way (its
  // file system may hold the thread while it writes the layout; meanwhile the remote prepares
  // the pack); it has nothing to negotiate from, so nothing needs it before
  const later = initial && typeof localIn === 'function' ? localIn : undefined;
  let local: Repository | undefined;
  try {
    if (later === undefined) local = await (typeof localIn === 'function' ? localIn() : localIn);
  } catch (error) {
    opening.then(
      (s) => s.close().catch(() => {}),
      () => {},
    );
    throw error;
  }
  const session = await opening;
  // the local tips the negotiation starts from, read while the remote lists its refs (a new
  // repository has none: a clone offers no haves, as git clone does)
  const localTips = initial || local === undefined ? Promise.resolve([]) : localTipsOf(local);
  localTips.catch(() => {});
  let prepared: Promise<PreparedRefs | undefined> | undefined;
  try {
    const { refs, head } = await remoteRefs(session, agent, prefixes, session.firstSent);
    options.onRefs?.(refs, head);
    const selected: Want[] = [];
    for (const ref of refs) {
      for (const spec of specs) {
        const m = matchRefspec(spec, ref.name);
        if (!m) continue;
        selected.push({ ref, force: spec.force, ...(m.dst !== undefined ? { dst: m.dst } : {}) });
        break;
      }
    }
    // a new repository's refs are claimed as soon as it exists, while the pack comes, and
    // appear once their objects are stored (the ref store's prepareInitialize); not with tags
    // followed (a shallow clone), whose objects may not come
    const prepare = (repository: Repository) => {
      if (initial && tagMode !== 'follow' && options.updateRefs !== false && repository.refs.prepareInitialize) {
        prepared = repository.refs.prepareInitialize(planRefs(selected, refs, tagMode));
        prepared.catch(() => {});
      }
    };
    const create = async (): Promise<Repository> => {
      if ('connection' in remote) remote.connection.flush?.();
      local = await (later as () => PromiseLike<Repository>)();
      prepare(local);
      return local;
    };
    if (local !== undefined) prepare(local);
    const deepening =
      options.depth !== undefined ||
      options.deepen !== undefined ||
      options.since !== undefined ||
      (options.exclude?.length ?? 0) > 0;
    // which advertised objects we have, each asked once and all at once (the store's lookups
    // may each touch the disk); a clone asks for every tip, as git clone does
    const present =
      initial || local === undefined
        ? new Set<ObjectId>()
        : await presentObjects(
            local,
            refs.filter((r) => r.name !== 'HEAD').map((r) => r.oid),
          );
    const wants: ObjectId[] = [];
    for (const w of selected) {
      if (wants.includes(w.ref.oid)) continue;
      if (!deepening && present.has(w.ref.oid)) continue;
      wants.push(w.ref.oid);
    }
    let shallow = new Set(options.shallow ?? []);
    const result: FetchResult = {
      version: session.advertisement.version,
      refs,
      wants,
      updates: [],
      shallow: [],
      rounds: 0,
      haves: 0,
      ...(head ? { head } : {}),
    };
    // the local history (a new repository has none to negotiate from)
    const graph = local && new CommitGraph(local.objects);
    if (wants.length > 0) {
      const exchange = new FetchExchange({
        session,
        local: local ?? create,
        graph,
        refs,
        wants,
        shallow,
        options,
        agent,
        present,
        tips: await localTips,
      });
      const outcome = await exchange.run();
      result.rounds = exchange.rounds;
      result.haves = exchange.havesSent;
      result.pack = outcome.pack;
      if (exchange.filter !== undefined) result.filter = exchange.filter;
      shallow = outcome.shallow;
    } else if (!session.stateless) {
      await session.round(FLUSH);
    }
    result.shallow = [...shallow];
    throwIfAborted(signal);
    // (a fetch that wanted nothing makes its new repository now)
    const filled = local ?? (await create());
    if (options.updateRefs !== false) {
      const commits = graph ?? new CommitGraph(filled.objects);
      result.updates = await updateLocalRefs(filled, commits, selected, refs, tagMode, initial, prepared);
    }
    return result;
  } catch (error) {
    // claimed refs of a fetch that failed are given up (after a commit, nothing to do)
    await prepared?.then((p) => p?.abort()).catch(() => {});
    throw remoteError(error);
  } finally {
    await session.close().catch(() => {});
  }
}

/**
 * The repository a fetch fills: one at hand, one being created, or a function that creates it.
 * A clone calls the function once its fetch request is on its way, so a file system that blocks
 * while it writes the new repository holds back no request, and the remote prepares the pack
 * meanwhile.
 */
export type LocalRepository = Repository | PromiseLike<Repository> | (() => PromiseLike<Repository>);

/**
 * `clone`: fetch every branch and tag into the same names, then point HEAD like the remote's.
 * `local` may be a repository still to be created (see LocalRepository).
 */
export function clone(localIn: LocalRepository, remote: Remote, options: CloneOptions = {}): Promise<FetchResult> {
  return cloneInto(ANY_REMOTE, localIn, remote, options);
}

/** `clone` over the sessions `open` opens, the filter-spec (if any) sent as given. */
export function cloneWith<R extends Remote>(
  open: SessionOpener<R>,
  localIn: LocalRepository,
  remote: R,
  options: CloneOptions = {},
): Promise<FetchResult> {
  return cloneInto({ open: open as SessionOpener }, localIn, remote, options);
}

type CloneOptions = Omit<FetchOptions, 'refspecs' | 'tags'> & { bare?: boolean };

async function cloneInto(
  client: Client,
  localIn: LocalRepository,
  remote: Remote,
  options: CloneOptions,
): Promise<FetchResult> {
  let created: Promise<Repository> | undefined;
  // HEAD as the new repository has it, read while the fetch runs (the refspecs never touch it)
  let localHead: Promise<RefValue> | undefined;
  const create = () => {
    created = Promise.resolve(typeof localIn === 'function' ? localIn() : localIn);
    localHead = created.then((local) => local.refs.read('HEAD'));
    localHead.catch(() => {});
    return created;
  };
  const result = await fetchInto(
    client,
    create,
    remote,
    {
      ...options,
      refspecs: ['+refs/heads/*:refs/heads/*'],
      tags: options.depth !== undefined ? 'follow' : 'all',
    },
    true,
  );
  const local = await created!;
  if (result.head) {
    const head = await localHead!;
    if (head.kind !== 'symbolic' || head.target !== result.head) await local.refs.setSymbolic('HEAD', result.head);
  }
  return result;
}

export interface FetchObjectsOptions
  extends Pick<FetchOptions, 'protocol' | 'agent' | 'filter' | 'limits' | 'signal' | 'onProgress' | 'onWarning'> {}

/**
 * Fetches objects by id, what git's lazy fetch of a partial clone does (promisor-remote.c runs
 * `git fetch --filter=blob:none --stdin` with the noop negotiator): `want <oid>` lines, no haves,
 * no refs listed or updated; a filter (git's lazy fetch sends `blob:none`, so a wanted tree does
 * not bring its blobs; wanted objects are sent whatever it says) goes when the server has it.
 * The pack goes into `local`'s store.
 */
export function fetchObjects(
  local: Repository,
  remote: Remote,
  oids: readonly ObjectId[],
  options: FetchObjectsOptions = {},
): Promise<FetchResult> {
  return fetchObjectsInto(ANY_REMOTE, local, remote, oids, options);
}

/** `fetchObjects` over the sessions `open` opens, the filter-spec (if any) sent as given. */
export function fetchObjectsWith<R extends Remote>(
  open: SessionOpener<R>,
  local: Repository,
  remote: R,
  oids: readonly ObjectId[],
  options: FetchObjectsOptions = {},
): Promise<FetchResult> {
  return fetchObjectsInto({ open: open as SessionOpener }, local, remote, oids, options);
}

async function fetchObjectsInto(
  client: Client,
  local: Repository,
  remote: Remote,
  oids: readonly ObjectId[],
  options: FetchObjectsOptions,
): Promise<FetchResult> {
  const agent = options.agent ?? DEFAULT_AGENT;
  if (options.filter !== undefined) client.check?.(options.filter);
  const wants = [...new Set(oids)];
  const session = await client.open(remote, 'git-upload-pack', options);
  try {
    const result: FetchResult = {
      version: session.advertisement.version,
      refs: [],
      wants,
      updates: [],
      shallow: [],
      rounds: 0,
      haves: 0,
    };
    if (wants.length === 0) {
      if (!session.stateless) await session.round(FLUSH);
      return result;
    }
    const exchange = new FetchExchange({
      session,
      local,
      graph: undefined,
      refs: [],
      wants,
      shallow: new Set(),
      options: { ...options, thin: false },
      agent,
      present: new Set(),
      tips: [],
    });
    const outcome = await exchange.run();
    result.rounds = exchange.rounds;
    result.pack = outcome.pack;
    if (exchange.filter !== undefined) result.filter = exchange.filter;
    return result;
  } catch (error) {
    throw remoteError(error);
  } finally {
    await session.close().catch(() => {});
  }
}

/** The ids among `oids` that the local store has (each looked up once, concurrently). */
async function presentObjects(local: Repository, oids: readonly ObjectId[]): Promise<Set<ObjectId>> {
  const unique = [...new Set(oids)];
  const found = await Promise.all(unique.map((oid) => local.objects.has(oid)));
  const present = new Set<ObjectId>();
  for (let i = 0; i < unique.length; i++) if (found[i]) present.add(unique[i]!);
  return present;
}

/** The local refs and HEAD: where the negotiator starts. */
async function localTipsOf(local: Repository): Promise<ObjectId[]> {
  const [list, head] = await Promise.all([local.refs.list(), local.refs.resolve('HEAD')]);
  const tips = list.map((r) => r.oid);
  if (head) tips.push(head);
  return tips;
}

/** A ref the fetch sets: a refspec's destination, or a followed tag (only created, never moved). */
interface PlannedRef {
  name: string;
  oid: ObjectId;
  force: boolean;
  followed: boolean;
}

/**
 * The refs a fetch sets: the refspecs' destinations, then (tag mode `follow`) the tags the remote
 * listed; the first of a name wins.
 */
function planRefs(
  selected: readonly Want[],
  refs: readonly AdvertisedRef[],
  tagMode: 'follow' | 'all' | 'none',
): PlannedRef[] {
  const planned: PlannedRef[] = [];
  const names = new Set<string>();
  const plan = (name: string, oid: ObjectId, force: boolean, followed: boolean) => {
    if (names.has(name)) return;
    names.add(name);
    planned.push({ name, oid, force, followed });
  };
  for (const w of selected) if (w.dst) plan(w.dst, w.ref.oid, w.force, false);
  if (tagMode === 'follow') {
    for (const ref of refs) {
      if (ref.name.startsWith('refs/tags/') && !ref.name.endsWith('^{}')) plan(ref.name, ref.oid, false, true);
    }
  }
  return planned;
}

/**
 * Sets the local refs after a fetch (see planRefs): a followed tag whose object did not come is
 * left out, any other ref whose object did not come is refused; a non-forced update must
 * fast-forward. On a new repository (`initial`) whose ref store has `initialize`, the refs go in
 * with one `initialize` (git writes a clone's refs into packed-refs at once), or `prepared` (its
 * `prepareInitialize`, claimed while the pack came) is committed when every object came; when
 * the store already holds refs it refuses, and the refs are checked against what is there and
 * updated like any fetch's.
 */
async function updateLocalRefs(
  local: Repository,
  graph: CommitGraph,
  selected: readonly Want[],
  refs: readonly AdvertisedRef[],
  tagMode: 'follow' | 'all' | 'none',
  initial: boolean,
  prepared?: Promise<PreparedRefs | undefined>,
): Promise<RefUpdateResult[]> {
  const planned = planRefs(selected, refs, tagMode);
  const present = await presentObjects(
    local,
    planned.map((p) => p.oid),
  );
  if (prepared) {
    const ready = await prepared;
    // refused: the store holds refs (or a name is not one it takes): a fetch's way, ref by ref
    if (!ready) return updateLocalRefs(local, graph, selected, refs, tagMode, false);
    if (planned.every((p) => present.has(p.oid))) {
      if (await ready.commit()) return planned.map((p) => ({ name: p.name, status: 'ok', old: null, new: p.oid }));
      // refs were written meanwhile: checked and updated like any fetch's
      return updateLocalRefs(local, graph, selected, refs, tagMode, false);
    }
    await ready.abort();
  }
  const initialize = initial ? local.refs.initialize?.bind(local.refs) : undefined;
  // one result per planned ref that is not skipped, in plan order
  const results: (RefUpdateResult | undefined)[] = [];
  const updates: RefUpdate[] = [];
  const slots: number[] = [];
  for (const p of planned) {
    // a new repository holds no refs: nothing to read (initialize refuses if it does)
    const current = initialize ? undefined : await local.refs.read(p.name);
    if (p.followed && current !== undefined && current.kind !== 'missing') continue;
    const old = current?.kind === 'direct' ? current.oid : null;
    if (old === p.oid) continue;
    if (!present.has(p.oid)) {
      if (!p.followed) {
        results.push({
          name: p.name,
          status: 'rejected',
          reason: 'stale',
          message: `object ${p.oid} was not received`,
        });
      }
      continue;
    }
    if (old !== null && !p.force && !(await graph.reachableFrom([old], [p.oid])).has(old)) {
      results.push({ name: p.name, status: 'rejected', reason: 'stale', message: 'non-fast-forward' });
      continue;
    }
    slots.push(results.length);
    results.push(undefined);
    updates.push({ name: p.name, old, new: p.oid });
  }
  let applied: RefUpdateResult[];
  if (initialize) {
    if (!(await initialize(updates.map((u) => ({ name: u.name, oid: u.new as ObjectId }))))) {
      return updateLocalRefs(local, graph, selected, refs, tagMode, false);
    }
    applied = updates.map((u) => ({ name: u.name, status: 'ok', old: null, new: u.new }));
  } else {
    applied = updates.length > 0 ? await local.refs.update(updates) : [];
  }
  slots.forEach((slot, i) => {
    results[slot] = applied[i];
  });
  return results as RefUpdateResult[];
}

/** What one fetch exchange starts from. */
interface FetchPlan {
  session: ServiceSession;
  /** The repository, or the function that makes a new one once the last request is written. */
  local: Repository | (() => Promise<Repository>);
  /** The local history the haves come from; none for a new repository (no haves). */
  graph: CommitGraph | undefined;
  /** The remote's refs. */
  refs: readonly AdvertisedRef[];
  wants: readonly ObjectId[];
  /** The local shallow list. */
  shallow: ReadonlySet<ObjectId>;
  options: FetchOptions;
  agent: string;
  /** The advertised ids the local store has. */
  present: ReadonlySet<ObjectId>;
  /** The local tips (where the negotiator starts). */
  tips: readonly ObjectId[];
}

/** One fetch negotiation and pack transfer (v0/v1 or v2, stateful or stateless). */
class FetchExchange {
  rounds = 0;
  havesSent = 0;
  /** The filter-spec sent (none when the server does not advertise `filter`). */
  readonly filter: string | undefined;
  readonly #v2: boolean;
  readonly #caps: string[] = [];
  readonly #common: ObjectId[] = [];
  readonly #commonSet = new Set<ObjectId>();
  /** Every have sent so far. */
  readonly #offered = new Set<ObjectId>();
  /** None when there is nothing local to negotiate from (a new repository). */
  readonly #negotiator: Negotiator | undefined;
  /** The repository the pack goes into, once it exists (see `local`). */
  #local: Repository | undefined;
  /** The shallow list we send (unchanged during the exchange). */
  readonly #shallow: Set<ObjectId>;
  /** The shallow list after the server's shallow/unshallow lines. */
  #shallowAfter: Set<ObjectId>;
  readonly #deepening: boolean;
  /** The deepen lines of every request (when deepening). */
  #deepen: DeepenRequest | undefined;
  readonly #plan: FetchPlan;

  constructor(plan: FetchPlan) {
    const { session, local, graph, shallow, options } = plan;
    this.#plan = plan;
    this.#v2 = session.advertisement.version === 2;
    this.#negotiator = graph && new Negotiator(graph);
    if (typeof local !== 'function') this.#local = local;
    this.#shallow = new Set(shallow);
    this.#shallowAfter = new Set(shallow);
    this.#deepening =
      options.depth !== undefined ||
      options.deepen !== undefined ||
      options.since !== undefined ||
      (options.exclude?.length ?? 0) > 0;
    const server = session.advertisement.capabilities;
    if (options.filter !== undefined && !serverFilters(session)) {
      options.onWarning?.('filtering not recognized by server, ignoring');
      this.filter = undefined;
    } else this.filter = options.filter;
    const wanted = (name: string) => {
      if (this.#v2 || server.has(name)) this.#caps.push(name);
    };
    if (this.#v2) {
      const fetchFeatures = server.features('fetch');
      if (this.#deepening && !fetchFeatures.has('shallow')) {
        throw new ProtocolError('PROTOCOL_UNSUPPORTED', 'the server does not support shallow fetches');
      }
      if (options.thin !== false) this.#caps.push('thin-pack');
      this.#caps.push('ofs-delta', 'include-tag');
      if (!options.onProgress) this.#caps.push('no-progress');
    } else {
      if (server.has('multi_ack_detailed')) this.#caps.push('multi_ack_detailed');
      else if (server.has('multi_ack')) this.#caps.push('multi_ack');
      if (session.stateless && server.has('no-done')) this.#caps.push('no-done');
      if (server.has('side-band-64k')) this.#caps.push('side-band-64k');
      else if (server.has('side-band')) this.#caps.push('side-band');
      if (options.thin !== false) wanted('thin-pack');
      wanted('ofs-delta');
      if (this.#deepening) {
        if (!server.has('shallow'))
          throw new ProtocolError('PROTOCOL_UNSUPPORTED', 'the server does not support shallow fetches');
        this.#caps.push('shallow');
        if (options.since !== undefined) wanted('deepen-since');
        if (options.exclude?.length) wanted('deepen-not');
        if (options.deepen !== undefined) wanted('deepen-relative');
      }
      if (!this.#deepening && this.#shallow.size > 0) wanted('shallow');
      if (this.filter !== undefined) this.#caps.push('filter');
      if (!options.onProgress) wanted('no-progress');
      wanted('include-tag');
      this.#caps.push(`agent=${plan.agent}`);
    }
    if (this.#deepening) {
      const depth = options.deepen ?? options.depth;
      this.#deepen = {
        ...(depth !== undefined ? { depth } : {}),
        ...(options.since !== undefined ? { since: options.since } : {}),
        not: options.exclude ?? [],
        // v0 says it as a capability, when the server has it; v2 as an argument
        relative: options.deepen !== undefined && (this.#v2 || this.#caps.includes('deepen-relative')),
      };
    }
  }

  get #multiAck(): number {
    return this.#caps.includes('multi_ack_detailed') ? 2 : this.#caps.includes('multi_ack') ? 1 : 0;
  }

  /** The request of one round: what we want, and the haves given (with `done`). */
  #request(haves: ObjectId[], done: boolean): UploadRequest {
    return {
      wants: [...this.#plan.wants],
      capabilities: this.#caps,
      shallow: [...this.#shallow],
      ...(this.#deepen ? { deepen: this.#deepen } : {}),
      ...(this.filter !== undefined ? { filter: this.filter } : {}),
      haves,
      done,
    };
  }

  async run(): Promise<{ pack?: { hash: string; objects: number; bytes: number }; shallow: Set<ObjectId> }> {
    const { signal } = this.#plan.options;
    for (const ref of this.#plan.refs) {
      if (ref.name === 'HEAD') continue;
      if (this.#plan.present.has(ref.oid)) await this.#negotiator?.knownCommon(ref.oid);
    }
    for (const tip of this.#plan.tips) await this.#negotiator?.addTip(tip);

    const stateless = this.#plan.session.stateless;
    const maxInVain = this.#plan.options.maxInVain ?? MAX_IN_VAIN;
    // fetch-pack.c: `flush_at` is a threshold on the running count of haves
    let flushAt = INITIAL_FLUSH;
    let inVain = 0;
    let gotContinue = false;
    let reader: PacketReader | undefined;
    let packFollows = false;
    if (!this.#v2 && !stateless) {
      // stateful v0: the want list goes once; a deepen request is answered right away
      const r = await this.#plan.session.round(encodeUploadRequestV0(this.#request([], false)));
      if (this.#deepening) await this.#readShallowSection(r);
    }
    // stateful v0 keeps one round "ahead" of the server, as fetch-pack.c does: the second batch
    // goes out before the answer to the first is read
    const pipelined = !this.#v2 && !stateless;
    const inFlight: number[] = [];
    for (;;) {
      throwIfAborted(signal);
      const batch: ObjectId[] = [];
      while (this.havesSent + batch.length < flushAt) {
        const oid = await this.#negotiator?.next();
        if (!oid) break;
        batch.push(oid);
      }
      const exhausted = this.havesSent + batch.length < flushAt;
      if (batch.length === 0) break;
      this.havesSent += batch.length;
      for (const oid of batch) this.#offered.add(oid);
      let outcome: { reader: PacketReader; acked: boolean; ready: boolean; packFollows: boolean };
      if (pipelined) {
        reader = await this.#sendHaves(batch, false);
        this.rounds++;
        inFlight.push(batch.length);
        if (inFlight.length === 1 && !exhausted) {
          flushAt = nextFlush(false, this.havesSent);
          continue;
        }
        outcome = await this.#readAcksV0(reader, false, false);
        inVain += inFlight.shift() as number;
      } else {
        outcome = await this.#round(batch, false);
        inVain += batch.length;
      }
      reader = outcome.reader;
      if (outcome.acked) {
        inVain = 0;
        gotContinue = true;
      }
      if (outcome.packFollows) {
        packFollows = true;
        break;
      }
      if (outcome.ready) break;
      if (gotContinue && inVain >= maxInVain) break;
      if (exhausted) break;
      flushAt = nextFlush(stateless || this.#v2, this.havesSent);
    }
    // the pack comes next: its temporary file is opened while the request goes out and the
    // answer comes back (given to importPack, which owns it from then; aborted if never given)
    const early: { spool: Promise<PackSpool | undefined> | undefined; taken: boolean } = {
      spool: this.#local && this.#beginPack(this.#local),
      taken: false,
    };
    try {
      return { ...(await this.#finish(reader, packFollows, pipelined, inFlight, early)), shallow: this.#shallowAfter };
    } catch (error) {
      // the temporary file is gone before the failure is reported
      if (!early.taken) await early.spool?.then((s) => s?.abort()).catch(() => {});
      throw error;
    }
  }

  /** Makes the new repository the pack goes into, and opens the pack's file there. */
  async #create(early: { spool: Promise<PackSpool | undefined> | undefined }): Promise<Repository> {
    const local = await (this.#plan.local as () => Promise<Repository>)();
    this.#local = local;
    early.spool = this.#beginPack(local);
    return local;
  }

  #beginPack(local: Repository): Promise<PackSpool | undefined> | undefined {
    const objects = local.objects;
    const spool = spoolsPacks(objects) ? beginPack(objects) : undefined;
    spool?.catch(() => {});
    return spool;
  }

  /** The rounds still to go once negotiation is over (`done`), then the pack. */
  async #finish(
    readerIn: PacketReader | undefined,
    packFollows: boolean,
    pipelined: boolean,
    inFlight: number[],
    early: { spool: Promise<PackSpool | undefined> | undefined; taken: boolean },
  ): Promise<{ pack: { hash: string; objects: number; bytes: number } }> {
    let reader = readerIn;
    if (!packFollows) {
      if (pipelined) {
        reader = await this.#sendHaves([], true);
        this.rounds++;
        // answers to the rounds still in flight, then the one to `done`
        while (inFlight.length > 0) {
          await this.#readAcksV0(reader, false, false);
          inFlight.shift();
        }
        reader = (await this.#readAcksV0(reader, true, false)).reader;
      } else {
        const answer = this.#round([], true);
        if (this.#local === undefined) {
          // the last request is on its way: the new repository (and the pack's file) is made
          // while the remote prepares the pack, not after its answer began
          answer.catch(() => {});
          await this.#create(early);
        }
        reader = (await answer).reader;
      }
    }
    const local = this.#local ?? (await this.#create(early));
    return this.#receivePack(local, reader as PacketReader, early);
  }

  /** Sends one round; reads its acknowledgments. */
  async #round(
    haves: readonly ObjectId[],
    done: boolean,
  ): Promise<{ reader: PacketReader; acked: boolean; ready: boolean; packFollows: boolean }> {
    this.rounds++;
    const stateless = this.#plan.session.stateless;
    if (this.#v2) {
      const args = encodeFetchArguments(this.#request([...this.#common, ...haves], done));
      const reader = await this.#plan.session.round(v2Request('fetch', this.#plan.agent, args));
      if (done) return { reader, acked: false, ready: false, packFollows: true };
      const header = await requireLine(reader, 'reading the fetch response');
      if (header !== ACKNOWLEDGMENTS_SECTION) {
        throw new ProtocolError('PROTOCOL_UNEXPECTED', `expected acknowledgments, got ${JSON.stringify(header)}`);
      }
      const { acks, ready } = await decodeAcknowledgments(reader, { maxAcks: this.#common.length + haves.length });
      for (const oid of acks) await this.#ack(oid);
      return { reader, acked: acks.length > 0, ready, packFollows: ready };
    }
    if (stateless) {
      const body = encodeUploadRequestV0(this.#request([...this.#common, ...haves], done));
      const reader = await this.#plan.session.round(body);
      if (this.#deepening) await this.#readShallowSection(reader);
      return this.#readAcksV0(reader, done, true);
    }
    const reader = await this.#sendHaves(haves, done);
    return this.#readAcksV0(reader, done, false);
  }

  /** Stateful v0: writes one round of haves (and `done`) without reading the answer. */
  async #sendHaves(haves: readonly ObjectId[], done: boolean): Promise<PacketReader> {
    return this.#plan.session.round(encodeUploadHaves(haves, done));
  }

  async #ack(oid: ObjectId): Promise<void> {
    // only what we offered can be acknowledged; anything else is a broken (or hostile) server
    if (!this.#offered.has(oid)) {
      throw new ProtocolError('PROTOCOL_BAD_LINE', `the server acknowledged ${oid}, which was never offered`);
    }
    if (this.#commonSet.has(oid)) return;
    this.#commonSet.add(oid);
    this.#common.push(oid);
    await this.#negotiator?.ack(oid);
  }

  /** v0 acknowledgments of one round: ACK lines up to NAK (or the final ACK after done). */
  async #readAcksV0(
    reader: PacketReader,
    done: boolean,
    stateless: boolean,
  ): Promise<{ reader: PacketReader; acked: boolean; ready: boolean; packFollows: boolean }> {
    let acked = false;
    let ready = false;
    const multiAck = this.#multiAck;
    const noDone = stateless && this.#caps.includes('no-done');
    for (;;) {
      const answer = decodeAcknowledgment(await requireLine(reader, 'reading acknowledgments'));
      if (answer.kind === 'nak') {
        if (done) return { reader, acked, ready, packFollows: true };
        if (ready && noDone) {
          // the server goes on with `ACK <oid>` and the pack
          const last = decodeAcknowledgment(await requireLine(reader, 'reading the final ACK'));
          if (last.kind !== 'ack') throw new ProtocolError('PROTOCOL_BAD_LINE', 'expected ACK, got NAK');
          return { reader, acked, ready, packFollows: true };
        }
        return { reader, acked, ready, packFollows: false };
      }
      await this.#ack(answer.oid);
      if (answer.status === undefined) {
        // a plain ACK: after done (or without multi_ack) the pack follows
        if (done || multiAck === 0) return { reader, acked: true, ready: true, packFollows: done };
        continue;
      }
      acked = true;
      if (answer.status === 'ready') ready = true;
    }
  }

  /** `shallow <id>` / `unshallow <id>` lines up to the flush (v0) or delim (v2). */
  async #readShallowSection(reader: PacketReader): Promise<void> {
    // every stateless response repeats the whole answer: start from what we sent
    this.#shallowAfter = applyShallowInfo(this.#shallow, await decodeShallowInfo(reader));
  }

  async #receivePack(
    local: Repository,
    reader: PacketReader,
    early: { spool: Promise<PackSpool | undefined> | undefined; taken: boolean },
  ): Promise<{ pack: { hash: string; objects: number; bytes: number } }> {
    const { signal, onProgress } = this.#plan.options;
    let sideband: boolean;
    if (this.#v2) {
      for (;;) {
        const section = await requireLine(reader, 'reading the fetch response');
        if (section === 'packfile') break;
        if (section === SHALLOW_INFO_SECTION) await this.#readShallowSection(reader);
        else if (section === 'wanted-refs') {
          for (;;) {
            const p = await requirePacket(reader, 'reading wanted-refs');
            if (p.kind === 'delim') break;
          }
        } else throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected section ${JSON.stringify(section)}`);
      }
      sideband = true;
    } else {
      sideband = this.#caps.includes('side-band-64k') || this.#caps.includes('side-band');
    }
    const stream = sideband
      ? demuxSideband(reader, { ...(onProgress ? { onProgress } : {}), ...(signal ? { signal } : {}) })
      : reader.rest();
    let bytes = 0;
    const counted = (async function* () {
      for await (const chunk of stream) {
        bytes += chunk.length;
        yield chunk;
      }
    })();
    early.taken = true;
    const imported = await importPack(local.objects, counted, {
      fixThin: true,
      ...(early.spool ? { spool: early.spool } : {}),
      ...(this.#plan.options.limits ? { limits: this.#plan.options.limits } : {}),
      ...(this.#plan.options.onObject ? { onObject: this.#plan.options.onObject } : {}),
      ...(signal ? { signal } : {}),
    });
    return { pack: { hash: imported.hash, objects: imported.count, bytes } };
  }
}
