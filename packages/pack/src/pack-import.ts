/**
 * importPack: reads a pack stream, resolves OFS/REF deltas (iteratively, with a bounded cache of
 * bases; REF bases that arrive later are waited for), completes thin packs from the store like
 * `git index-pack --fix-thin` (missing bases appended as whole objects, count and trailer
 * rewritten), verifies the trailer, and only then hands the objects to the store: a pack that
 * fails anywhere changes nothing in the store.
 *
 * Stores that keep packs and offer `beginPack` (FsObjectStore over an fs with positional reads
 * and writes) get the pack written to a temporary file as it arrives; entries are read back by
 * position when a delta needs a base no longer cached, so memory is bounded by the objects
 * (and a constant cache), not by the pack. The file is moved into place, `.pack` then `.idx`,
 * only once the pack checks out, and removed otherwise.
 */
import { createSha1 } from '#sha1';
import { crc32, deflate, inflateOne } from '#zlib';
import { applyDelta } from './delta.js';
import { ChainTips } from './delta-chain-cache.js';
import { encodeEntryHeader } from './entry-header.js';
import { PackError, throwIfAborted } from './errors.js';
import type { IndexEntry } from './idx.js';
import { bytesToHex, hashObjectSync, type ObjectId, type ObjectType, objectHeader, TYPE_CODES } from './object.js';
import { PackBuffer } from './pack-buffer.js';
import { type PackEntry, type PackLimits, PackReader } from './pack-reader.js';
import { slabAllocator } from './slab.js';
import type { ObjectStore, PackSpool } from './store.js';

export interface ImportOptions {
  /** Complete a thin pack with bases from the store (git index-pack --fix-thin). */
  fixThin?: boolean;
  limits?: PackLimits;
  signal?: AbortSignal;
  /** Objects above this size are inflated in pieces (default 8 MiB). */
  streamThreshold?: number;
  /**
   * Bytes of resolved objects kept for delta resolution (default 64 MiB); as much again may hold
   * the latest results too large for that cache (the tips of delta chains), and always the last.
   */
  cacheBytes?: number;
  onProgress?: (progress: { objects: number; total: number; phase: 'receiving' | 'resolving' }) => void;
  /**
   * The store's `beginPack()`, called by the caller ahead of the pack (while it is still on its
   * way, so the temporary file is ready when the first bytes come). It must be this store's;
   * `importPack` then owns it: it commits it, or aborts it when the import fails.
   */
  spool?: Promise<PackSpool | undefined>;
}

export interface ImportResult {
  /** The stored pack's checksum (after thin completion, if any). */
  hash: string;
  /** Every object of the pack (and appended thin bases), in pack order. */
  objects: ObjectId[];
  /** The type of each of `objects`. */
  types: ObjectType[];
  /** How many of `objects`, at the end, are thin-pack bases taken from the store. */
  thinBases: number;
}

interface Slot {
  offset: number;
  dataOffset: number;
  end: number;
  crc32: number;
  /** Inflated size of the entry's own data (the delta for deltas). */
  size: number;
  /** -1: whole object; otherwise the base's slot, or -2 while a REF base is unknown. */
  base: number;
  baseOid: ObjectId | undefined;
  type: ObjectType | undefined;
  oid: ObjectId | undefined;
  depth: number;
  /** Delta data of an unresolved delta. */
  delta: Uint8Array | undefined;
}

/**
 * With the pack on disk, objects stored whole are cached for delta resolution up to this size.
 * Larger ones are inflated into the reader's reused buffer (no new memory per object) and read
 * back from the pack when a delta needs them, as git index-pack reads its bases back.
 */
const SPOOL_CACHE_WHOLE_MAX = 32 * 1024;

