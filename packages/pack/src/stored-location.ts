/**
 * Where an object's stored (packed) form lies, so that a pack writer can keep a few numbers per
 * object and copy the bytes when it writes them (git keeps offsets into the mapped pack), instead
 * of holding every object's compressed bytes, and the buffers they are views of, until the end.
 */
import type { EntryType } from './entry-header.js';
import type { ObjectId } from './object.js';

/** A pack the entries of a `StoredLocation` are read from: one object per pack. */
export interface PackSource {
  /**
   * Fills `into` with the pack's bytes from `position` on (`into.length` of them). `direct`: the
   * caller reads each range once, in batches of its own, so short reads need not go through (and
   * fill) a cache of pages either.
   */
  readInto(position: number, into: Uint8Array, options?: { direct?: boolean }): Promise<void>;
}

export interface StoredLocation {
  source: PackSource;
  /** Offset of the entry, its header included, in the pack. */
  offset: number;
  /** Offset of its compressed data. */
  dataOffset: number;
  /** Offset just past it. */
  end: number;
  /** The entry's type (its header's). */
  code: EntryType;
  /** For an OFS_DELTA: how far back its base's entry starts. */
  baseDistance?: number;
}

/**
 * Where the stored entries of many objects lie, in columns (see ObjectStore.locateStored): a few
 * numbers per object, as git's pack-objects keeps a pack and an offset per object entry.
 */
export interface StoredEntries {
  /** The packs the entries lie in, by the numbers of `pack`. */
  readonly sources: readonly PackSource[];
  /** Per object (in the order asked): its pack's number in `sources`, -1 when no pack holds it. */
  readonly pack: Int32Array;
  /** Offset of the entry, its header included. */
  readonly offset: Float64Array;
  /** Bytes of the entry's header, the base's reference included. */
  readonly headerLength: Uint8Array;
  /** Offset just past the entry. */
  readonly end: Float64Array;
  /** The entry's type (EntryType). */
  readonly code: Uint8Array;
  /** The size its header gives: the object's, or the delta's. */
  readonly size: Float64Array;
  /** OFS_DELTA: offset of the base's entry in the same pack; -1 otherwise. */
  readonly baseOffset: Float64Array;
  /** The id of the base of the delta entry of object `i`. */
  baseOid(i: number): ObjectId;
}
