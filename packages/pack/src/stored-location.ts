/**
 * Where an object's stored (packed) form lies, so that a pack writer can keep a few numbers per
 * object and copy the bytes when it writes them (git keeps offsets into the mapped pack), instead
 * of holding every object's compressed bytes, and the buffers they are views of, until the end.
 */
import type { EntryType } from './entry-header.js';

/** A pack the entries of a `StoredLocation` are read from: one object per pack. */
export interface PackSource {
  /** Fills `into` with the pack's bytes from `position` on (`into.length` of them). */
  readInto(position: number, into: Uint8Array): Promise<void>;
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
