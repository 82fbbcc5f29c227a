/**
 * createPack: enumerates reachable(wants) - reachable(haves) and writes a version 2 pack
 * (gitformat-pack) as a stream:
 *
 *   "PACK" u32be(2) u32be(count) entries sha1
 *
 * Representation of each object, cheapest first: the stored delta reused from a source pack
 * when its base is in this pack (or the receiver has it, for thin packs); the stored compressed
 * whole object reused; otherwise a delta searched git-style — candidates sorted by type, name
 * hash and size (largest first), a sliding window (default 10) and a depth limit (default 50),
 * deltas smaller than half the target — or the whole object deflated. Bases come before their
 * deltas; OFS_DELTA unless `ofsDelta: false`; REF_DELTA to objects outside the pack (thin).
 */

import { remoteDeltaSearch } from '#delta-worker';
import { createSha1 } from '#sha1';
import { deflateEntry } from '#zlib';
import type { BitmapServedStore } from './bitmap-serving.js';
import { parseCommitLinks } from './commit.js';
import { type DeltaIndex, DeltaWindow } from './delta.js';
import type { RemoteCompressObject, RemoteDeltaJob, RemoteDeltaObject } from './delta-worker.js';
import { EntryType, encodeEntryHeader, encodeOfsOffset, isWholeEntryType } from './entry-header.js';
import { PackError, throwIfAborted } from './errors.js';
import { bytesToHex, CODE_TYPES, hexToBytes, type ObjectId, type ObjectType, TYPE_CODES } from './object.js';
import type { ObjectFilter } from './object-filter.js';
import type { PackPrefix } from './pack-range-reuse.js';
import { asSmallInteger } from './small-integer.js';
import type { ObjectStore } from './store.js';
import type { PackSource, StoredEntries } from './stored-location.js';
import {
  findPackOf,
  hasHeaderReads,
  hasLocateStored,
  hasStoredPacks,
  locateStoredOf,
  readHeaderOf,
  readHeaderSyncOf,
  readRawOf,
} from './stored-reads.js';
import { forEachTreeEntryRaw } from './tree.js';
import { type CommitCache, type Enumeration, enumerateObjects, type PackObject } from './walk.js';

/**
 * What goes in the pack: the objects reachable from `wants` and not from `haves`, cut at the
 * shallow boundaries and by the filter, with the annotated tags that point at them.
 */
export interface PackSelection {
  wants: readonly ObjectId[];
  haves?: readonly ObjectId[];
  /** Commits whose parents are not walked (shallow boundaries). */
  shallow?: readonly ObjectId[];
  /**
   * Partial clone: objects the filter leaves out are not sent (those named in `wants` are). Under
   * a filter no delta is made against an object outside the pack (no thin bases).
   */
  filter?: ObjectFilter;
  /** Include annotated tags from `tags` that point at sent objects (include-tag). */
  includeTags?: boolean;
  /** Annotated tag ids to consider with `includeTags` (the caller knows the refs). */
  tags?: readonly ObjectId[];
  /** Parsed commits kept between walks of the same store. */
  cache?: CommitCache;
}

/** How the selected objects are written: deltas, reuse, compression, progress, cancellation. */
export interface PackEncoding {
  /** Allow REF_DELTA against objects the receiver has (from the selection's `haves`). */
  thin?: boolean;
  /** OFS_DELTA for bases inside the pack (default true). */
  ofsDelta?: boolean;
  /** Compute and reuse deltas (default true). */
  deltas?: boolean;
  /** Reuse deltas and compressed data stored in the source's packs (default true). */
  reuse?: boolean;
  /**
   * Enumerate with the store's reachability bitmaps and copy its bitmapped pack by ranges, where
   * the store serves by bitmaps (its `bitmaps`, see bitmap-serving.ts), has a bitmapped pack and
   * the request allows (default true).
   */
  bitmaps?: boolean;
  window?: number;
  depth?: number;
  /** zlib level (default 6, like git's core.compression -1). */
  level?: number;
  /**
   * Threads for the delta search (default 2 where a worker thread can start, as git uses the
   * machine's cores): the later part of the sorted candidates is searched on another thread.
   */
  threads?: number;
  /** Cancels the walk and the writing. */
  signal?: AbortSignal;
  onProgress?: (progress: { phase: 'counting' | 'compressing' | 'writing'; done: number; total: number }) => void;
  /**
   * Called with the pack's objects when a stored pack holding exactly them goes out as it is,
   * found by the object walk. Not called when the bitmaps chose it: they answer the same request
   * again faster than a list of every object in the pack is made and checked, and that list
   * would be as many strings as the pack has objects, kept while the pack goes out and after.
   */
  onStoredPack?: (oids: readonly ObjectId[]) => void;
  /**
   * The caller is done with each chunk before it asks for the next: a stored pack that goes out
   * as it is may come in views of buffers the store reuses (see StoredPack.stream).
   */
  borrow?: boolean;
  /**
   * A commit (a clone's HEAD) written first with the trees under it, ahead of older commits, so
   * that a receiver can show its tree while the rest of the pack comes (a stored pack that goes
   * out as it is keeps its order).
   */
  lead?: ObjectId;
}

