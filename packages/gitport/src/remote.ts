/**
 * The client side: a repository hosted on another bus peer, reached with the stateful protocol
 * over one transport stream per operation (the stream starts with the daemon-style request line
 * of host.ts, then speaks upload-pack or receive-pack exactly as git does over git:// or ssh).
 *
 *   const origin = remote(bus, 'editor-worker', 'notes');
 *   await origin.lsRefs();
 *   const repo = await origin.clone(fs, '/notes', { onProgress });
 *   await origin.push(repo, { refspecs: ['refs/heads/main:refs/heads/main'] });
 *   await origin.fetch(repo);
 *
 * A shallow clone or fetch (`depth`, `since`, `exclude`, `deepen`) keeps its boundary in
 * `<gitDir>/shallow`, as git does, and later fetches send it.
 *
 * Errors: every call rejects with a GitportError (`isGitportError`): `PEER_NOT_FOUND` when no
 * peer of that id is on the bus, `REPO_NOT_FOUND` when the host has no such repository,
 * `REMOTE_ERROR` for anything else the remote refused, `PUSH_REJECTED` when a push moved not
 * every ref (the report is the error's `data`, unless `report: true` asks for it as the result),
 * `PUSH_NOTHING` for a push with nothing to push, `ABORTED`; errors of the layers below keep
 * their code and are the `cause`.
 *
 * A non-bare clone is what `git clone` makes: the default branch checked out (gitport's own
 * checkout, no Buffer needed) with its index, `remote.origin.url`/`fetch`, the branch's
 * `branch.<name>.remote`/`merge`, the remote's branches as `refs/remotes/origin/*` and
 * `refs/remotes/origin/HEAD`. A bare clone has every branch under `refs/heads/` and
 * `remote.origin.url`, as `git clone --bare` does. The URL is the one isomorphic-git's `http`
 * plugin (`httpClient(bus)`) reaches the same repository with: `http://<peer>.gitport/<name>.git`
 * (or `url`). A push then records what it moved under `refs/remotes/origin/`, as git push does.
 *
 * Every operation takes an AbortSignal: aborting fails the stream, the host sees
 * TRANSPORT_ABORTED and moves no ref (receive-pack applies ref updates only after the whole pack
 * is stored). Progress: `onProgress` gets the remote's progress text (side-band 2) and, for
 * clones, phase events.
 *
 * Memory: what a clone or fetch keeps lives in typed arrays (the import's tables, its base cache,
 * the chunks in flight), while V8 grows a thread's young generation to several MB as the
 * modules load and the import runs. A Node worker thread that mostly clones and fetches keeps
 * nearer its working set with `new Worker(url, { resourceLimits: { maxYoungGenerationSizeMb: 4
 * } })`; not less: V8 splits the young generation in three, and a semi-space smaller than the
 * receive window (FETCH_WINDOW, 512 KiB) holds the chunks in flight past two scavenges, so they
 * move to the old generation and wait there for a full collection, which costs more than the
 * smaller young generation saves. (host.ts gives the advice for a thread that hosts.)
 */
import type { Bus } from '@gitport/bus';
import type {
  FetchOptions,
  FetchResult,
  GitService,
  LsRemoteOptions,
  LsRemoteResult,
  PushOptions,
  PushResult,
  Remote,
  Repository,
  SessionOpener,
} from '@gitport/protocol';
import { checkFilterSpec } from '@gitport/protocol/internal/filter-spec';
import { openConnectionSession, openHttpSession } from '@gitport/protocol/internal/remote';
import { type DuplexStream, open } from '@gitport/transport';
// the protocol's clients (Node loads them on their first call: fetch-client.node.ts)
import { cloneWith, fetchObjectsWith, fetchWith, lsRemoteWith } from '#fetch-client';
import { push as pushFrom } from '#push-client';
import { checkoutCommit } from './checkout.js';
import { GitportError, isGitportError, toGitportError } from './errors.js';
import { type FsLike, type FsPromisesLike, type GitFs, joinPath } from './fs.js';
import { encodeGitRequest, GIT_STREAM } from './git-request.js';
import { finishedView, type HeadView, type HeadViewCollector, headViewCollector } from './head-view.js';
import { type HttpRemoteOptions, smartHttpClient } from './http-remote.js';
import {
  checkFilter,
  type FetchFilterPlan,
  markPromisorPack,
  planFetchFilter,
  registerPromisor,
  withPromisor,
} from './partial-clone.js';
import { PromisorObjectStore } from './promisor.js';
import { type GitRepository, type InitOptions, initRepositoryEarly } from './repository.js';

