/**
 * The delta search on another thread: the default (web) build has none, so the writer searches
 * alone. The Node build (`delta-worker.node.ts`, selected by the `"node"` import condition)
 * runs part of the search in a worker thread.
 */

/** One candidate object sent to the other thread (in candidate order). */
export interface RemoteDeltaObject {
  /** Index in the caller's candidate list. */
  i: number;
  type: string;
  size: number;
  whole: boolean;
  edge: boolean;
  /** The object's bytes; the buffer is transferred. */
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
  z: Uint8Array;
}

export interface RemoteDeltaJob {
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
   * which it always deflates. The buffers are transferred.
   */
  compress(objects: { i: number; data: Uint8Array; delta?: boolean }[]): void;
  /** All results, once the other thread has searched every object added. */
  finish(): Promise<RemoteDeltaResult[]>;
  /** Drops the job (the caller failed): its results are discarded. */
  cancel(): void;
}

export interface RemoteDeltaSearch {
  begin(options: { window: number; depth: number; level: number; wholeBudget: number }): RemoteDeltaJob;
}

export function remoteDeltaSearch(): RemoteDeltaSearch | undefined {
  return undefined;
}
