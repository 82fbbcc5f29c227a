/**
 * The delta search on another thread: the default (web) build has none, so the writer searches
 * alone. The Node build (`delta-worker.node.ts`, selected by the `"node"` import condition)
 * runs part of the search in a worker thread.
 */

import type { ObjectId, ObjectType } from './object.js';

/** One candidate object sent to the other thread (in candidate order). */
export interface RemoteDeltaObject {
  /** Index in the caller's candidate list. */
  i: number;
  oid: ObjectId;
  type: ObjectType;
  size: number;
  whole: boolean;
  edge: boolean;
  /**
   * The object's bytes (copied: the caller's buffer stays its own); left out when the job reads
   * the objects itself (`RemoteDeltaJob.reads`).
   */
  data?: Uint8Array;
}

/** What the other thread decided for one object (objects left out need the caller's usual path). */
export interface RemoteDeltaResult {
  i: number;
  /** Candidate index of the delta base, or -1: `z` is then the whole object deflated. */
  base: number;
  depth: number;
  /** Size of the delta (or of the object) before deflating. */
  size: number;
  /** May be a view of a buffer shared with other results. */
  z: Uint8Array;
}

/** An object for the other thread to deflate: its bytes, or where the job reads them itself, its id. */
export interface RemoteCompressObject {
  i: number;
  oid?: ObjectId;
  data?: Uint8Array;
  /** A delta (always deflated), not an object to be written whole. */
  delta?: boolean;
}

export interface RemoteDeltaJob {
  /**
   * The other thread reads the objects from the store itself (a store it can open there): the
   * caller then sends ids, not bytes, and spends no time reading them.
   */
  readonly reads: boolean;
  /**
   * Objects of one chunk (a run of the candidate list, in order; a new chunk starts a new
   * window); `last` ends the chunk.
   */
  add(objects: RemoteDeltaObject[], chunk: number, last: boolean): void;
  /** Chunks added and not yet searched. */
  queuedChunks(): number;
  /**
   * Bytes the caller will write, to deflate there (results with base -1): objects it keeps
   * whole, which the other thread may leave out past its memory budget, and deltas (`delta`),
   * which it always deflates. The bytes are copied: the caller's buffers stay its own, and the
   * list is read before the call returns (the caller may empty it and fill it again).
   */
  compress(objects: RemoteCompressObject[]): void;
  /** All results, once the other thread has searched every object added. */
  finish(): Promise<RemoteDeltaResult[]>;
  /** Drops the job (the caller failed): its results are discarded. */
  cancel(): void;
}

/**
 * Types and sizes of objects read from their entry headers by two threads at once: the list is
 * cut into batches; the other thread takes them from the first on, the caller from the last
 * back, each batch taken once (through memory both threads share), until they meet.
 */
export interface SharedHeaderReads {
  readonly batches: number;
  /** Takes batch `b` for the caller, unless the other thread took it first: true when the caller reads it. */
  claim(b: number): boolean;
  /**
   * Once the other thread is done with the batches it took: the type code of each object
   * (TYPE_CODES; 0 in batches it did not read, or for an object it did not find there) and size.
   */
  done(): Promise<{ types: Uint8Array; sizes: Float64Array }>;
}

export interface RemoteDeltaSearch {
  /**
   * Opens `store` on the other thread ahead of the search (its pack indexes read, its entries
   * put in offset order), where it can be opened there, so that a job begun later on the same
   * store reads at once. Returns whether it can.
   */
  prepare(store: object): boolean;
  /**
   * Reads types and sizes of `oids` in batches of `batch` on the other thread too (see
   * SharedHeaderReads), where `store` can be opened there; else undefined.
   */
  headers(store: object, oids: readonly ObjectId[], batch: number): SharedHeaderReads | undefined;
  begin(options: {
    window: number;
    depth: number;
    level: number;
    wholeBudget: number;
    /**
     * The store the objects come from (an ObjectStore): read on the other thread too where it
     * can be opened there.
     */
    store?: object;
  }): RemoteDeltaJob;
}

export function remoteDeltaSearch(): RemoteDeltaSearch | undefined {
  return undefined;
}