export interface ProgressEvent {
  /**
   * `remote`: a line of the remote's progress output (side-band 2); `transfer`: bytes received
   * from the host so far (`loaded`); the others are this side's phases.
   */
  phase: 'connect' | 'transfer' | 'remote' | 'checkout' | 'done';
  message: string;
  /** Bytes received so far (`transfer`). */
  loaded?: number;
}

export interface OperationOptions {
  signal?: AbortSignal;
  onProgress?: (event: ProgressEvent) => void;
  /** Use protocol v2 for upload-pack (default true). */
  protocolV2?: boolean;
}

export type RemoteFetchOptions = Omit<FetchOptions, 'signal' | 'onProgress' | 'protocol'> & OperationOptions;
export type RemotePushOptions = Omit<PushOptions, 'signal' | 'onProgress'> &
  OperationOptions & {
    /**
     * Resolve with the per-ref report even when refs were rejected (check `ok`). By default a
     * push that did not move every ref rejects with `PUSH_REJECTED` (the report is its `data`).
     */
    report?: boolean;
  };

/** `fetchObjects`: which objects, and the filter of what they reach (default `blob:none`, as git's lazy fetch). */
export type FetchObjectsOptions = OperationOptions & { filter?: string | false };

export interface CloneOptions extends Omit<RemoteFetchOptions, 'refspecs' | 'tags'> {
  /** Default true. A non-bare clone checks out HEAD's tree and sets up `origin` as git does. */
  bare?: boolean;
  objects?: InitOptions['objects'];
  /** `remote.origin.url` in the clone's config; default the remote's `url`. */
  url?: string;
  /**
   * The clone's first view (head-view.ts): called once with HEAD's commit and every tree under
   * it, as soon as the pack has brought them, while the clone goes on (`early: true`; the clone
   * still checks, indexes and stores the pack, and writes refs and config), so that
   * `listFiles(view, 'HEAD')` shows HEAD's files before the clone resolves. When the pack does
   * not bring them early (a `tree:0` filter), or for a remote of `busRemote`/`httpRemote`, the
   * finished clone is the view (`early: false`), handed over just before the clone resolves
   * (its `paths` listed then, fetching a partial clone's missing trees). Not called for a remote
   * without a HEAD. What it throws is reported as an uncaught error; the clone goes on. A clone
   * that fails after an early view still fails (and leaves nothing behind).
   */
  onHeadView?: (view: HeadView) => void;
}

/**
 * What `busRemote` and `httpRemote` return: listing, fetching and cloning, without partial clone
 * and without push (push to them with `push(remote, local, options)`), so that an app that only
 * clones and fetches does not carry the code that packs, pushes and fetches lazily.
 */
export interface FetchRemote {
  /** The URL a clone records as `remote.origin.url` (an HTTP remote's without credentials). */
  readonly url: string;
  lsRefs(options?: Omit<LsRemoteOptions, 'signal' | 'protocol'> & OperationOptions): Promise<LsRemoteResult>;
  fetch(local: Repository, options?: RemoteFetchOptions): Promise<FetchResult>;
  /** Creates a repository at `dir` (bare unless told) and fetches every branch and tag into it. */
  clone(fs: FsLike | FsPromisesLike | GitFs, dir: string, options?: CloneOptions): Promise<GitRepository>;
}

/**
 * What every remote of `remote(...)` does, over the bus or over HTTP: fetch and clone with partial
 * clone (`filter`), fetchObjects and push.
 */
export interface RemoteOperations extends FetchRemote {
  /**
   * Fetches objects by id into `local` (git's lazy fetch of a partial clone: `want` lines, no
   * haves, no refs moved); the pack is marked `.promisor`.
   */
  fetchObjects(local: Repository, oids: readonly string[], options?: FetchObjectsOptions): Promise<FetchResult>;
  /**
   * Pushes `refspecs`/`updates`; rejects with `PUSH_REJECTED` unless every ref is ok or up to
   * date (or `report: true`), and with `PUSH_NOTHING` when there is nothing to push.
   */
  push(local: Repository, options: RemotePushOptions): Promise<PushResult>;
}

/** A repository on a bus peer, without partial clone and push (`busRemote`). */
export interface BusRemote extends FetchRemote {
  readonly peer: string;
  readonly name: string;
}

/** A repository on a bus peer. */
export interface GitRemote extends RemoteOperations {
  readonly peer: string;
  readonly name: string;
}