interface Item extends PackObject {
  size: number;
  /** Set when the object is stored as a delta in the output. */
  base?: ObjectId;
  /** The base's item when it is one (of the pack's objects, or a thin-pack base). */
  baseItem?: Item;
  delta?: Uint8Array;
  /**
   * Deflated by the delta worker: the delta (when `base` is set) or the whole object (a view of
   * a buffer shared with the worker, copied out when written).
   */
  z?: Uint8Array;
  /** Size before deflating of `z` (0 without it). */
  zSize: number;
  /** Its number in the pack's objects (its row in `Reused`), -1 for a thin-pack base. */
  n: number;
  depth: number;
  /** Only a thin-pack base: not written. */
  edge?: boolean;
  /** Stored whole in the source's packs. */
  whole?: boolean;
  /** While in the delta window. */
  index?: DeltaIndex;
  /** Depth of its reused delta chain once worked out, else -1 (a number from the start: see newItem). */
  chainDepth: number;
  /** Its offset in the output once written, else -1. */
  at: number;
}

/** No stored representation is reused: the object is deflated whole or searched for a delta. */
const REUSE_NONE = 0;
/** The stored whole entry goes out as it is. */
const REUSE_WHOLE = 1;
/** The stored delta goes out, its base being in the pack or the receiver's. */
const REUSE_DELTA = 2;
/** Stored as a delta that cannot be reused (its type is not known from the entry). */
const STORED_DELTA = 3;

/**
 * The stored representations of the pack's objects, in columns by object number: where each
 * lies (read again at write time, so that the writer holds a few numbers per object, not the
 * pack nor the buffers its entries were read into), else, from a store that cannot say, its bytes.
 */
class Reused {
  /** REUSE_NONE, REUSE_WHOLE, REUSE_DELTA or STORED_DELTA. */
  readonly kind: Uint8Array;
  /** The number of its pack in `sources`; -1 when its bytes are in `bytes`. */
  readonly source: Int32Array;
  readonly offset: Float64Array;
  readonly headerLength: Uint8Array;
  readonly end: Float64Array;
  /** The stored entry's type (EntryType). */
  readonly code: Uint8Array;
  /** An OFS_DELTA's distance back to its base's entry. */
  readonly baseDistance: Float64Array;
  readonly sources: PackSource[] = [];
  readonly #numbers = new Map<PackSource, number>();
  /** Compressed data of entries whose store gave no location. */
  readonly bytes = new Map<number, Uint8Array>();

  constructor(n: number) {
    this.kind = new Uint8Array(n);
    this.source = new Int32Array(n).fill(-1);
    this.offset = new Float64Array(n);
    this.headerLength = new Uint8Array(n);
    this.end = new Float64Array(n);
    this.code = new Uint8Array(n);
    this.baseDistance = new Float64Array(n);
  }

  /** How an item's stored form is reused (REUSE_NONE for a thin-pack base). */
  of(item: Item): number {
    return item.n >= 0 ? this.kind[item.n]! : REUSE_NONE;
  }

  sourceNumber(source: PackSource): number {
    let k = this.#numbers.get(source);
    if (k === undefined) {
      k = this.sources.length;
      this.sources.push(source);
      this.#numbers.set(source, k);
    }
    return k;
  }
}

/** A range of a source pack to copy into the output. */
interface CopyRange {
  source: PackSource;
  start: number;
  end: number;
}

/**
 * An item with every field set from the start, in one order: objects that gain optional fields
 * one by one in varying orders fall back to slow, large dictionary representations in V8.
 */
function newItem(p: PackObject, n: number): Item {
  const edge = n < 0;
  return {
    oid: p.oid,
    type: p.type,
    // as a 32-bit signed integer, always a small integer (see asSmallInteger; compared unsigned)
    nameHash: p.nameHash | 0,
    size: 0,
    base: undefined,
    baseItem: undefined,
    delta: undefined,
    z: undefined,
    zSize: 0,
    n,
    depth: 0,
    edge,
    whole: undefined,
    index: undefined,
    chainDepth: -1,
    at: -1,
  };
}

/** Longest run of consecutive source entries copied with one read. */
const MAX_COPY_RUN = 1 << 20;

/** Below these the delta search stays on one thread (a worker's start and copies would cost more). */
const PARALLEL_MIN_OBJECTS = 256;
const PARALLEL_MIN_BYTES = 4 * 1024 * 1024;
/** Chunks the candidates are cut into for sharing between the threads. */
const PARALLEL_CHUNKS = 128;

/** Below this many objects to read headers of, the worker thread reads none of them. */
const PARALLEL_MIN_HEADERS = 1024;
/** Objects in a batch of headers read by one thread or the other. */
const HEADER_BATCH = 256;

