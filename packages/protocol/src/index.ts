/**
 * @gitport/protocol: both sides of git's smart protocol (v0/v1 and v2) over any duplex byte
 * stream, stateful or stateless (smart HTTP): ref advertisement, negotiation, upload-pack and
 * receive-pack servers, fetch/clone and push clients, and the RefStore interface.
 */
export {
  type AdvertisedRef,
  type Advertisement,
  type AdvertisementV0,
  type AdvertisementV2,
  collectRefs,
  decodeAdvertisement,
  encodeAdvertisementV0,
  encodeCapabilitiesV2,
  encodeLsRefs,
  parseLsRefsLine,
} from './advertisement.js';
export {
  Capabilities,
  type Capability,
  DEFAULT_AGENT,
  formatCapability,
  receivePackCapabilities,
  uploadPackCapabilities,
  v2Capabilities,
} from './capabilities.js';
export { ByteChannel, connectionPair } from './channel.js';
export { CommitGraph, type CommitNode, commitsToSend, computeShallow, type ShallowRequest } from './commit-graph.js';
export type { Connection, Repository } from './connection.js';
export { hasCode, ProtocolError, peerErrorMessage } from './errors.js';
export {
  checkFilterSpec,
  clone,
  type FetchObjectsOptions,
  type FetchOptions,
  type FetchResult,
  fetch,
  fetchObjects,
  type LocalRepository,
  type LsRemoteOptions,
  type LsRemoteResult,
  lsRemote,
} from './fetch-client.js';
export {
  advertiseRefsHttp,
  type GitService,
  type HttpReply,
  handleReceivePackHttp,
  handleUploadPackHttp,
  isGitService,
  protocolFromHeader,
  rpcResultHeaders,
} from './http.js';
export { Negotiator } from './negotiator.js';
export {
  checkObject,
  type LinkType,
  type ObjectCheckOptions,
  type ObjectLink,
  type ObjectVerdict,
} from './object-check.js';
export {
  type PushOptions,
  type PushRefStatus,
  type PushResult,
  type PushUpdate,
  push,
  readReport,
} from './push-client.js';
export {
  type PushCommand,
  type PushCommandResult,
  type ReceivePackHooks,
  type ReceivePackLimits,
  type ReceivePackOptions,
  type ReceivePackResult,
  receivePackAdvertisement,
  serveReceivePack,
} from './receive-pack.js';
export {
  assertValidRefName,
  batchNameClashes,
  compareRefNames,
  isObjectId,
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
export { matchRefspec, parseRefspec, type Refspec } from './refspec.js';
export type { HttpFetch, HttpRequest, HttpResponse, Remote } from './remote.js';
export { serveUploadPack, type UploadPackLimits, type UploadPackOptions } from './upload-pack.js';