/** A repository served over smart HTTP. */
export type HttpGitRemote = RemoteOperations;

export interface RemoteOptions {
  /**
   * The URL local repositories know this remote by: a clone writes it as `remote.origin.url`
   * (unless the clone's own `url` says otherwise), and a push updates the remote-tracking refs
   * of the configured remote with this URL. Default `http://<peer>.gitport/<name>.git`, the
   * URL isomorphic-git reaches the same repository with through `httpClient(bus)`.
   */
  url?: string;
  /**
   * The transport receive window of each stream (bytes). Default: 512 KiB for fetches and
   * clones (the host then sends 128 KiB at a time), the transport's default for pushes.
   */
  window?: number;
}

/**
 * A fetch's receive window: what the host may send ahead of the pack's import. Every buffer in
 * flight is one the reading thread's young generation holds across its scavenges while it
 * waits its turn: the longer a chunk waits, the likelier it outlives two scavenges, moves to the
 * old generation and stays there, read and dead, until a full collection (which a thread whose
 * heap hardly grows seldom has), so a larger window costs several times its size in private
 * memory. A clone goes no faster with more: the import, not the host, sets the pace, and half a
 * MiB keeps the host's writes ahead of it (a quarter costs more CPU in messages per byte).
 */
const FETCH_WINDOW = 2 ** 19;

/**
 * Runs `fn` against the remote's service for one operation: over a fresh bus stream, or over
 * smart HTTP. `fn` is given the opener of that kind of session only (so that a bundle with
 * remotes of one kind leaves the other's code out).
 */
type SessionRunner = <T>(
  service: GitService,
  options: OperationOptions,
  fn: (remote: Remote, signal: AbortSignal | undefined, open: SessionOpener) => Promise<T>,
) => Promise<T>;

/** A repository served over smart HTTP (`http(s)://host/path/name.git`): the gateway, git http-backend, any git host. */
export function remote(url: string, options?: HttpRemoteOptions): HttpGitRemote;
/** A repository named `name` hosted by the bus peer `peer`. */
export function remote(bus: Bus, peer: string, name: string, remoteOptions?: RemoteOptions): GitRemote;
export function remote(
  target: Bus | string,
  peerOrOptions?: string | HttpRemoteOptions,
  name?: string,
  remoteOptions: RemoteOptions = {},
): GitRemote | HttpGitRemote {
  if (typeof target === 'string') {
    const client = smartHttpClient(target, (peerOrOptions ?? {}) as HttpRemoteOptions);
    return allOperations(client.url, httpSession(client));
  }
  if (typeof peerOrOptions !== 'string' || typeof name !== 'string') {
    throw new GitportError('REPO_INVALID_NAME', 'remote(bus, peer, name): a peer id and a repository name are needed');
  }
  const url = remoteOptions.url ?? defaultUrl(peerOrOptions, name);
  const session = busSession(target, peerOrOptions, name, remoteOptions);
  return registered({ peer: peerOrOptions, name, ...allOperations(url, session) }, url, session);
}

/** The session runner of each remote made here: what `push` speaks through. */
const runners = new WeakMap<FetchRemote, { url: string; session: SessionRunner }>();

/** `remote`, known to `push` as speaking through `session`. */
function registered<R extends FetchRemote>(remote: R, url: string, session: SessionRunner): R {
  runners.set(remote, { url, session });
  return remote;
}

/**
 * Pushes `refspecs`/`updates` from `local` to a remote made by `busRemote`, `httpRemote` or
 * `remote`, as `remote(...).push` does: rejects with `PUSH_REJECTED` unless every ref is ok or up
 * to date (or `report: true`), and with `PUSH_NOTHING` when there is nothing to push.
 */
export function push(to: FetchRemote, local: Repository, options: RemotePushOptions): Promise<PushResult> {
  const runner = runners.get(to);
  if (runner === undefined) {
    return Promise.reject(
      new GitportError('REMOTE_INVALID', 'push: not a remote made by busRemote, httpRemote or remote'),
    );
  }
  return userFacing(pushRefs(runner.session, runner.url, local, options));
}

/**
 * A repository named `name` hosted by the bus peer `peer`: lsRefs, fetch and clone, without the
 * HTTP remote, partial clone and push (`push(remote, local, options)` pushes to it), for a lighter
 * bundle. `remote(bus, peer, name)` does all of it.
 */
