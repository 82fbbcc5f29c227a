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
import { createSha1 } from '#sha1';
import { deflate } from '#zlib';
import { DeltaIndex, IndexTablePool } from './delta.js';
import { PackError, throwIfAborted } from './errors.js';
import { hexToBytes, type ObjectId, type ObjectType, TYPE_CODES } from './object.js';
import { encodeEntryHeader, encodeOfsOffset } from './pack-import.js';
import type { ObjectStore, RawEntry } from './store.js';
import { type CommitCache, enumerateObjects, type PackObject } from './walk.js';

export interface CreatePackOptions {
  wants: readonly ObjectId[];
  haves?: readonly ObjectId[];
  /** Commits whose parents are not walked (shallow boundaries). */
  shallow?: readonly ObjectId[];
  /** Allow REF_DELTA against objects the receiver has (from `haves`). */
  thin?: boolean;
  /** OFS_DELTA for bases inside the pack (default true). */
  ofsDelta?: boolean;
  /** Compute and reuse deltas (default true). */
  deltas?: boolean;
  /** Reuse deltas and compressed data stored in the source's packs (default true). */
  reuse?: boolean;
  window?: number;
  depth?: number;
  /** Include annotated tags from `tags` that point at sent objects (include-tag). */
  includeTags?: boolean;
  /** Annotated tag ids to consider with `includeTags` (the caller knows the refs). */
  tags?: readonly ObjectId[];
  /** zlib level (default 6, like git's core.compression -1). */
  level?: number;
  signal?: AbortSignal;
  onProgress?: (progress: { phase: 'counting' | 'compressing' | 'writing'; done: number; total: number }) => void;
  cache?: CommitCache;
}

interface Item extends PackObject {
  size: number;
  /** Set when the object is stored as a delta in the output. */
  base?: ObjectId;
  delta?: Uint8Array;
  raw?: RawEntry;
  depth: number;
  /** Only a thin-pack base: not written. */
  edge?: boolean;
}

/** The objects of the pack, for callers that want the list without the bytes. */
export { enumerateObjects };

export function createPack(store: ObjectStore, options: CreatePackOptions): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => packStream(store, options)[Symbol.asyncIterator](),
  };
}

/** Writes the given objects (no enumeration) as a pack. */
export function packObjects(
  store: ObjectStore,
  oids: readonly ObjectId[],
  options: Omit<CreatePackOptions, 'wants' | 'haves' | 'shallow' | 'includeTags' | 'tags'> = {},
): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => writeStream(store, null, oids, options)[Symbol.asyncIterator](),
  };
}

async function* packStream(store: ObjectStore, options: CreatePackOptions): AsyncGenerator<Uint8Array> {
  const e = await enumerateObjects(store, {
    wants: options.wants,
    haves: options.haves,
    shallow: options.shallow,
    tags: options.includeTags ? options.tags : undefined,
    edges: options.thin === true && options.deltas !== false,
    signal: options.signal,
    cache: options.cache,
  });
  // git's pack reuse: the objects are exactly a stored pack's, which goes out as it is
  if (store.findPack && options.reuse !== false && options.deltas !== false) {
    const stored = await store.findPack(e.objects.map((o) => o.oid));
    if (stored && (stored.ofsDeltas ? options.ofsDelta !== false : true)) {
      yield* stored.stream(options.signal);
      return;
    }
  }
  yield* writeStream(store, e, e.objects, options);
}