/** Whether a delta search may be shared with another thread (where one can start). */
function searchesAhead(options: PackEncoding): boolean {
  return options.deltas !== false && (options.window ?? 10) > 0 && (options.threads ?? 2) > 1;
}

/** The objects of the pack, for callers that want the list without the bytes. */
export { enumerateObjects };

export function createPack(
  store: ObjectStore,
  selection: PackSelection,
  encoding: PackEncoding = {},
): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => packStream(store, selection, encoding)[Symbol.asyncIterator](),
  };
}

/** Writes the given objects (no enumeration) as a pack. */
export function packObjects(
  store: ObjectStore,
  oids: readonly ObjectId[],
  encoding: PackEncoding = {},
): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => writeStream(store, null, oids, false, encoding)[Symbol.asyncIterator](),
  };
}

async function* packStream(
  store: ObjectStore,
  selection: PackSelection,
  options: PackEncoding,
): AsyncGenerator<Uint8Array> {
  const filtered = selection.filter !== undefined;
  // without reuse every object is searched: the delta search's worker thread starts, and opens
  // the store where it can, while the objects are counted, so that it shares the header reads and
  // the search begins on both threads at once (with reuse, few objects are searched, and the
  // worker's copy of the pack indexes would mostly be memory for nothing)
  if (options.reuse === false && searchesAhead(options)) remoteDeltaSearch()?.prepare(store);
  const serving = (store as BitmapServedStore).bitmaps;
  const walk = {
    wants: selection.wants,
    haves: selection.haves,
    shallow: selection.shallow,
    tags: selection.includeTags ? selection.tags : undefined,
    filter: selection.filter,
    signal: options.signal,
    cache: selection.cache,
  };
  if (serving && options.bitmaps !== false) {
    const b = await serving.walk(store, walk);
    if (b) {
      const haves = serving.haves(b);
      if (options.reuse !== false && options.deltas !== false) {
        // the bitmapped pack's objects by ranges, then the others
        const e = { objects: b.extra, edges: [], uninteresting: haves };
        // every object of the bitmapped pack and nothing else: the pack goes out as it is
        const whole = b.extra.length === 0 && b.count === b.pack.count && options.ofsDelta !== false;
        const { lead, ...rest } = options;
        const prefix = serving.rangeReuse(store, b, {
          ...rest,
          thin: options.thin === true && !filtered,
          ...(lead !== undefined && !whole ? { lead } : {}),
        });
        yield* writeStream(store, e, b.extra, filtered, options, prefix);
        return;
      }
      const objects = await serving.objects(b);
      yield* writeStream(store, { objects, edges: [], uninteresting: haves }, objects, filtered, options);
      return;
    }
  }
  const e = await enumerateObjects(store, {
    ...walk,
    // under a filter the client lacks what the filter left out, even below boundary commits
    edges: options.thin === true && options.deltas !== false && !filtered,
    edgeCommits: options.window ?? 10,
  });
  // git's pack reuse: the objects are exactly a stored pack's, which goes out as it is
  if (hasStoredPacks(store) && options.reuse !== false && options.deltas !== false) {
    const oids = e.objects.map((o) => o.oid);
    const stored = await findPackOf(store, oids);
    if (stored && (stored.ofsDeltas ? options.ofsDelta !== false : true)) {
      options.onStoredPack?.(oids);
      yield* stored.stream(options.signal, { borrow: options.borrow === true });
      return;
    }
  }
  yield* writeStream(store, e, e.objects, filtered, options);
}

/** Most items put first for `lead`: the work of reading a huge tree is bounded. */
const MAX_LEAD = 1 << 16;

/**
 * `commit`'s item and the items of the trees under it, the commit first, then the trees breadth
 * first (each with its delta bases before it when written); none when the commit is not sent.
 */
async function leadItems(store: ObjectStore, items: Map<ObjectId, Item>, commit: ObjectId): Promise<Item[]> {
  const head = items.get(commit);
  if (head === undefined || head.type !== 'commit') return [];
  const read = await store.read(commit);
  if (read?.type !== 'commit') return [];
  const out = [head];
  const seen = new Set<Item>();
  const queue = [parseCommitLinks(read.data).tree];
  for (let i = 0; i < queue.length && out.length < MAX_LEAD; i++) {
    const item = items.get(queue[i]!);
    if (item === undefined || seen.has(item)) continue;
    seen.add(item);
    out.push(item);
    const tree = await store.read(item.oid);
    if (tree?.type !== 'tree') continue;
    const data = tree.data;
    forEachTreeEntryRaw(data, (mode, _nameStart, _nameEnd, idAt) => {
      if (mode === 0o40000) queue.push(bytesToHex(data, idAt, idAt + 20));
    });
  }
  return out;
}

