/**
 * @gitport/protocol: both sides of git's smart protocol (v0/v1 and v2) over any duplex byte
 * stream, stateful or stateless (smart HTTP): ref advertisement, negotiation, upload-pack and
 * receive-pack servers, fetch/clone and push clients, and the RefStore interface.
 *
 * Exported: the clients (`lsRemote`, `fetch`, `clone`, `push`; `lsRemoteWith`, `fetchWith`,
 * `cloneWith`, `fetchObjectsWith` for a caller that opens one kind of session, with
 * `openConnectionSession` or `openHttpSession`, and checks filter-specs itself), the servers
 * (`serveUploadPack`, `serveReceivePack` over a Connection; the smart-HTTP handlers), the
 * RefStore interface with what its implementations check ref names with, and the error. The wire
 * codecs (advertisement, capabilities, requests, acknowledgments, shallow-info) and the
 * negotiation are internal: the clients and servers speak them.
 */
export type { AdvertisedRef } from './advertisement.js';
export { Capabilities } from './capabilities.js';
export { connectionPair } from './channel.js';
export type { Connection, Repository } from './connection.js';
export { hasCode, ProtocolError, peerErrorMessage } from './errors.js';
export {
  clone,
  cloneWith,
  type FetchObjectsOptions,
  type FetchOptions,
  type FetchResult,
  fetch,
  fetchObjects,
  fetchObjectsWith,
  fetchWith,
  type LocalRepository,
  type LsRemoteOptions,
  type LsRemoteResult,
  lsRemote,
  lsRemoteWith,
} from './fetch-client.js';
export { checkFilterSpec } from './filter-spec.js';
export {
  advertiseRefsHttp,
  type GitService,
  type HttpReply,
  handleReceivePackHttp,
  handleUploadPackHttp,
  isGitService,
  protocolFromHeader,
  type RoundOptions,
  rpcResultHeaders,
} from './http.js';
export {
  type PushOptions,
  type PushRefStatus,
  type PushResult,
  type PushUpdate,
  push,
} from './push-client.js';
export {
  type PushCommand,
  type PushCommandResult,
  type ReceivePackHooks,
  type ReceivePackLimits,
  type ReceivePackOptions,
  type ReceivePackResult,
  serveReceivePack,
} from './receive-pack.js';
export {
  batchNameClashes,
  isValidRefName,
  MAX_REF_COMPONENT_BYTES,
  MAX_REF_NAME_BYTES,
  MemoryRefStore,
  type ObjectId,
  type PreparedRefs,
  type Ref,
  type RefRejection,
  type RefStore,
  type RefUpdate,
  type RefUpdateResult,
  type RefValue,
  refNameSizeProblem,
} from './ref-store.js';
export {
  type ConnectionRemote,
  type HttpFetch,
  type HttpRemote,
  type HttpRequest,
  type HttpResponse,
  openConnectionSession,
  openHttpSession,
  type Remote,
  type ServiceSession,
  type SessionOpener,
  type SessionOptions,
} from './remote.js';
export { serveUploadPack, type UploadPackLimits, type UploadPackOptions } from './upload-pack.js';