async function* writeStream(
  store: ObjectStore,
  enumeration: { objects: PackObject[]; edges: PackObject[] } | null,
  oids: readonly (ObjectId | PackObject)[],
  options: Omit<CreatePackOptions, 'wants'>,
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
    const item: Item = { ...p, size: 0, depth: 0 };
    items.set(p.oid, item);
    order.push(item);
  }
  // thin-pack bases: the receiver's trees and blobs at the paths we send (git's preferred bases)
  const edges = new Map<ObjectId, Item>();
  if (enumeration && enumeration.edges.length > 0) {
    const paths = new Set<number>();
    for (const item of order) if (item.type === 'blob' || item.type === 'tree') paths.add(item.nameHash);
    for (const o of enumeration.edges) {
      if (!paths.has(o.nameHash) || items.has(o.oid) || edges.has(o.oid)) continue;
      edges.set(o.oid, { ...o, size: 0, depth: 0, edge: true });
    }
  }
  // 1. stored representations
  let done = 0;
  for (const item of order) {
    throwIfAborted(signal);
    const raw = reuse && store.readRaw ? await store.readRaw(item.oid) : undefined;
    if (raw) {
      item.raw = raw;
      item.size = raw.size;
      if (raw.kind === 'whole') item.type = raw.type;
    } else {
      const h = store.readHeader ? await store.readHeader(item.oid) : await store.read(item.oid);
      if (!h) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
      item.type = h.type;
      item.size = 'size' in h ? h.size : h.data.length;
    }
  }
  // reused deltas: base in this pack (or known to the receiver when thin), depth within limit
  const depthMemo = new Map<ObjectId, number>();
  const reusedDepth = (item: Item): number => {
    const chain: Item[] = [];
    let cur: Item | undefined = item;
    let d = 0;
    while (cur?.raw?.kind === 'delta' && cur.base !== undefined) {
      const memo = depthMemo.get(cur.oid);
      if (memo !== undefined) {
        d = memo;
        break;
      }
      if (chain.length > maxDepth + 1 || chain.includes(cur)) {
        d = Number.POSITIVE_INFINITY;
        break;
      }
      chain.push(cur);
      cur = items.get(cur.base);
    }
    for (let i = chain.length - 1; i >= 0; i--) depthMemo.set(chain[i]!.oid, ++d);
    return depthMemo.get(item.oid) ?? d;
  };
  if (deltas) {
    for (const item of order) {
      const raw = item.raw;
      if (raw?.kind !== 'delta') continue;
      if (items.has(raw.base) || (options.thin && edges.has(raw.base))) item.base = raw.base;
    }
    for (const item of order) {
      if (item.raw?.kind === 'delta' && item.base !== undefined) {
        const d = reusedDepth(item);
        if (d > maxDepth) item.base = undefined;
        else item.depth = d;
      }
    }
  }
  for (const item of order) {
    if (item.raw?.kind === 'delta' && item.base === undefined) item.raw = undefined;
  }
  // objects given by id alone: the type of a reused delta is its chain's base type
  if (!enumeration) {
    for (const item of order) {
      if (item.raw?.kind !== 'delta') continue;
      const h = store.readHeader ? await store.readHeader(item.oid) : await store.read(item.oid);
      if (!h) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
      item.type = h.type;
    }
  }
  // 2. delta search over the objects without a stored delta
  if (deltas && windowSize > 0) {
    const candidates: Item[] = order.filter(
      (i) => i.raw?.kind !== 'delta' && (i.type === 'blob' || i.type === 'tree') && i.size >= 32,
    );
    for (const e of edges.values()) {
      const h = store.readHeader ? await store.readHeader(e.oid) : undefined;
      if (h) {
        e.type = h.type;
        e.size = h.size;
        if (e.size >= 32 && (e.type === 'blob' || e.type === 'tree')) candidates.push(e);
      }
    }
    candidates.sort(
      (a, b) =>
        TYPE_CODES[a.type] - TYPE_CODES[b.type] ||
        a.nameHash - b.nameHash ||
        b.size - a.size ||
        (a.edge === b.edge ? 0 : a.edge ? -1 : 1),
    );
    interface Slot {
      item: Item;
      index?: DeltaIndex;
    }
    const window: Slot[] = [];
    const pool = new IndexTablePool();
    const readData = async (item: Item): Promise<Uint8Array> => {
      const obj = store.readSync?.(item.oid) ?? (await store.read(item.oid));
      if (!obj) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
      return obj.data;
    };
    let k = 0;
    for (const target of candidates) {
      throwIfAborted(signal);
      if (++k % 256 === 0) options.onProgress?.({ phase: 'compressing', done: k, total: candidates.length });
      const slot: Slot = { item: target };
      const usable = (base: Item) =>
        base.type === target.type &&
        base.depth < maxDepth &&
        // both stored whole in the source's packs: the repack that wrote them already tried (as git does)
        !(target.raw?.kind === 'whole' && base.raw?.kind === 'whole');
      let bestAt = -1;
      if (!target.edge && target.base === undefined && window.some((w) => usable(w.item))) {
        const data = await readData(target);
        const n = data.length;
        let best: Uint8Array | undefined;
        let bestBase: Item | undefined;
        for (let w = window.length - 1; w >= 0; w--) {
          const base = window[w]!.item;
          if (!usable(base)) continue;
          const bsize = base.size;
          if (n < bsize / 32) continue;
          // git's try_delta: half the target at most, less for deep bases, so that long chains
          // only grow for deltas worth it; never more than the best delta so far
          const refDepth = bestBase ? bestBase.depth + 1 : 1;
          let max = Math.floor(((Math.floor(n / 2) - 20) * (maxDepth - base.depth)) / (maxDepth - refDepth + 1));
          if (best) max = Math.min(max, best.length - 1);
          if (max <= 0 || Math.abs(n - bsize) >= max) continue;
          const ws = window[w]!;
          if (!ws.index) ws.index = new DeltaIndex(await readData(base), pool);
          const d = ws.index.createDelta(data, max);
          if (d && (!best || d.length < best.length)) {
            best = d;
            bestBase = base;
            bestAt = w;
          }
        }
        if (best && bestBase) {
          target.base = bestBase.oid;
          target.delta = best;
          target.depth = bestBase.depth + 1;
        }
        // a target at the depth limit cannot be a base: it takes no window slot (as git does)
        if (target.depth < maxDepth) slot.index = new DeltaIndex(data, pool);
      }
      if (target.depth >= maxDepth) continue;
      window.push(slot);
      // the best base moves to the newest end, after the target: it stays longest and is tried
      // first for the next object (git's find_deltas)
      if (bestAt >= 0) window.push(window.splice(bestAt, 1)[0]!);
      if (window.length > windowSize) window.shift()!.index?.release();
    }
  }
  // 3. write: bases before deltas
  const total = order.length;
  const header = new Uint8Array(12);
  header.set([0x50, 0x41, 0x43, 0x4b]);
  const hv = new DataView(header.buffer);
  hv.setUint32(4, 2);
  hv.setUint32(8, total);
  const hash = createSha1();
  const offsets = new Map<ObjectId, number>();
  let offset = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  /** Chunks ready to go out, in order. */
  const ready: Uint8Array[] = [];
  const emit = (bytes: Uint8Array) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
    offset += bytes.length;
  };
  /**
   * Bytes this writer allocated (a deflate output): a large one goes out as its own chunk
   * instead of being copied into the next one, when it fills most of its buffer (a view would
   * otherwise keep, or transfer, a much larger buffer).
   */
  const emitOwned = (bytes: Uint8Array) => {
    if (bytes.length < 16 * 1024 || bytes.length * 2 < bytes.buffer.byteLength) return emit(bytes);
    if (pendingBytes > 0) {
      ready.push(concatChunks(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    }
    ready.push(bytes);
    offset += bytes.length;
  };
  emit(header);
  const writeItem = async (item: Item) => {
    const at = offset;
    offsets.set(item.oid, at);
    const baseOid = item.base;
    if (baseOid !== undefined) {
      const baseOffset = offsets.get(baseOid);
      const useOfs = ofs && baseOffset !== undefined;
      let compressed: Uint8Array;
      let size: number;
      if (item.raw?.kind === 'delta') {
        compressed = item.raw.compressed;
        size = item.raw.size;
      } else {
        compressed = deflate(item.delta!, level);
        size = item.delta!.length;
        item.delta = undefined;
      }
      emit(encodeEntryHeader(useOfs ? 6 : 7, size));
      emit(useOfs ? encodeOfsOffset(at - baseOffset) : hexToBytes(baseOid));
      if (item.raw?.kind === 'delta') emit(compressed);
      else emitOwned(compressed);
      return;
    }
    if (item.raw?.kind === 'whole') {
      emit(encodeEntryHeader(TYPE_CODES[item.raw.type], item.raw.size));
      emit(item.raw.compressed);
      return;
    }
    const obj = await store.read(item.oid);
    if (!obj) throw new PackError('OBJECT_NOT_FOUND', `object ${item.oid} is missing`);
    emit(encodeEntryHeader(TYPE_CODES[obj.type as ObjectType], obj.data.length));
    emitOwned(deflate(obj.data, level));
  };
  for (const item of order) {
    throwIfAborted(signal);
    if (offsets.has(item.oid)) continue;
    // the chain of bases not yet written, deepest first
    const chain: Item[] = [item];
    let cur = item;
    while (cur.base !== undefined && !offsets.has(cur.base)) {
      const b = items.get(cur.base);
      if (!b || chain.includes(b)) break;
      chain.push(b);
      cur = b;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      await writeItem(chain[i]!);
      if (++done % 1024 === 0) options.onProgress?.({ phase: 'writing', done, total });
    }
    if (pendingBytes >= 64 * 1024) {
      ready.push(concatChunks(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    }
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
  const last = concatChunks(pending, pendingBytes);
  hash.update(last);
  const trailer = hash.digest();
  const out = new Uint8Array(last.length + 20);
  out.set(last);
  out.set(trailer, last.length);
  yield out;
}

/** Always a fresh buffer: chunks may be views of the store's caches, and consumers may transfer what they get. */
function concatChunks(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