export function busRemote(bus: Bus, peer: string, name: string, remoteOptions: RemoteOptions = {}): BusRemote {
  const url = remoteOptions.url ?? defaultUrl(peer, name);
  const session = busSession(bus, peer, name, remoteOptions);
  return registered({ peer, name, ...operations(url, session) }, url, session);
}

/**
 * A repository served over smart HTTP: lsRefs, fetch and clone, without the bus remote, partial
 * clone and push (`push(remote, local, options)` pushes to it), for a lighter bundle. `remote(url)`
 * does all of it.
 */
export function httpRemote(url: string, options: HttpRemoteOptions = {}): FetchRemote {
  const client = smartHttpClient(url, options);
  return operations(client.url, httpSession(client));
}

/** Runs each operation over a fresh stream to the host's service; the stream is failed if the operation fails. */
function busSession(bus: Bus, peer: string, name: string, remoteOptions: RemoteOptions): SessionRunner {
  return async <T>(
    service: GitService,
    options: OperationOptions,
    fn: (remote: Remote, signal: AbortSignal | undefined, open: SessionOpener) => Promise<T>,
  ): Promise<T> => {
    const { signal } = options;
    if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: signal.reason });
    options.onProgress?.({ phase: 'connect', message: `connecting to ${peer}/${name}` });
    const window = remoteOptions.window ?? (service === 'git-upload-pack' ? FETCH_WINDOW : undefined);
    let stream: DuplexStream;
    try {
      stream = await open(bus, peer, GIT_STREAM, {
        ...(window !== undefined ? { window } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: error });
      if (!bus.peers.has(peer)) {
        throw new GitportError('PEER_NOT_FOUND', `no peer ${JSON.stringify(peer)} on the bus`, { cause: error });
      }
      throw error;
    }
    const onAbort = () => stream.abort(new GitportError('ABORTED', 'aborted', { cause: signal?.reason }));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const v2 = service === 'git-upload-pack' && options.protocolV2 !== false;
      await stream.write(encodeGitRequest({ service, repository: name, parameters: v2 ? ['version=2'] : [] }));
      const onProgress = options.onProgress;
      const connection = {
        input: onProgress
          ? counted(stream, (loaded) => onProgress({ phase: 'transfer', message: `${loaded} bytes received`, loaded }))
          : stream,
        write: (bytes: Uint8Array) => stream.write(bytes),
        flush: () => stream.flush(),
        end: () => stream.end(),
      };
      const result = await fn({ connection }, signal, openConnectionSession as SessionOpener);
      await stream.end().catch(() => {});
      return result;
    } catch (error) {
      stream.abort(error);
      if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: error });
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  };
}

/** Runs each operation over smart HTTP: one client (its credentials and redirected base) for all of them. */
function httpSession(client: ReturnType<typeof smartHttpClient>): SessionRunner {
  // the v2 capabilities the server advertised, read once: later operations of the remote (a
  // partial clone's lazy fetches) start with their command
  const discovered: NonNullable<Extract<Remote, { http: unknown }>['discovered']> = new Map();
  return async (_service, operation, fn) => {
    const { signal } = operation;
    if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: signal.reason });
    const onProgress = operation.onProgress;
    onProgress?.({ phase: 'connect', message: `connecting to ${client.url}` });
    const http = client.fetcher(
      onProgress
        ? (loaded) => onProgress({ phase: 'transfer', message: `${loaded} bytes received`, loaded })
        : undefined,
    );
    try {
      return await fn({ url: client.url, http, discovered }, signal, openHttpSession as SessionOpener);
    } catch (error) {
      if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: error });
      throw error;
    }
  };
}

/**
 * What a fetch or clone does about partial clone: only the remotes of `remote()` carry it, so
 * that `busRemote` and `httpRemote` leave it out of an app's bundle.
 */
interface PartialClone {
  check: typeof checkFilter;
  plan: typeof planFetchFilter;
  /** After a fetch: its promisor remote registered when the plan says so, its pack marked `.promisor`. */
  fetched(local: Repository, plan: FetchFilterPlan, result: FetchResult): Promise<void>;
  /**
   * After a clone with a filter: `origin` set up with the promisor remote recorded (one write of
   * the config) and the pack marked, then the repository reading the objects it lacks from this
   * remote.
   */
  cloned(repository: GitRepository, origin: string, filter: string, result: FetchResult): Promise<GitRepository>;
  /** The first view of a clone, from its pack (`onHeadView`). */
  headView: typeof headViewCollector;
  /**
   * The protocol's own check of the filter-spec a fetch sends (`PROTOCOL_BAD_FILTER`), for one
   * read from the config (a given one was checked by `plan`).
   */
  checkSpec: typeof checkFilterSpec;
}

