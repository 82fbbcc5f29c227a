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
 * Every operation takes an AbortSignal: aborting fails the stream, the host sees
 * TRANSPORT_ABORTED and moves no ref (receive-pack applies ref updates only after the whole pack
 * is stored). Progress: `onProgress` gets the remote's progress text (side-band 2) and, for
 * clones, phase events.
 */
import type { Bus } from '@gitport/bus';
import {
  clone as cloneInto,
  type FetchOptions,
  type FetchResult,
  fetch as fetchInto,
  type LsRemoteOptions,
  type LsRemoteResult,
  lsRemote,
  type PushOptions,
  type PushResult,
  push as pushFrom,
  type Remote,
  type Repository,
} from '@gitport/protocol';
import { type DuplexStream, open } from '@gitport/transport';
import { GitportError } from './errors.js';
import type { FsLike, FsPromisesLike, GitFs } from './fs.js';
import { encodeGitRequest, GIT_STREAM, type GitService } from './host.js';
import { type GitRepository, type InitOptions, initRepository } from './repository.js';

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
export type RemotePushOptions = Omit<PushOptions, 'signal' | 'onProgress'> & OperationOptions;

export interface CloneOptions extends Omit<RemoteFetchOptions, 'refspecs' | 'tags'> {
  /** Default true. A non-bare clone checks out HEAD's tree with isomorphic-git. */
  bare?: boolean;
  objects?: InitOptions['objects'];
}

export interface GitRemote {
  readonly peer: string;
  readonly name: string;
  lsRefs(options?: Omit<LsRemoteOptions, 'signal' | 'protocol'> & OperationOptions): Promise<LsRemoteResult>;
  fetch(local: Repository, options?: RemoteFetchOptions): Promise<FetchResult>;
  /** Creates a repository at `dir` (bare unless told) and fetches every branch and tag into it. */
  clone(fs: FsLike | FsPromisesLike | GitFs, dir: string, options?: CloneOptions): Promise<GitRepository>;
  push(local: Repository, options: RemotePushOptions): Promise<PushResult>;
}

export interface RemoteOptions {
  /**
   * The transport receive window of each stream (bytes). Default: 4 MiB for fetches and
   * clones (the host then sends 1 MiB at a time), the transport's default for pushes.
   */
  window?: number;
}

/** A fetch's receive window: what the host may send ahead of the pack's import. */
const FETCH_WINDOW = 4 * 2 ** 20;

/** A repository named `name` hosted by the bus peer `peer`. */
export function remote(bus: Bus, peer: string, name: string, remoteOptions: RemoteOptions = {}): GitRemote {
  /** Runs `fn` over a fresh stream to the host's service; the stream is failed if `fn` fails. */
  const session = async <T>(
    service: GitService,
    options: OperationOptions,
    fn: (remote: Remote, signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> => {
    const { signal } = options;
    if (signal?.aborted) throw new GitportError('ABORTED', 'aborted', { cause: signal.reason });
    options.onProgress?.({ phase: 'connect', message: `connecting to ${peer}/${name}` });
    const window = remoteOptions.window ?? (service === 'git-upload-pack' ? FETCH_WINDOW : undefined);
    const stream: DuplexStream = await open(bus, peer, GIT_STREAM, {
      ...(window !== undefined ? { window } : {}),
      ...(signal ? { signal } : {}),
    });
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
      const result = await fn({ connection }, signal);
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

  const progress = (options: OperationOptions) =>
    options.onProgress
      ? { onProgress: (text: string) => options.onProgress?.({ phase: 'remote', message: text }) }
      : {};
  const protocolOf = (options: OperationOptions) => (options.protocolV2 === false ? 0 : 2) as 0 | 2;

  return {
    peer,
    name,
    lsRefs(options = {}) {
      const { signal: _s, onProgress: _p, protocolV2: _v, ...rest } = options;
      return session('git-upload-pack', options, (remote, signal) =>
        lsRemote(remote, { ...rest, protocol: protocolOf(options), ...(signal ? { signal } : {}) }),
      );
    },
    async fetch(local, options = {}) {
      const { signal: _s, onProgress: _p, protocolV2: _v, ...rest } = options;
      const shallow = rest.shallow ?? (await readShallow(local));
      const result = await session('git-upload-pack', options, (remote, signal) =>
        fetchInto(local, remote, {
          ...rest,
          ...(shallow ? { shallow } : {}),
          protocol: protocolOf(options),
          pipelineLsRefs: rest.pipelineLsRefs ?? protocolOf(options) === 2,
          ...progress(options),
          ...(signal ? { signal } : {}),
        }),
      );
      await writeShallow(local, result.shallow);
      return result;
    },
    async clone(fs, dir, options = {}) {
      const { signal: _s, onProgress: _p, protocolV2: _v, bare = true, objects, ...rest } = options;
      // the repository is created once the fetch request is on its way, while the host prepares the pack
      let creating: Promise<GitRepository> | undefined;
      const create = () => {
        creating = initRepository(fs, dir, { bare, ...(objects ? { objects } : {}) });
        creating.catch(() => {});
        return creating;
      };
      let repository: GitRepository | undefined;
      try {
        const result = await session('git-upload-pack', options, (remote, signal) =>
          cloneInto(create, remote, {
            ...rest,
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
        if (!bare) {
          options.onProgress?.({ phase: 'checkout', message: 'checking out HEAD' });
          await checkout(repository, dir);
        }
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
    },
    push(local, options) {
      const { signal: _s, onProgress: _p, protocolV2: _v, ...rest } = options;
      return session('git-receive-pack', options, (remote, signal) =>
        pushFrom(local, remote, { ...rest, ...progress(options), ...(signal ? { signal } : {}) }),
      );
    },
  };
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

/** Checks out HEAD into the working tree with isomorphic-git (loaded only for non-bare clones). */
async function checkout(repository: GitRepository, dir: string): Promise<void> {
  const head = await repository.refs.read('HEAD');
  if (head.kind !== 'symbolic' || (await repository.refs.resolve('HEAD')) === undefined) return;
  const git = await import('isomorphic-git');
  const branch = head.target.replace(/^refs\/heads\//, '');
  await git.checkout({
    fs: { promises: repository.fs.raw } as unknown as Parameters<typeof git.checkout>[0]['fs'],
    dir,
    gitdir: repository.gitDir,
    ref: branch,
    force: true,
  });
}