class LruCache {
  readonly #map = new Map<number, Uint8Array>();
  #bytes = 0;
  constructor(readonly limit: number) {}
  get(k: number): Uint8Array | undefined {
    const v = this.#map.get(k);
    if (v) {
      this.#map.delete(k);
      this.#map.set(k, v);
    }
    return v;
  }
  /** Keeps `v` unless it is over a quarter of the limit (see `remember`). */
  set(k: number, v: Uint8Array): void {
    if (v.length > this.limit / 4 || this.#map.has(k)) return;
    this.#map.set(k, v);
    this.#bytes += v.length;
    while (this.#bytes > this.limit) {
      const first = this.#map.entries().next().value!;
      this.#map.delete(first[0]);
      this.#bytes -= first[1].length;
    }
  }
}

export async function importPack(
  store: ObjectStore,
  pack: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: ImportOptions = {},
): Promise<ImportResult> {
  // stores over a .git directory take the pack on disk as it arrives (memory bounded by the
  // objects, not the pack); others get it from memory
  const spool =
    options.spool !== undefined
      ? await options.spool
      : typeof store.writePack === 'function' && store.beginPack
        ? await store.beginPack()
        : undefined;
  if (!spool) return importWith(store, pack, options, undefined);
  if (typeof store.writePack !== 'function') {
    await spool.abort();
    throw new PackError('PACK_BAD_INPUT', 'a pack spool was given for a store that keeps no packs');
  }
  try {
    return await importWith(store, drained(pack, spool), options, spool);
  } catch (error) {
    await spool.abort();
    throw error;
  }
}

/**
 * Pulls the next chunk without waiting for the spool's writes unless they fall behind: a drain
 * is started every DRAIN_STEP bytes, and waited for only once DRAIN_LAG bytes arrived since it
 * started and it is still not done (so the memory queued for writing stays bounded). Waiting for
 * each write before parsing on leaves the thread idle for every write's round trip, which a
 * loaded machine makes long.
 */
async function* drained(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  spool: PackSpool,
): AsyncGenerator<Uint8Array> {
  let pending: Promise<void> | undefined;
  let settled = false;
  let since = 0;
  let unyielded = 0;
  // whether the event loop went round since the last step (input that arrives by messages or
  // I/O waits for it anyway: no turn of its own is needed then)
  let turned = false;
  const arm = () => {
    turned = false;
    immediate?.(() => {
      turned = true;
    });
  };
  arm();
  for await (const chunk of source) {
    since += chunk.length;
    unyielded += chunk.length;
    if (unyielded >= YIELD_STEP && nextTurn) {
      // input that is already there (a file, a buffered body) never leaves the microtask queue:
      // one event loop turn lets finished writes start the next ones while parsing goes on
      unyielded = 0;
      if (!turned) await nextTurn();
      arm();
    }
    if (pending && (settled || since >= DRAIN_LAG)) {
      // a write error surfaces here
      await pending;
      pending = undefined;
    }
    if (!pending && since >= DRAIN_STEP) {
      since = 0;
      settled = false;
      const p = spool.drain();
      pending = p;
      p.then(
        () => {
          if (pending === p) settled = true;
        },
        () => {
          if (pending === p) settled = true;
        },
      );
    }
    yield chunk;
  }
  if (pending) await pending;
  await spool.drain();
}

/** Bytes of pack input between two drains of the spool. */
const DRAIN_STEP = 1 << 20;
/** Bytes of pack input after which an unfinished drain is waited for. */
const DRAIN_LAG = 2 << 20;
/** Bytes of pack input between two turns of the event loop. */
const YIELD_STEP = 256 << 10;
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
/** One event loop turn where a cheap one exists (Node's setImmediate; browsers clamp timers). */
const nextTurn = immediate ? () => new Promise<void>((resolve) => void immediate(resolve)) : undefined;

async function importWith(
  store: ObjectStore,
  pack: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: ImportOptions,
  spool: PackSpool | undefined,
): Promise<ImportResult> {
  const keepPack = typeof store.writePack === 'function';
  // a store that takes objects (not packs) is handed every resolved object, so they are all held
  // until then anyway: delta bases are looked up among them and the pack's bytes are not kept
  const held: (Uint8Array | undefined)[] | undefined = keepPack ? undefined : [];
  const buffer = spool || held ? undefined : new PackBuffer();
  const reader = new PackReader(pack, {
    limits: options.limits,
    signal: options.signal,
    keepLarge: !keepPack,
    // with the pack on disk, large whole objects are hashed and let go (see record)
    ...(spool ? { lendAbove: SPOOL_CACHE_WHOLE_MAX } : {}),
    ...(options.streamThreshold !== undefined ? { streamThreshold: options.streamThreshold } : {}),
    ...(spool ? { onBytes: (b: Uint8Array) => spool.append(b) } : {}),
    ...(buffer ? { onBytes: (b: Uint8Array) => buffer.append(b) } : {}),
  });
  const limits = reader.limits;
  const slots: Slot[] = [];
  // ids to slots, built on the first REF_DELTA or thin base (packs of OFS deltas never need it)
  let byOid: Map<ObjectId, number> | undefined;
  const ids = (): Map<ObjectId, number> => {
    if (!byOid) {
      byOid = new Map();
      for (let i = 0; i < slots.length; i++) {
        const oid = slots[i]!.oid;
        if (oid !== undefined && !byOid.has(oid)) byOid.set(oid, i);
      }
    }
    return byOid;
  };
  const waiting = new Map<number | ObjectId, number[]>();
  const cache = new LruCache(options.cacheBytes ?? 64 * 2 ** 20);
  // results too large for the cache: the latest are kept, so that a chain of large objects in
  // pack order applies each delta once rather than rebuilding each object from the chain's root
  const tips = new ChainTips<number, Uint8Array>(cache.limit, (v) => v.length);
  const remember = (index: number, data: Uint8Array) => {
    if (data.length <= cache.limit / 4) cache.set(index, data);
    else {
      const base = slots[index]!.base;
      tips.set(index, data, base >= 0 ? base : undefined);
    }
  };
  const cached = (index: number): Uint8Array | undefined =>
    held ? held[index] : (cache.get(index) ?? tips.get(index));
  const collected: { oid: ObjectId; type: ObjectType; data: Uint8Array }[] = [];

  const wait = (key: number | ObjectId, slot: number) => {
    const list = waiting.get(key);
    if (list) list.push(slot);
    else waiting.set(key, [slot]);
  };

  /**
   * Re-inflates a slot's own data from the pack buffer. Counted against the inflated-bytes limit
   * like every byte rebuilt: work a pack forces by its layout is bounded too.
   */
  const reinflate = async (s: Slot): Promise<Uint8Array> => {
    reader.addInflated(s.size);
    reader.flush();
    if (!spool && !buffer) throw new PackError('PACK_CORRUPT_ZLIB', 'entry could not be re-read', { offset: s.offset });
    const bytes = spool
      ? await spool.read(s.dataOffset, s.end - s.dataOffset)
      : buffer!.read(s.dataOffset, s.end - s.dataOffset);
    const r = inflateOne(bytes, s.size, true);
    if (r.kind !== 'done') throw new PackError('PACK_CORRUPT_ZLIB', 'entry could not be re-read', { offset: s.offset });
    return r.data;
  };

  /** The resolved data of a resolved slot, rebuilt along its chain when not cached. */
  const load = async (index: number): Promise<Uint8Array> => {
    const hit = cached(index);
    if (hit) return hit;
    const chain: number[] = [];
    let i = index;
    let data: Uint8Array | undefined;
    for (;;) {
      const s = slots[i]!;
      data = cached(i);
      if (data) break;
      if (s.base === -1) {
        data = await reinflate(s);
        remember(i, data);
        break;
      }
      chain.push(i);
      i = s.base;
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const s = slots[chain[k]!]!;
      data = resolveDelta(data, s.delta ?? (await reinflate(s)), limits.maxDeltaResultSize);
      reader.addInflated(data.length);
      remember(chain[k]!, data);
    }
    return data;
  };

  /** Records a resolved object and resolves everything waiting on it (iteratively). */
  const resolved = (first: number, firstData: Uint8Array) => {
    // one object and nothing waiting on it (the common case) goes without the stack
    if (!record(first, firstData)) return;
    const stack: [number, Uint8Array][] = [[first, firstData]];
    while (stack.length > 0) {
      const [index, data] = stack.pop()!;
      const s = slots[index]!;
      const byIndex = waiting.get(index);
      const byId = waiting.get(s.oid!);
      if (!byIndex && !byId) continue;
      waiting.delete(index);
      waiting.delete(s.oid!);
      for (const c of byIndex && byId ? [...byIndex, ...byId] : (byIndex ?? byId)!) {
        const child = slots[c]!;
        child.base = index;
        child.type = s.type;
        child.depth = s.depth + 1;
        if (child.depth > limits.maxDeltaDepth) {
          throw new PackError('PACK_LIMIT_DEPTH', `delta chain longer than ${limits.maxDeltaDepth}`, {
            offset: child.offset,
          });
        }
        const result = resolveDelta(data, child.delta!, limits.maxDeltaResultSize);
        reader.addInflated(result.length);
        child.delta = undefined;
        if (record(c, result)) stack.push([c, result]);
      }
    }
  };

  /** Hashes, caches and collects one resolved object; true when deltas may wait on it. */
  const record = (index: number, data: Uint8Array): boolean => {
    const s = slots[index]!;
    if (s.oid === undefined) s.oid = hashObjectSync(s.type!, data);
    if (!keepPack) collected.push({ oid: s.oid, type: s.type!, data });
    if (byOid && !byOid.has(s.oid)) byOid.set(s.oid, index);
    // with the pack on disk, large objects stored whole are read back when a delta needs them
    // (as git index-pack does; their data is the reader's, lent until the next entry); delta
    // results (the likely next bases) and small objects are kept
    if (held) held[index] = data;
    else if (!spool || s.base !== -1 || data.length <= SPOOL_CACHE_WHOLE_MAX) remember(index, data);
    return waiting.size > 0 && (waiting.has(index) || waiting.has(s.oid));
  };

  /** Slot of the entry starting at `offset` (entries are in increasing offset order). */
  const slotAt = (offset: number): number | undefined => {
    let lo = 0;
    let hi = slots.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const o = slots[mid]!.offset;
      if (o === offset) return mid;
      if (o < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  };

  /** Records one entry; a promise only when it must wait (a base read back, a streamed object). */
  const take = (e: PackEntry): Promise<void> | undefined => {
    const index = slots.length;
    const slot: Slot = {
      offset: e.offset,
      dataOffset: e.dataOffset,
      end: e.end,
      crc32: e.crc32,
      size: e.size,
      base: -1,
      baseOid: undefined,
      type: undefined,
      oid: undefined,
      depth: 0,
      delta: undefined,
    };
    slots.push(slot);
    if (e.kind === 'whole') {
      slot.type = e.type;
      slot.oid = e.oid;
      if (e.data) {
        resolved(index, e.data);
        return undefined;
      }
      if (byOid && !byOid.has(e.oid)) byOid.set(e.oid, index);
      // a streamed object kept in the pack only; anything waiting on it re-reads it
      return flushWaiters(index, e.oid);
    }
    const baseIndex = e.kind === 'ofs-delta' ? slotAt(e.baseOffset) : ids().get(e.baseOid);
    if (e.kind === 'ofs-delta' && baseIndex === undefined) {
      throw new PackError('PACK_BAD_BASE_OFFSET', `no entry starts at base offset ${e.baseOffset}`, {
        offset: e.offset,
      });
    }
    if (e.kind === 'ref-delta') slot.baseOid = e.baseOid;
    if (baseIndex === undefined || slots[baseIndex]!.oid === undefined) {
      slot.delta = e.data;
      slot.base = -2;
      wait(baseIndex ?? (e as { baseOid: ObjectId }).baseOid, index);
      return undefined;
    }
    const base = slots[baseIndex]!;
    slot.base = baseIndex;
    slot.type = base.type;
    slot.depth = base.depth + 1;
    if (slot.depth > limits.maxDeltaDepth) {
      throw new PackError('PACK_LIMIT_DEPTH', `delta chain longer than ${limits.maxDeltaDepth}`, {
        offset: e.offset,
      });
    }
    const apply = (baseData: Uint8Array) => {
      const result = resolveDelta(baseData, e.data, limits.maxDeltaResultSize);
      reader.addInflated(result.length);
      resolved(index, result);
    };
    const baseData = cached(baseIndex);
    if (baseData) {
      apply(baseData);
      return undefined;
    }
    return load(baseIndex).then(apply);
  };

  await reader.readHeader();
  const total = reader.count;
  let count = 0;
  try {
    while (reader.remaining > 0) {
      throwIfAborted(options.signal);
      // whole objects and deltas on a cached base go through without a promise
      const pending = take(reader.nextSync() ?? (await reader.next()));
      if (pending) await pending;
      count++;
      if (options.onProgress && (count & 1023) === 0) {
        options.onProgress({ objects: count, total, phase: 'receiving' });
      }
    }
    await reader.finish();
  } finally {
    // an entry begun and left (an error) gives its inflate context back
    reader.close();
  }

  async function flushWaiters(index: number, oid: ObjectId) {
    if (waiting.has(index) || waiting.has(oid)) resolved(index, await load(index));
  }

  // Thin pack: bases named by REF deltas that the pack does not contain.
  const appended: { oid: ObjectId; offset: number; crc32: number }[] = [];
  // where appended bases would start: the trailer's offset
  let thinLength = spool ? spool.length - 20 : buffer ? buffer.length - 20 : (slots.at(-1)?.end ?? 12);
  const thinParts: Uint8Array[] = [];
  for (const key of [...waiting.keys()]) {
    throwIfAborted(options.signal);
    if (typeof key === 'number') continue;
    if (!waiting.has(key)) continue;
    const base = await store.read(key);
    if (!base || !options.fixThin) {
      throw new PackError(
        'PACK_MISSING_BASE',
        base ? `thin pack: base ${key} is not in the pack (use fixThin)` : `delta base ${key} is missing`,
      );
    }
    const index = slots.length;
    const entry = encodeWholeEntry(base.type, base.data);
    const slot: Slot = {
      offset: thinLength,
      dataOffset: thinLength + entry.headerLength,
      end: thinLength + entry.bytes.length,
      crc32: crc32(entry.bytes),
      size: base.data.length,
      base: -1,
      baseOid: undefined,
      type: base.type,
      oid: key,
      depth: 0,
      delta: undefined,
    };
    slots.push(slot);
    thinParts.push(entry.bytes);
    appended.push({ oid: key, offset: thinLength, crc32: slot.crc32 });
    thinLength += entry.bytes.length;
    ids().set(key, index);
    // already in the store: resolve waiters without storing the base again
    const stack = waiting.get(key) ?? [];
    waiting.delete(key);
    const before = collected.length;
    for (const c of stack) wait(index, c);
    resolved(index, base.data);
    if (!keepPack) collected.splice(before, 1);
  }
  for (const [, list] of waiting) {
    if (list.length > 0) throw new PackError('PACK_MISSING_BASE', 'unresolvable deltas (cycle or missing base)');
  }

  let hash = reader.hash!;
  if (thinParts.length > 0 && keepPack) {
    const header = new Uint8Array(4);
    new DataView(header.buffer).setUint32(0, slots.length);
    const h = createSha1();
    if (spool) {
      spool.truncate(spool.length - 20);
      for (const p of thinParts) spool.append(p);
      await spool.patch(8, header);
      for await (const c of spool.chunks()) h.update(c);
    } else {
      buffer!.truncate(buffer!.length - 20);
      for (const p of thinParts) buffer!.append(p);
      buffer!.patch(8, header);
      for (const c of buffer!.chunks()) h.update(c);
    }
    const trailer = h.digest();
    if (spool) {
      spool.append(trailer);
      await spool.drain();
    } else buffer!.append(trailer);
    hash = bytesToHex(trailer);
  }

  const objects = slots.map((s) => s.oid!);
  if (keepPack) {
    const entries: IndexEntry[] = slots.map((s) => ({ oid: s.oid!, offset: s.offset, crc32: s.crc32 }));
    if (spool) await spool.commit(hash, entries);
    else await store.writePack!({ hash, chunks: buffer!.chunks(), length: buffer!.length, entries });
    // (the store's index refuses an id the pack holds twice: writeIdx's strict)
  } else {
    // a store that takes objects writes no index: a repeated id is refused here, the same way
    const seen = new Set<ObjectId>();
    for (const s of slots) {
      if (seen.has(s.oid!)) {
        throw new PackError('PACK_DUPLICATE_OBJECT', `object ${s.oid} appears twice in the pack`, { offset: s.offset });
      }
      seen.add(s.oid!);
    }
    if (store.writeHashed) await store.writeHashed(collected);
    else for (const o of collected) await store.write(o.type, o.data);
  }
  options.onProgress?.({ objects: slots.length, total: slots.length, phase: 'resolving' });
  return { hash, objects, types: slots.map((s) => s.type!), thinBases: appended.length };
}

/**
 * Results of deltas up to an eighth of a slab are carved from shared slabs: an ArrayBuffer per
 * result (thousands of small trees) costs more in allocation and GC than applying the delta.
 */
const resultBuffer = slabAllocator((size) => new Uint8Array(size));

/** `applyDelta` for import: the result in slab memory (a view: stores copy what they keep). */
export function resolveDelta(base: Uint8Array, delta: Uint8Array, maxResult: number): Uint8Array {
  return applyDelta(base, delta, maxResult, resultBuffer);
}

/** A whole-object pack entry: header + zlib data. */
export function encodeWholeEntry(
  type: ObjectType,
  data: Uint8Array,
  level?: number,
): { bytes: Uint8Array; headerLength: number } {
  const header = encodeEntryHeader(TYPE_CODES[type], data.length);
  const z = deflate(data, level);
  const bytes = new Uint8Array(header.length + z.length);
  bytes.set(header);
  bytes.set(z, header.length);
  return { bytes, headerLength: header.length };
}

export type { PackEntry };
export { objectHeader };
