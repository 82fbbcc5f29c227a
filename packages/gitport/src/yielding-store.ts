/**
 * An object store that gives its thread's event loop a turn while a long walk reads from it.
 *
 * Walks over objects a store holds in memory (`readSync`, reads that resolve at once) run as one
 * chain of microtasks, which holds the thread for as long as the walk lasts: a worker serving a
 * fetch of a long history would read no message meanwhile, not the abort of that very request,
 * nor the requests of other repositories pinned to it. Once the thread has run `SLICE_MS` without
 * a turn, this store answers `readSync` with undefined (which sends the caller to `read`, as the
 * ObjectStore interface allows) and its next read waits for a macrotask first; an aborted request
 * then sees its AbortSignal at the walk's next check.
 *
 * One wrapper per store (the wrapped store keeps its identity across requests, so caches keyed
 * by the store still hit); the time slice is the thread's, shared by every wrapper.
 */
import type { BitmapServedStore, ObjectStore } from '@gitport/pack';
import {
  findPackOf,
  hasHeaderReads,
  hasLocateStored,
  hasStoredPacks,
  locateStoredOf,
  readHeaderOf,
  readRawOf,
} from '@gitport/pack/internal/stored-reads';

/** Longest run of reads without a turn of the event loop, in ms. */
const SLICE_MS = 10;
/** Reads between two looks at the clock. */
const CHECK_EVERY = 64;

let sliceStart = now();
let reads = 0;
/** A turn is owed: `readSync` declined, the next `read` waits for it. */
let owed = false;
let turn: Promise<void> | undefined;

const wrappers = new WeakMap<ObjectStore, ObjectStore>();

function now(): number {
  return globalThis.performance?.now() ?? Date.now();
}

/** Runs `fn` on a later macrotask (setImmediate in Node; a timer elsewhere). */
function macrotask(fn: () => void): void {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (typeof immediate === 'function') immediate(fn);
  else setTimeout(fn, 0);
}

/** Whether the current slice is spent (looked up every CHECK_EVERY reads). */
function spent(): boolean {
  if (owed) return true;
  if (++reads % CHECK_EVERY !== 0) return false;
  if (now() - sliceStart < SLICE_MS) return false;
  owed = true;
  return true;
}

/** One turn of the event loop, shared by every read that is waiting for it. */
function giveTurn(): Promise<void> {
  turn ??= new Promise<void>((resolve) =>
    macrotask(() => {
      turn = undefined;
      owed = false;
      sliceStart = now();
      resolve();
    }),
  );
  return turn;
}

export function yieldingStore(store: ObjectStore): ObjectStore {
  const known = wrappers.get(store);
  if (known !== undefined) return known;
  const { bitmaps } = store as BitmapServedStore;
  const wrapped: BitmapServedStore = {
    async has(oid) {
      if (spent()) await giveTurn();
      return store.has(oid);
    },
    async read(oid) {
      if (spent()) await giveTurn();
      return store.read(oid);
    },
    write: (type, data) => store.write(type, data),
    ...(bitmaps !== undefined ? { bitmaps } : {}),
  };
  if (store.readSync !== undefined) {
    const readSync = store.readSync.bind(store);
    wrapped.readSync = (oid) => (spent() ? undefined : readSync(oid));
  }
  // the reads only serving needs: the store's own, or those over the packs it lends
  // (stored-reads.ts), each after a turn when one is owed
  if (hasHeaderReads(store)) {
    wrapped.readHeader = async (oid) => {
      if (spent()) await giveTurn();
      return readHeaderOf(store, oid);
    };
  }
  if (store.readRaw !== undefined || store.storedPacks !== undefined) {
    wrapped.readRaw = async (oid) => {
      if (spent()) await giveTurn();
      return readRawOf(store, oid);
    };
  }
  if (hasLocateStored(store)) {
    wrapped.locateStored = async (oids, signal) => {
      if (spent()) await giveTurn();
      return (await locateStoredOf(store, oids, signal))!;
    };
  }
  if (store.writeHashed !== undefined) wrapped.writeHashed = store.writeHashed.bind(store);
  if (store.writePack !== undefined) wrapped.writePack = store.writePack.bind(store);
  if (store.beginPack !== undefined) wrapped.beginPack = store.beginPack.bind(store);
  if (hasStoredPacks(store)) wrapped.findPack = (oids) => findPackOf(store, oids);
  if (store.bitmappedPack !== undefined) wrapped.bitmappedPack = store.bitmappedPack.bind(store);
  wrappers.set(store, wrapped);
  return wrapped;
}