async function* writeStream(
  store: ObjectStore,
  enumeration:
    | (Pick<Enumeration, 'objects' | 'edges'> & { uninteresting: Pick<Enumeration['uninteresting'], 'has'> })
    | null,
  oids: readonly (ObjectId | PackObject)[],
  /** The selection had a filter: the receiver may lack objects below what it has. */
  filtered: boolean,
  options: PackEncoding,
  /** Entries written first, after the header (a stored pack's ranges, see pack-range-reuse.ts). */
  prefix?: PackPrefix,
): AsyncGenerator<Uint8Array> {
  const signal = options.signal;
  const deltas = options.deltas !== false;
  const reuse = options.reuse !== false;
  const ofs = options.ofsDelta !== false;
  const maxDepth = options.depth ?? 50;
  const windowSize = options.window ?? 10;
  const level = options.level ?? 6;
  const items = new Map<ObjectId, Item>();
  const order: Item[] = [];
  for (const o of oids) {
    const p: PackObject = typeof o === 'string' ? { oid: o, type: 'blob', nameHash: 0 } : o;
    if (items.has(p.oid)) continue;
    const item = newItem(p, order.length);
    items.set(p.oid, item);
    order.push(item);
  }
  // thin-pack bases: the receiver's trees and blobs at the paths we send (git's preferred bases)
  const edges = new Map<ObjectId, Item>();
  if (enumeration && enumeration.edges.length > 0) {
    const paths = new Set<number>();
    for (const item of order) if (item.type === 'blob' || item.type === 'tree') paths.add(item.nameHash);
    for (const o of enumeration.edges) {
      if (!paths.has(o.nameHash | 0) || items.has(o.oid) || edges.has(o.oid)) continue;
      edges.set(o.oid, newItem(o, -1));
    }
  }
  // the delta search's worker thread (shared by the process) starts loading meanwhile, where the
  // search may be shared: asking for it begins no job
  if (searchesAhead(options) && order.length >= PARALLEL_MIN_OBJECTS) remoteDeltaSearch();
  // without reuse every object's type and size come from its entry headers: the worker thread
  // reads them too, where it opens the store itself, batch by batch from the first while this
  // thread reads batches from the last back (see SharedHeaderReads), until they meet: a worker
  // still starting takes none, and this thread waits for none; a worker reading faster (its
  // reads are synchronous, this thread's may wait for the thread pool) takes more
  const shared =
    !reuse && searchesAhead(options) && order.length >= PARALLEL_MIN_HEADERS
      ? remoteDeltaSearch()?.headers(
          store,
          order.map((i) => i.oid),
          HEADER_BATCH,
        )
      : undefined;
  const split = shared ? 0 : order.length;
  // 1. stored representations: where each lies, in columns, read again when written
  let done = 0;
  const reused = new Reused(order.length);
  const located: StoredEntries | undefined =
    reuse && hasLocateStored(store)
      ? await locateStoredOf(
          store,
          order.map((i) => i.oid),
          signal,
        )
      : undefined;
  // an OFS_DELTA's base among the pack's objects, by its entry's offset (no id is made)
  const byOffset = located && deltas ? located.sources.map(() => new Map<number, number>()) : undefined;
  if (located && byOffset) {
    for (let n = 0; n < order.length; n++) {
      const p = located.pack[n]!;
      if (p >= 0) byOffset[p]!.set(located.offset[n]!, n);
    }
  }
  /** A stored delta's base when the delta can go out: in this pack, or (thin) the receiver's. */
  const reusableBase = (base: ObjectId): ObjectId | undefined =>
    items.has(base) || (options.thin && !filtered && enumeration?.uninteresting.has(base)) ? base : undefined;
  /** Sets an item's type and size from a header read for it. */
  const setHeader = (item: Item, h: { type: ObjectType; size: number } | undefined) => {
    if (!h) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
    item.type = h.type;
    item.size = asSmallInteger(h.size);
  };
  /**
   * Sets an item's type and size from its entry headers (read by this thread): a promise only
   * when they must be waited for, so that most of a loop over every object does not suspend.
   */
  const readHeader = (item: Item): Promise<void> | undefined => {
    const h = readHeaderSyncOf(store, item.oid);
    if (h) {
      setHeader(item, h);
      return undefined;
    }
    return readHeaderOf(store, item.oid).then((r) => setHeader(item, r));
  };
  for (let n = 0; n < split; n++) {
    const item = order[n]!;
    if ((n & 255) === 0) throwIfAborted(signal);
    const p = located ? located.pack[n]! : -1;
    if (located && p >= 0) {
      const code = located.code[n]!;
      // a double read from the column would change the representation of the field
      item.size = asSmallInteger(located.size[n]!);
      if (isWholeEntryType(code)) {
        item.type = CODE_TYPES[code]!;
        reused.kind[n] = REUSE_WHOLE;
      } else if (deltas) {
        const b = code === EntryType.OFS_DELTA ? byOffset![p]!.get(located.baseOffset[n]!) : undefined;
        item.base = b !== undefined ? order[b]!.oid : reusableBase(located.baseOid(n));
        item.baseItem = b !== undefined ? order[b] : item.base !== undefined ? items.get(item.base) : undefined;
        reused.kind[n] = item.base !== undefined ? REUSE_DELTA : STORED_DELTA;
      } else {
        reused.kind[n] = STORED_DELTA;
      }
      reused.source[n] = reused.sourceNumber(located.sources[p]!);
      reused.offset[n] = located.offset[n]!;
      reused.headerLength[n] = located.headerLength[n]!;
      reused.end[n] = located.end[n]!;
      reused.code[n] = code;
      if (code === EntryType.OFS_DELTA) reused.baseDistance[n] = located.offset[n]! - located.baseOffset[n]!;
      continue;
    }
    const raw = reuse ? await readRawOf(store, item.oid) : undefined;
    if (raw) {
      item.size = asSmallInteger(raw.size);
      if (raw.kind === 'whole') {
        item.type = raw.type;
        reused.kind[n] = REUSE_WHOLE;
      } else {
        item.base = deltas ? reusableBase(raw.base) : undefined;
        item.baseItem = item.base !== undefined ? items.get(item.base) : undefined;
        reused.kind[n] = item.base !== undefined ? REUSE_DELTA : STORED_DELTA;
      }
      const stored = raw.stored;
      if (stored) {
        // only the location is kept: the bytes may be views of buffers that would otherwise
        // stay pinned until the end
        reused.source[n] = reused.sourceNumber(stored.source);
        reused.offset[n] = stored.offset;
        reused.headerLength[n] = stored.dataOffset - stored.offset;
        reused.end[n] = stored.end;
        reused.code[n] = stored.code;
        reused.baseDistance[n] = stored.baseDistance ?? 0;
      } else if (reused.kind[n] !== STORED_DELTA) {
        reused.bytes.set(n, raw.compressed);
      }
    } else {
      const wait = readHeader(item);
      if (wait) await wait;
    }
  }
  if (shared) {
    const batchEnd = (b: number) => Math.min(order.length, split + (b + 1) * HEADER_BATCH);
    let b = shared.batches - 1;
    for (; b >= 0 && shared.claim(b); b--) {
      throwIfAborted(signal);
      for (let n = split + b * HEADER_BATCH; n < batchEnd(b); n++) {
        const wait = readHeader(order[n]!);
        if (wait) await wait;
      }
    }
    // the worker took batches 0..b: read there (or here, when it failed or did not find one)
    const got = b >= 0 ? await shared.done().catch(() => undefined) : undefined;
    for (let n = split; b >= 0 && n < batchEnd(b); n++) {
      const item = order[n]!;
      if ((n & 255) === 0) throwIfAborted(signal);
      const code = got?.types[n - split] ?? 0;
      if (code === 0) {
        const wait = readHeader(item);
        if (wait) await wait;
        continue;
      }
      item.type = CODE_TYPES[code]!;
      item.size = asSmallInteger(got!.sizes[n - split]!);
    }
  }
  // reused deltas: base in this pack (or one the receiver has when thin: one of the boundary
  // commits' trees and blobs, as git reuses deltas against what its bitmap says the receiver
  // has), depth within limit
  const reusedDepth = (item: Item): number => {
    const chain: Item[] = [];
    let cur: Item | undefined = item;
    let d = 0;
    while (cur !== undefined && reused.of(cur) === REUSE_DELTA && cur.base !== undefined) {
      const memo = cur.chainDepth;
      if (memo >= 0) {
        d = memo;
        break;
      }
      if (chain.length > maxDepth + 1 || chain.includes(cur)) {
        d = Number.POSITIVE_INFINITY;
        break;
      }
      chain.push(cur);
      cur = cur.baseItem;
    }
    for (let i = chain.length - 1; i >= 0; i--) chain[i]!.chainDepth = ++d;
    return item.chainDepth >= 0 ? item.chainDepth : d;
  };
  if (deltas) {
    for (const item of order) {
      if (reused.kind[item.n] !== REUSE_DELTA) continue;
      const d = reusedDepth(item);
      if (d > maxDepth) {
        item.base = undefined;
        item.baseItem = undefined;
        reused.kind[item.n] = STORED_DELTA;
      } else {
        item.depth = d;
      }
    }
  }
  // objects given by id alone: the type of a reused delta is its chain's base type
  if (!enumeration) {
    for (const item of order) {
      const kind = reused.kind[item.n];
      if (kind !== REUSE_DELTA && kind !== STORED_DELTA) continue;
      const h = await readHeaderOf(store, item.oid);
      if (!h) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
      item.type = h.type;
      // a delta not reused is searched and written as the object it makes
      if (kind === STORED_DELTA) item.size = asSmallInteger(h.size);
    }
  }
  // a delta not reused: its entry is of no further use
  for (let n = 0; n < order.length; n++) {
    if (reused.kind[n] === STORED_DELTA) reused.kind[n] = REUSE_NONE;
  }
  // 2. delta search over the objects without a stored delta
  if (deltas && windowSize > 0) {
    const candidates: Item[] = order.filter(
      (i) => reused.kind[i.n] !== REUSE_DELTA && (i.type === 'blob' || i.type === 'tree') && i.size >= 32,
    );
    for (const e of edges.values()) {
      const h = hasHeaderReads(store) ? await readHeaderOf(store, e.oid) : undefined;
      if (h) {
        e.type = h.type;
        e.size = asSmallInteger(h.size);
        if (e.size >= 32 && (e.type === 'blob' || e.type === 'tree')) candidates.push(e);
      }
    }
    candidates.sort(
      (a, b) =>
        TYPE_CODES[a.type] - TYPE_CODES[b.type] ||
        (a.nameHash >>> 0) - (b.nameHash >>> 0) ||
        b.size - a.size ||
        (a.edge === b.edge ? 0 : a.edge ? -1 : 1),
    );
    for (const c of candidates) c.whole = reused.of(c) === REUSE_WHOLE;
    /** The object's bytes without awaiting where the store can (most reads here). */
    const readNow = (item: Item): Uint8Array | undefined => store.readSync?.(item.oid)?.data;
    /** The object's bytes where `readNow` had none (its sync read is not tried again). */
    const readData = async (item: Item): Promise<Uint8Array> => {
      const obj = await store.read(item.oid);
      if (!obj) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
      return obj.data;
    };
    // part of the candidates searched on another thread, where one can start (git's threads):
    // the sorted list is cut into chunks at name boundaries; this thread takes chunks from the
    // front and hands chunks from the back to the worker whenever its queue runs low, so the
    // two finish together whatever each chunk costs
    let remote: RemoteDeltaJob | undefined;
    const chunks: [number, number][] = [];
    if ((options.threads ?? 2) > 1 && candidates.length >= PARALLEL_MIN_OBJECTS) {
      let total = 0;
      // only objects that will be searched count (reused whole objects are not tried against each other)
      let searched = 0;
      for (const c of candidates) {
        total += c.size + 256;
        if (!c.whole && !c.edge) searched += c.size + 256;
      }
      remote =
        searched >= PARALLEL_MIN_BYTES
          ? remoteDeltaSearch()?.begin({
              window: windowSize,
              depth: maxDepth,
              level,
              wholeBudget: 64 * 1024 * 1024,
              store,
            })
          : undefined;
      if (remote) {
        const per = total / PARALLEL_CHUNKS;
        let from = 0;
        let acc = 0;
        for (let i = 0; i < candidates.length; i++) {
          acc += candidates[i]!.size + 256;
          const next = candidates[i + 1];
          const boundary = !next || next.type !== candidates[i]!.type || next.nameHash !== candidates[i]!.nameHash;
          if (boundary && (acc >= per || !next)) {
            chunks.push([from, i + 1]);
            from = i + 1;
            acc = 0;
          }
        }
      }
    }
    if (chunks.length === 0) chunks.push([0, candidates.length]);
    const sendChunk = async (job: RemoteDeltaJob, [from, to]: [number, number]) => {
      let batch: RemoteDeltaObject[] = [];
      let batchBytes = 0;
      for (let i = from; i < to; i++) {
        throwIfAborted(signal);
        const c = candidates[i]!;
        // where the worker reads the objects itself, their ids go; else their bytes, copied into
        // the batch's buffer by `add` (the store's buffers are not transferred)
        const data = job.reads ? undefined : (readNow(c) ?? (await readData(c)));
        batch.push({ i, oid: c.oid, type: c.type, size: c.size, whole: c.whole === true, edge: c.edge === true, data });
        batchBytes += data?.length ?? c.size;
        if (batch.length >= 256 || batchBytes >= 1 << 20) {
          job.add(batch, from, false);
          batch = [];
          batchBytes = 0;
        }
      }
      job.add(batch, from, true);
    };
    let k = 0;
    const toCompress: { i: number; data: Uint8Array; delta?: boolean }[] = [];
    let toCompressBytes = 0;
    const flushCompress = () => {
      if (remote && toCompress.length > 0) remote.compress(toCompress);
      // emptied, not replaced: `compress` is done with it, and a fresh list would change its
      // kind of elements again on the first push (V8 then drops the search's optimized code)
      toCompress.length = 0;
      toCompressBytes = 0;
    };
    const searchHere = async (from: number, to: number) => {
      const window = new DeltaWindow<Item>(windowSize, maxDepth);
      for (let c = from; c < to; c++) {
        const target = candidates[c]!;
        throwIfAborted(signal);
        if (++k % 256 === 0) options.onProgress?.({ phase: 'compressing', done: k, total: candidates.length });
        if (target.edge || !window.hasUsable(target)) {
          window.push(target, undefined, undefined);
          continue;
        }
        const data = readNow(target) ?? (await readData(target));
        for (const base of window.unindexed(target, data.length)) {
          window.provide(base, readNow(base) ?? (await readData(base)));
        }
        const found = window.search(target, data);
        if (found) {
          target.base = found.base.oid;
          target.baseItem = found.base;
          target.delta = found.delta;
          if (remote) {
            // deflated by the worker meanwhile (copied: this one stays for a failed worker)
            toCompress.push({ i: c, data: found.delta, delta: true });
            toCompressBytes += found.delta.length;
          }
        } else if (remote && !target.whole) {
          // to be written whole: the worker deflates it meanwhile
          toCompress.push({ i: c, data, delta: false });
          toCompressBytes += data.length;
          if (toCompressBytes >= 1 << 20) flushCompress();
        }
        window.push(target, data, found?.base);
      }
      window.clear();
      flushCompress();
    };
    /**
     * Objects written whole that no search reads (commits, tags, small objects), deflated by the
     * worker meanwhile: numbered after the candidates in its results.
     */
    const extras: Item[] = [];
    const sendExtras = async (job: RemoteDeltaJob) => {
      const searched = new Uint8Array(order.length);
      for (const c of candidates) if (c.n >= 0) searched[c.n] = 1;
      let batch: RemoteCompressObject[] = [];
      let batchBytes = 0;
      for (const item of order) {
        if (searched[item.n] || reused.kind[item.n] !== REUSE_NONE || item.base !== undefined) continue;
        throwIfAborted(signal);
        // ids where the worker reads the objects itself, else bytes (copied by `compress`)
        const data = job.reads ? undefined : (readNow(item) ?? (await readData(item)));
        batch.push({ i: candidates.length + extras.length, oid: item.oid, data });
        extras.push(item);
        batchBytes += data?.length ?? item.size;
        if (batchBytes >= 1 << 20) {
          job.compress(batch);
          batch = [];
          batchBytes = 0;
        }
      }
      if (batch.length > 0) job.compress(batch);
    };
    const given: [number, number][] = [];
    try {
      let front = 0;
      let back = chunks.length;
      if (remote) {
        // the worker's first chunks, then one whenever fewer than two are queued
        for (let n = 0; n < 2 && back - front > 1; n++) {
          given.push(chunks[--back]!);
          await sendChunk(remote, chunks[back]!);
        }
        await sendExtras(remote);
      }
      while (front < back) {
        if (remote) {
          // let the worker's answers in
          await new Promise<void>((resolve) => setTimeout(resolve, 0));
          while (remote.queuedChunks() < 2 && back - front > 1) {
            given.push(chunks[--back]!);
            await sendChunk(remote, chunks[back]!);
          }
        }
        const [from, to] = chunks[front++]!;
        await searchHere(from, to);
      }
    } catch (error) {
      remote?.cancel();
      throw error;
    }
    if (remote) {
      let results: Awaited<ReturnType<RemoteDeltaJob['finish']>> | undefined;
      try {
        results = await remote.finish();
      } catch {
        // the worker failed: this thread searches its part too (and deflates everything)
        remote = undefined;
        for (const [from, to] of given) await searchHere(from, to);
      }
      for (const r of results ?? []) {
        const item = r.i < candidates.length ? candidates[r.i]! : extras[r.i - candidates.length]!;
        if (r.base >= 0) {
          item.base = candidates[r.base]!.oid;
          item.baseItem = candidates[r.base];
          item.depth = r.depth;
        }
        item.z = r.z;
        item.delta = undefined;
        item.zSize = r.size;
      }
      options.onProgress?.({ phase: 'compressing', done: candidates.length, total: candidates.length });
    }
  }
  // 3. write: bases before deltas
  const total = order.length;
  const header = new Uint8Array(12);
  header.set([0x50, 0x41, 0x43, 0x4b]);
  const hv = new DataView(header.buffer);
  hv.setUint32(4, 2);
  hv.setUint32(8, total + (prefix?.count ?? 0));
  const hash = createSha1();
  let offset = 0;
  // pieces gathered into chunks, always copied into fresh buffers: pieces may be views of the
  // store's caches, and consumers may transfer what they get; ranges of source packs are read
  // straight into the chunk when it is cut
  let pending: (Uint8Array | CopyRange)[] = [];
  let pendingBytes = 0;
  /** Chunks ready to go out, in order. */
  const ready: Uint8Array[] = [];
  /** Makes the pending pieces one chunk, with `extra` bytes of room after them. */
  const cut = async (extra = 0): Promise<Uint8Array> => {
    const chunk = new Uint8Array(pendingBytes + extra);
    let at = 0;
    for (const piece of pending) {
      if (piece instanceof Uint8Array) {
        chunk.set(piece, at);
        at += piece.length;
      } else {
        const n = piece.end - piece.start;
        await piece.source.readInto(piece.start, chunk.subarray(at, at + n));
        at += n;
      }
    }
    pending = [];
    pendingBytes = 0;
    return chunk;
  };
  const emit = (bytes: Uint8Array) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
    offset += bytes.length;
  };
  /** A range of a source pack, joined to the previous one when it follows it there. */
  const emitRange = (source: PackSource, start: number, end: number) => {
    const last = pending[pending.length - 1];
    if (
      last !== undefined &&
      !(last instanceof Uint8Array) &&
      last.source === source &&
      last.end === start &&
      end - last.start <= MAX_COPY_RUN
    ) {
      last.end = end;
    } else {
      pending.push({ source, start, end });
    }
    pendingBytes += end - start;
    offset += end - start;
  };
  /**
   * Bytes this writer allocated (a deflate output): a large one goes out as its own chunk
   * instead of being copied into the next one, when it fills most of its buffer (a view would
   * otherwise keep, or transfer, a much larger buffer).
   */
  const emitOwned = async (bytes: Uint8Array) => {
    if (bytes.length < 16 * 1024 || bytes.length * 2 < bytes.buffer.byteLength) return emit(bytes);
    if (pendingBytes > 0) ready.push(await cut());
    ready.push(bytes);
    offset += bytes.length;
  };
  emit(header);
  if (prefix) {
    const first = await cut();
    hash.update(first);
    yield first;
    for await (const chunk of prefix.chunks(offset)) {
      hash.update(chunk);
      offset += chunk.length;
      yield chunk;
    }
  }
  const writeItem = async (item: Item) => {
    const at = offset;
    item.at = at;
    const baseOid = item.base;
    const n = item.n;
    const kind = reused.of(item);
    /** The stored entry's pack, when it is copied from there. */
    const source = kind !== REUSE_NONE && reused.source[n]! >= 0 ? reused.sources[reused.source[n]!] : undefined;
    if (baseOid !== undefined) {
      const written = item.baseItem?.at ?? -1;
      const baseOffset = written >= 0 ? written : undefined;
      const useOfs = ofs && baseOffset !== undefined;
      if (kind === REUSE_DELTA) {
        const code = reused.code[n];
        // the stored entry as it is, when its header says the same (same base reference)
        if (
          source &&
          ((code === EntryType.OFS_DELTA && useOfs && reused.baseDistance[n] === at - baseOffset) ||
            (code === EntryType.REF_DELTA && !useOfs))
        ) {
          emitRange(source, reused.offset[n]!, reused.end[n]!);
          return;
        }
        emit(encodeEntryHeader(useOfs ? EntryType.OFS_DELTA : EntryType.REF_DELTA, item.size));
        emit(useOfs ? encodeOfsOffset(at - baseOffset) : hexToBytes(baseOid));
        if (source) emitRange(source, reused.offset[n]! + reused.headerLength[n]!, reused.end[n]!);
        else emit(reused.bytes.get(n)!);
        return;
      }
      if (item.z) {
        emit(encodeEntryHeader(useOfs ? EntryType.OFS_DELTA : EntryType.REF_DELTA, item.zSize));
        emit(useOfs ? encodeOfsOffset(at - baseOffset) : hexToBytes(baseOid));
        // a view of the worker's shared buffer: copied into the chunk
        emit(item.z);
        item.z = undefined;
        return;
      }
      const compressed = await deflateEntry(item.delta!, level);
      emit(encodeEntryHeader(useOfs ? EntryType.OFS_DELTA : EntryType.REF_DELTA, item.delta!.length));
      emit(useOfs ? encodeOfsOffset(at - baseOffset) : hexToBytes(baseOid));
      item.delta = undefined;
      await emitOwned(compressed);
      return;
    }
    if (kind === REUSE_WHOLE) {
      if (source) emitRange(source, reused.offset[n]!, reused.end[n]!);
      else {
        emit(encodeEntryHeader(TYPE_CODES[item.type], item.size));
        emit(reused.bytes.get(n)!);
      }
      return;
    }
    if (item.z) {
      emit(encodeEntryHeader(TYPE_CODES[item.type], item.zSize));
      emit(item.z);
      item.z = undefined;
      return;
    }
    const obj = await store.read(item.oid);
    if (!obj) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
    emit(encodeEntryHeader(TYPE_CODES[obj.type as ObjectType], obj.data.length));
    await emitOwned(await deflateEntry(obj.data, level));
  };
  const first = options.lead !== undefined && prefix === undefined ? await leadItems(store, items, options.lead) : [];
  for (const item of first.length > 0 ? [...first, ...order] : order) {
    throwIfAborted(signal);
    if (item.at >= 0) continue;
    // the chain of bases not yet written (thin-pack bases are not), deepest first
    const chain: Item[] = [item];
    let cur = item;
    for (let b = cur.baseItem; b !== undefined && b.n >= 0 && b.at < 0 && !chain.includes(b); b = cur.baseItem) {
      chain.push(b);
      cur = b;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      await writeItem(chain[i]!);
      if (++done % 1024 === 0) options.onProgress?.({ phase: 'writing', done, total });
    }
    if (pendingBytes >= 64 * 1024) ready.push(await cut());
    while (ready.length > 0) {
      const chunk = ready.shift()!;
      hash.update(chunk);
      yield chunk;
    }
  }
  for (const chunk of ready) {
    hash.update(chunk);
    yield chunk;
  }
  const n = pendingBytes;
  const out = await cut(20);
  hash.update(out.subarray(0, n));
  out.set(hash.digest(), n);
  yield out;
}