const protocolOf = (options: OperationOptions) => (options.protocolV2 === false ? 0 : 2) as 0 | 2;

/** Every operation of `remote()`: fetch and clone with partial clone, fetchObjects and push. */
function allOperations(remoteUrl: string, session: SessionRunner): RemoteOperations {
  const partial: PartialClone = {
    check: checkFilter,
    plan: planFetchFilter,
    fetched: async (local, plan, result) => {
      if (plan.register && plan.filter !== undefined && plan.remote !== undefined) {
        await registerPromisor(local as GitRepository, plan.remote, plan.filter);
      }
      if (plan.remote !== undefined) await markPromisorPack(local, result);
    },
    cloned: async (repository, origin, filter, result) => {
      await Promise.all([
        setUpOrigin(repository, origin, (config) => withPromisor(config, 'origin', filter)),
        markPromisorPack(repository, result),
      ]);
      return { ...repository, objects: new PromisorObjectStore(repository.objects, repository, full) };
    },
    headView: headViewCollector,
    checkSpec: checkFilterSpec,
  };
  const full: RemoteOperations = {
    ...operations(remoteUrl, session, partial),
    fetchObjects: (local, oids, options = {}) => userFacing(fetchMissing(local, oids, options)),
    push: (local, options) => userFacing(pushRefs(session, remoteUrl, local, options)),
  };
  runners.set(full, { url: remoteUrl, session });
  return full;

  async function fetchMissing(
    local: Repository,
    oids: readonly string[],
    options: FetchObjectsOptions,
  ): Promise<FetchResult> {
    const { signal: _s, onProgress: _p, protocolV2: _v, filter = 'blob:none' } = options;
    if (filter !== false) checkFilter(filter);
    const result = await session('git-upload-pack', options, (remote, signal, open) =>
      fetchObjectsWith(open, local, remote, oids, {
        ...(filter !== false ? { filter } : {}),
        protocol: protocolOf(options),
        ...remoteProgress(options),
        ...(signal ? { signal } : {}),
      }),
    );
    await markPromisorPack(local, result);
    return result;
  }
}

/** The partial-clone plan of a remote without partial clone: a filter is refused. */
function noPartialClone(filter: string | undefined): FetchFilterPlan {
  if (filter !== undefined) refuseFilter();
  return { register: false };
}

function refuseFilter(): never {
  throw new GitportError(
    'FILTER_UNSUPPORTED',
    'partial clone (filter) needs a remote made by remote(), not busRemote or httpRemote',
  );
}

