/**
 * What `gitport` and `gitport/node` both export: everything but the hosts (host.ts, and
 * host.node.ts for `gitport/node`).
 */

export type { GitService } from '@gitport/protocol';
export {
  type CommitOptions,
  type CommitResult,
  commit,
  listFiles,
  type RepositoryLike,
  readFile,
  type Signature,
} from './commit-files.js';
export {
  CONTROL_CHANNEL,
  type ControlApi,
  type ControlClient,
  type ControlResult,
  type ControlWire,
  control,
  exposeControl,
  type RepositoryRefs,
} from './control.js';
export { GitportError, type GitportErrorCode, isGitportError, type LowerLayerCode } from './errors.js';
export {
  type FileHandleLike,
  type FsLike,
  type FsPromisesLike,
  type FsStat,
  GitFs,
  type GitFsOptions,
} from './fs.js';
export { FsRefStore, type FsRefStoreOptions } from './fs-ref-store.js';
export type { HeadView } from './head-view.js';
export {
  defaultResolver,
  type GitHttpRequest,
  type GitHttpResponse,
  type HttpClient,
  type HttpClientOptions,
  httpClient,
  resolveUrl,
  type UrlResolver,
} from './http-plugin.js';
export type {
  AuthChallenge,
  HttpCredentials,
  HttpRemoteOptions,
} from './http-remote.js';
export { MemoryFs } from './memory-fs.js';
export { OpfsFs } from './opfs-fs.js';
export { type PartialCloneConfig, partialCloneConfig, readPartialClone } from './partial-clone.js';
export {
  isPromisorStore,
  type LazyReadOptions,
  PromisorObjectStore,
  type PromisorRemote,
  type PromisorStoreOptions,
} from './promisor.js';
export { refUpdateEvents } from './ref-events.js';
export {
  assertRepositoryName,
  FsRepositoryRegistry,
  type HostedRepository,
  isValidRepositoryName,
  type RepositoryRegistry,
  staticRepositories,
} from './registry.js';
export {
  type BusRemote,
  busRemote,
  type CloneOptions,
  type FetchObjectsOptions,
  type FetchRemote,
  type GitRemote,
  type HttpGitRemote,
  httpRemote,
  type OperationOptions,
  type ProgressEvent,
  push,
  type RemoteFetchOptions,
  type RemoteOperations,
  type RemoteOptions,
  type RemotePushOptions,
  remote,
} from './remote.js';
export {
  type GitRepository,
  type InitOptions,
  initRepository,
  type ObjectStoreFactory,
  type OpenOptions,
  openRepository,
} from './repository.js';
export {
  DEFAULT_STALE_AFTER_MS,
  removeStaleFiles,
  type StaleFileOptions,
  type StaleFileReport,
} from './stale-files.js';
export {
  type BusWatchSource,
  type ResetInfo,
  type Watcher,
  type WatchFetch,
  type WatchOptions,
  watch,
} from './watch.js';
export {
  HTTP_STOP,
  HTTP_STREAM,
  isRefUpdateEvent,
  REF_UPDATE_EVENT,
  type RefUpdateEvent,
  ZERO_ID,
} from './wire.js';
