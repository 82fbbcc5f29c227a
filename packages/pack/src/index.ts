/**
 * @gitport/pack: the git object model, packfile import (streaming, deltas, thin packs) and
 * creation (enumeration, delta compression, reuse), .idx v2, and object stores.
 */

export { createSha1, type Sha1, sha1 } from '#sha1';
export { BitmapIndex, type BitmappedPack } from './bitmap-index.js';
export { type BitmapServedStore, type BitmapServing, bitmapServing } from './bitmap-serving.js';
export { type Commit, type Person, parseCommit, parseCommitLinks, serializeCommit } from './commit.js';
export { applyDelta, createDelta } from './delta.js';
export { isPackError, PackError } from './errors.js';
export type { Bits } from './ewah.js';
export { assertFilterSupported } from './filtered-walk.js';
export type { DirEntry, FileHandleLike, FsLike, FsPromisesLike, FsStat, ObjectStoreFs } from './fs-like.js';
export { FsObjectStore } from './fs-store.js';
export { type IndexColumns, type IndexEntries, type IndexEntry, PackIndex, readIdx, writeIdx } from './idx.js';
export { type PackIndexReader, readPackIndex, readPackIndexFile } from './idx-read.js';
export {
  assertObjectId,
  type GitObject,
  hashObject,
  hexToBytes,
  isObjectId,
  isObjectType,
  type ObjectId,
  type ObjectType,
  ZERO_ID,
} from './object.js';
export {
  filterBlob,
  filterKeeps,
  filterKinds,
  filterNeedsBlobSize,
  filterTree,
  formatObjectFilter,
  MAX_FILTER_SPEC_LENGTH,
  type ObjectFilter,
  parseObjectFilter,
  type TreeVerdict,
} from './object-filter.js';
export type { StoredPacks } from './pack-files.js';
export { beginPack, type ImportOptions, type ImportResult, importPack, spoolsPacks } from './pack-import.js';
export { DEFAULT_LIMITS, type PackEntry, type PackLimits, PackReader, type PackReaderOptions } from './pack-reader.js';
export { openPackSpool, type PackSpoolHost } from './pack-spool.js';
export { createPack, type PackEncoding, type PackSelection, packObjects } from './pack-writer.js';
export {
  DirectoryQuarantine,
  type DirectoryQuarantineHost,
  OverlayQuarantine,
  openQuarantine,
  type QuarantineFs,
} from './quarantine.js';
export {
  MemoryObjectStore,
  type Migration,
  type ObjectStore,
  type PackFile,
  type PackSpool,
  type PackSpoolOpener,
  type Quarantine,
  type RawEntry,
  type StoredPack,
} from './store.js';
export type { PackSource, StoredEntries, StoredLocation } from './stored-location.js';
export {
  findPackOf,
  hasHeaderReads,
  hasLocateStored,
  hasStoredPacks,
  locateStoredOf,
  readHeaderOf,
  readHeaderSyncOf,
  readRawOf,
} from './stored-reads.js';
export { parseTag, parseTagTarget, serializeTag, type Tag } from './tag.js';
export { parseTree, serializeTree, type TreeEntry } from './tree.js';
export {
  CommitCache,
  type CommitInfo,
  type EnumerateOptions,
  type Enumeration,
  enumerateObjects,
  isAncestor,
  mergeBase,
  type PackObject,
  type WalkOptions,
  type WalkResult,
  walkCommits,
} from './walk.js';