/** lsRefs, fetch and clone, whatever carries the remote's service; partial clone when given. */
function operations(remoteUrl: string, session: SessionRunner, partial?: PartialClone): FetchRemote {
  const progress = remoteProgress;

  const ops: FetchRemote = {
    url: remoteUrl,
    lsRefs(options = {}) {
      const { signal: _s, onProgress: _p, protocolV2: _v, ...rest } = options;
      return userFacing(
        session('git-upload-pack', options, (remote, signal, open) =>
          lsRemoteWith(open, remote, { ...rest, protocol: protocolOf(options), ...(signal ? { signal } : {}) }),
        ),
      );
    },
    fetch: (local, options = {}) => userFacing(fetchRefs(local, options)),
    clone: (fs, dir, options = {}) => userFacing(cloneRepository(fs, dir, options)),
  };
  runners.set(ops, { url: remoteUrl, session });
  return ops;

  async function fetchRefs(local: Repository, options: RemoteFetchOptions): Promise<FetchResult> {
    const { signal: _s, onProgress: _p, protocolV2: _v, ...rest } = options;
    const shallow = rest.shallow ?? (await readShallow(local));
    const plan = partial ? await partial.plan(local, remoteUrl, rest.filter) : noPartialClone(rest.filter);
    const result = await session('git-upload-pack', options, (remote, signal, open) => {
      if (plan.filter !== undefined) partial?.checkSpec(plan.filter);
      return fetchWith(open, local, remote, {
        ...rest,
        ...(plan.filter !== undefined ? { filter: plan.filter } : {}),
        ...(shallow ? { shallow } : {}),
        protocol: protocolOf(options),
        pipelineLsRefs: rest.pipelineLsRefs ?? protocolOf(options) === 2,
        ...progress(options),
        ...(signal ? { signal } : {}),
      });
    });
    await writeShallow(local, result.shallow);
    await partial?.fetched(local, plan, result);
    return result;
  }

  async function cloneRepository(
    fs: FsLike | FsPromisesLike | GitFs,
    dir: string,
    options: CloneOptions,
  ): Promise<GitRepository> {
    const { signal: _s, onProgress: _p, protocolV2: _v, bare = true, objects, url, onHeadView, ...rest } = options;
    const filter = rest.filter === undefined ? undefined : partial ? partial.check(rest.filter) : refuseFilter();
    // the repository is created once the fetch request is on its way, while the host prepares the
    // pack; the pack's import starts as it comes, its stores' calls waiting for the layout
    let creating: Promise<GitRepository> | undefined;
    const origin = url ?? remoteUrl;
    const create = () => {
      const { early, ready } = initRepositoryEarly(
        fs,
        dir,
        { bare, ...(objects ? { objects } : {}) },
        // a bare clone's config is whole from the start: its one `remote.origin.url`
        bare ? originLines(origin) : [],
      );
      creating = ready;
      return Promise.resolve(early);
    };
    // the first view: from the pack with remote()'s remotes, else the finished clone
    const view: (Pick<HeadViewCollector, 'finish'> & Partial<HeadViewCollector>) | undefined =
      onHeadView && (partial ? partial.headView(onHeadView) : finishedView(onHeadView));
    let repository: GitRepository | undefined;
    try {
      const result = await session('git-upload-pack', options, (remote, signal, open) =>
        cloneWith(open, create, remote, {
          ...rest,
          ...(view?.onRefs && view.onObject ? { onRefs: view.onRefs, onObject: view.onObject } : {}),
          bare,
          protocol: protocolOf(options),
          pipelineLsRefs: rest.pipelineLsRefs ?? protocolOf(options) === 2,
          ...progress(options),
          ...(signal ? { signal } : {}),
        }),
      );
      repository = await creating!;
      // a new repository has no shallow file to remove
      if (result.shallow.length > 0) await writeShallow(repository, result.shallow);
      // one write of the config at most: the origin (a bare clone's is in it from the start) and,
      // as git clone --filter, the promisor remote (recorded even when the server ignored the
      // filter), the pack's .promisor meanwhile
      if (partial && filter !== undefined) repository = await partial.cloned(repository, origin, filter, result);
      else await setUpOrigin(repository, origin);
      if (!bare) {
        const head = await repository.refs.resolve('HEAD');
        if (head !== undefined) {
          options.onProgress?.({ phase: 'checkout', message: 'checking out HEAD' });
          await checkoutCommit(repository, head);
        }
      }
      await view?.finish(repository);
    } catch (error) {
      // A failed clone leaves nothing behind, as git does; a repository that could not be
      // created (one already there, say) is left alone, and that is the error reported.
      // (when the repository was never created, awaiting its creation throws that error)
      if (repository === undefined && creating === undefined) throw error;
      const created = repository ?? (await creating!);
      await created.fs.removeTree(bare ? created.gitDir : dir).catch(() => {});
      throw error;
    }
    options.onProgress?.({ phase: 'done', message: 'clone complete' });
    return repository;
  }
}

async function pushRefs(
  session: SessionRunner,
  remoteUrl: string,
  local: Repository,
  options: RemotePushOptions,
): Promise<PushResult> {
  const given = options ?? {};
  const { signal: _s, onProgress: _p, protocolV2: _v, report, ...rest } = given;
  if ((rest.refspecs?.length ?? 0) === 0 && (rest.updates?.length ?? 0) === 0) {
    throw new GitportError('PUSH_NOTHING', 'nothing to push: give refspecs or updates');
  }
  const result = await session('git-receive-pack', given, (remote, signal) =>
    pushFrom(local, remote, { ...rest, ...remoteProgress(given), ...(signal ? { signal } : {}) }),
  );
  await updateTracking(local, remoteUrl, result);
  if (!result.ok && report !== true) throw pushRejected(result);
  return result;
}

/** `onProgress` for the protocol layer: the remote's progress text as `remote` events. */
function remoteProgress(options: OperationOptions) {
  return options.onProgress
    ? { onProgress: (text: string) => options.onProgress?.({ phase: 'remote', message: text }) }
    : {};
}

/** The isomorphic-git URL of a hosted repository (see http-plugin.ts's default resolver). */
function defaultUrl(peer: string, name: string): string {
  return `http://${encodeURIComponent(peer)}.gitport/${name.split('/').map(encodeURIComponent).join('/')}.git`;
}

function pushRejected(result: PushResult): GitportError {
  const refused = result.refs.filter((r) => r.status === 'rejected');
  const detail = refused.map((r) => `${r.name} (${r.reason})`).join(', ');
  const message =
    result.unpack !== undefined && result.unpack !== 'ok'
      ? `push failed: the remote could not unpack (${result.unpack})`
      : `push rejected: ${detail || 'no ref was updated'}`;
  return new GitportError('PUSH_REJECTED', message, { data: result });
}

/**
 * The error a user-facing call rejects with: a GitportError, the remote's refusal said once,
 * `REPO_NOT_FOUND` for a repository the host does not have, `PUSH_NOT_ACCEPTED` for a push to a
 * read-only host.
 */
async function userFacing<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw asRemoteError(error);
  }
}

const REMOTE_ERROR_PREFIX = /^(?:\s*(?:remote error|ERR)\s*:?\s*)+/i;
/** What the gitport host (and git daemon) say about a repository that is not there. */
const NOT_FOUND = /^repository .* not found$|not found|does not exist|not exported|no such repository/i;
/** What a read-only gitport host (`hostReadOnly`) says to a push. */
const NOT_ACCEPTED = /^this host does not accept pushes/;

export function asRemoteError(error: unknown): GitportError {
  if (isGitportError(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'PROTOCOL_REMOTE_ERROR' || code === 'PKTLINE_REMOTE_ERROR') {
    const message = String((error as Error).message ?? '').replace(REMOTE_ERROR_PREFIX, '');
    if (NOT_ACCEPTED.test(message)) return new GitportError('PUSH_NOT_ACCEPTED', message, { cause: error });
    if (NOT_FOUND.test(message)) return new GitportError('REPO_NOT_FOUND', message, { cause: error });
    return new GitportError('REMOTE_ERROR', `remote error: ${message}`, { cause: error });
  }
  if (code === 'PROTOCOL_ABORTED' || code === 'TRANSPORT_ABORTED') {
    return new GitportError('ABORTED', 'aborted', { cause: error });
  }
  return toGitportError(error);
}

/** `<gitDir>/shallow` (gitrepository-layout(5)): one commit id per line, the shallow boundary. */
async function readShallow(local: Repository): Promise<string[] | undefined> {
  const repo = local as Partial<GitRepository>;
  if (!repo.fs || !repo.gitDir) return undefined;
  const text = await repo.fs.readText(`${repo.gitDir}/shallow`);
  return text === undefined ? [] : text.split('\n').filter((line) => /^[0-9a-f]{40}$/.test(line));
}

async function writeShallow(local: Repository, shallow: readonly string[]): Promise<void> {
  const repo = local as Partial<GitRepository>;
  if (!repo.fs || !repo.gitDir) return;
  const path = `${repo.gitDir}/shallow`;
  if (shallow.length === 0) await repo.fs.remove(path);
  else await repo.fs.write(path, `${[...shallow].sort().join('\n')}\n`);
}

/** The stream's chunks, reporting the running byte count after each. */
async function* counted(
  source: AsyncIterable<Uint8Array>,
  report: (loaded: number) => void,
): AsyncIterable<Uint8Array> {
  let loaded = 0;
  for await (const chunk of source) {
    loaded += chunk.byteLength;
    report(loaded);
    yield chunk;
  }
}

/**
 * What `git clone` records about where it cloned from: `remote.origin.url` (and, in a non-bare
 * clone, the fetch refspec, `branch.<HEAD's branch>.remote`/`merge`, the remote's branches moved
 * to `refs/remotes/origin/*` with `refs/remotes/origin/HEAD`, and only HEAD's branch left under
 * `refs/heads/`); a bare clone's url is in its config from its creation. `extend` makes a last
 * change to the config's text, in the same write.
 */
async function setUpOrigin(repository: GitRepository, url: string, extend?: (config: string) => string): Promise<void> {
  const { fs, gitDir, refs } = repository;
  if (repository.bare) {
    // a bare clone's `[remote "origin"]` was written with its layout
    if (extend) {
      const config = (await fs.readText(joinPath(gitDir, 'config'))) ?? '';
      await fs.write(joinPath(gitDir, 'config'), extend(config));
    }
    return;
  }
  const head = await refs.read('HEAD');
  const branch = head.kind === 'symbolic' ? head.target.replace(/^refs\/heads\//, '') : undefined;
  const lines = [...originLines(url), '\tfetch = +refs/heads/*:refs/remotes/origin/*'];
  const headOid = await refs.resolve('HEAD');
  if (branch !== undefined && headOid !== undefined) {
    lines.push(`[branch "${branch.replace(/["\\]/g, '\\$&')}"]`, '\tremote = origin', `\tmerge = refs/heads/${branch}`);
  }
  const heads = await refs.list('refs/heads/');
  const updates = heads.flatMap((ref) => {
    const tracking = { name: `refs/remotes/origin/${ref.name.slice('refs/heads/'.length)}`, old: null, new: ref.oid };
    return ref.name === (head.kind === 'symbolic' ? head.target : '')
      ? [tracking]
      : [tracking, { name: ref.name, old: ref.oid, new: null }];
  });
  if (updates.length > 0) {
    const results = await refs.update(updates, { atomic: true });
    const refused = results.find((r) => r.status === 'rejected');
    if (refused)
      throw new GitportError(
        'REF_LOCKED',
        `cannot set up refs/remotes/origin: ${refused.name}: ${refused.status === 'rejected' ? refused.message : ''}`,
      );
  }
  if (branch !== undefined && heads.some((r) => r.name === `refs/heads/${branch}`)) {
    await refs.setSymbolic('refs/remotes/origin/HEAD', `refs/remotes/origin/${branch}`);
  }
  const config = (await fs.readText(joinPath(gitDir, 'config'))) ?? '';
  const origin = `${config}${config === '' || config.endsWith('\n') ? '' : '\n'}${lines.join('\n')}\n`;
  await fs.write(joinPath(gitDir, 'config'), extend ? extend(origin) : origin);
}

/**
 * After a push, what git does to the remote-tracking refs: each branch the remote now has at a
 * new value is recorded under `refs/remotes/<remote>/` for every configured remote with this URL
 * and the usual fetch refspec. Best effort, as in git: a failure here does not fail the push.
 */
async function updateTracking(local: Repository, url: string, result: PushResult): Promise<void> {
  const repo = local as Partial<GitRepository>;
  if (!repo.fs || !repo.gitDir) return;
  const moved = result.refs.filter((r) => r.status === 'ok' && r.name.startsWith('refs/heads/'));
  if (moved.length === 0) return;
  try {
    const config = (await repo.fs.readText(joinPath(repo.gitDir, 'config'))) ?? '';
    for (const remoteName of remotesWithUrl(config, url)) {
      const updates = moved.map((r) => ({
        name: `refs/remotes/${remoteName}/${r.name.slice('refs/heads/'.length)}`,
        new: r.new,
      }));
      await local.refs.update(updates);
    }
  } catch {
    // the push itself succeeded; the tracking refs catch up at the next fetch
  }
}

/** The `[remote "origin"]` section of a clone from `url`, as far as a bare clone has it. */
function originLines(url: string): string[] {
  return ['[remote "origin"]', `\turl = ${configValue(url)}`];
}

/** The remotes of a git config whose `url` is `url` and whose fetch refspec is the default one. */
export function remotesWithUrl(config: string, url: string): string[] {
  const found: string[] = [];
  let section: string | undefined;
  let sectionUrl: string | undefined;
  let tracking = false;
  const close = () => {
    if (section !== undefined && sectionUrl === url && tracking) found.push(section);
  };
  for (const raw of config.split('\n')) {
    const line = raw.trim();
    const header = /^\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]$/i.exec(line);
    if (line.startsWith('[')) {
      close();
      section = header ? header[1]!.replace(/\\(.)/g, '$1') : undefined;
      sectionUrl = undefined;
      tracking = false;
      continue;
    }
    if (section === undefined) continue;
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*)$/.exec(line);
    if (!entry) continue;
    const value = unquote(entry[2]!);
    const key = entry[1]!.toLowerCase();
    if (key === 'url') sectionUrl = value;
    if (key === 'fetch' && value === `+refs/heads/*:refs/remotes/${section}/*`) tracking = true;
  }
  close();
  return found;
}

/** A config value as written by `configValue` (or plain). */
function unquote(value: string): string {
  const trimmed = value.trim();
  if (!trimmed.startsWith('"')) return trimmed;
  return trimmed
    .slice(1, trimmed.endsWith('"') ? -1 : undefined)
    .replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
}

/** A config value as git-config(1) reads it back (quoted when it holds what would be parsed). */
function configValue(value: string): string {
  if (!/[\s;#"\\]/.test(value)) return value;
  return `"${value.replace(/["\\]/g, '\\$&').replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
}
