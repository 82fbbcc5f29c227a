/**
 * importPack: reads a pack stream, resolves OFS/REF deltas (iteratively, with a bounded cache of
 * bases; REF bases that arrive later are waited for), completes thin packs from the store like
 * `git index-pack --fix-thin` (missing bases appended as whole objects, count and trailer
 * rewritten), verifies the trailer, and only then hands the objects to the store: a pack that
 * fails anywhere changes nothing in the store.
 *
 * Stores that keep packs and offer `beginPack` (FsObjectStore given `packSpool`, over an fs with
 * positional reads and writes) get the pack written to a temporary file as it arrives; entries
 * are read back by position when a delta needs a base no longer cached, so memory is bounded by
 * the objects (and a constant cache), not by the pack. The file is moved into place, `.pack` then `.idx`,
 * only once the pack checks out, and removed otherwise.
 */
import { createSha1 } from '#sha1';
import { crc32, deflate, deflateAsync, inflateOne } from '#zlib';
import { applyDelta } from './delta.js';
import { ChainTips } from './delta-chain-cache.js';
import { decodeEntryHeader, encodeEntryHeader } from './entry-header.js';
import { PackError, throwIfAborted } from './errors.js';
import { IDS_AT, type IndexEntries } from './idx.js';
import { BASE_UNKNOWN, ImportSlots, WHOLE } from './import-slots.js';
import { bytesToHex, hashObjectSync, type ObjectId, type ObjectType, objectHeader, TYPE_CODES } from './object.js';
import { PackBuffer } from './pack-buffer.js';
import { type PackEntry, type PackLimits, PackReader } from './pack-reader.js';
import { RingCache } from './ring-cache.js';
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
   * Bytes of resolved objects kept for delta resolution (default 1 MiB: packs keep a delta near
   * its base, mostly right after it, so a larger cache spares hardly any base rebuilt from the
   * pack and costs private memory); as much again may hold the latest results too large for that cache (the tips of
   * delta chains), and always the last.
   */
  cacheBytes?: number;
  onProgress?: (progress: { objects: number; total: number; phase: 'receiving' | 'resolving' }) => void;
  /**
   * The store's `beginPack()`, called by the caller ahead of the pack (while it is still on its
   * way, so the temporary file is ready when the first bytes come). It must be this store's;
   * `importPack` then owns it: it commits it, or aborts it when the import fails.
   */
  spool?: Promise<PackSpool | undefined>;
  /**
   * Told of each object as soon as it is resolved (in pack order for whole objects and deltas on
   * resolved bases, later for deferred deltas), before the pack is checked, indexed and stored:
   * what a caller shows early (a clone's first view) reads it here. `data` is lent until the
   * callback returns (copy what is kept); a large object streamed into the pack has no data and
   * is not told. An import that fails after this was called stores nothing all the same.
   */
  onObject?: (oid: ObjectId, type: ObjectType, data: Uint8Array) => void;
  /**
   * The pack's chunks are the caller's reused buffers, each valid only until the next is asked
   * for (see PackReaderOptions.reusedInput): a source that reads into one buffer again and again
   * spares a new buffer per chunk, and the garbage they make until the next collection.
   */
  reusedInput?: boolean;
}

export interface ImportResult {
  /** The stored pack's checksum (after thin completion, if any). */
  readonly hash: string;
  /** How many objects the pack holds (with appended thin bases): `objects.length`. */
  readonly count: number;
  /** Every object of the pack (and appended thin bases), in pack order (made when first read). */
  readonly objects: ObjectId[];
  /** The type of each of `objects`. */
  readonly types: ObjectType[];
  /** How many of `objects`, at the end, are thin-pack bases taken from the store. */
  readonly thinBases: number;
}

/**
 * Objects stored whole are cached for delta resolution up to this size; larger ones are read
 * back from the pack when a delta needs them, as git index-pack reads its bases back.
 */
const WHOLE_CACHE_MAX = 32 * 1024;

/** Resolved objects kept for delta resolution by default (see ImportOptions.cacheBytes). */
const DEFAULT_CACHE_BYTES = 2 ** 20;

/**
 * A spool for an incoming pack into `store` (its `beginPack`); undefined for a store that keeps
 * no packs, spools none, or whose fs cannot write at positions (the pack then goes from memory).
 */
export async function beginPack(store: ObjectStore): Promise<PackSpool | undefined> {
  return store.beginPack?.();
}

/** Whether `store` can spool an incoming pack (`beginPack` gives a spool or undefined). */
export function spoolsPacks(store: ObjectStore): boolean {
  return typeof store.writePack === 'function' && store.beginPack !== undefined;
}

export async function importPack(
  store: ObjectStore,
  pack: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: ImportOptions = {},
): Promise<ImportResult> {
  // stores over a .git directory take the pack on disk as it arrives (memory bounded by the
  // objects, not the pack); others get it from memory
  const spool =
    options.spool !== undefined ? await options.spool : spoolsPacks(store) ? await beginPack(store) : undefined;
  if (!spool) return importWith(store, drained(pack), options, undefined);
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
 * loaded machine makes long. With or without a spool, the event loop goes round every
 * YIELD_STEP bytes: what else the thread has to do (a file system's answers, a new repository's
 * layout being written) would otherwise wait for the whole of a pack whose chunks are queued.
 */
async function* drained(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  spool?: PackSpool,
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
    if (!spool) {
      yield chunk;
      continue;
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
  await spool?.drain();
}

/** Bytes of pack input between two drains of the spool. */
const DRAIN_STEP = 1 << 20;
/** Bytes of pack input after which an unfinished drain is waited for. */
const DRAIN_LAG = 2 << 20;
/** Bytes of pack input between two turns of the event loop. */
const YIELD_STEP = 256 << 10;
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate ?? channelTask();

/** `fn` in a task of its own through a MessageChannel (browsers have no setImmediate, and clamp timers). */
function channelTask(): ((fn: () => void) => void) | undefined {
  if (typeof MessageChannel !== 'function') return undefined;
  const waiting: (() => void)[] = [];
  let port: MessagePort | undefined;
  return (fn) => {
    if (!port) {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => waiting.shift()?.();
      port = channel.port2;
    }
    waiting.push(fn);
    port.postMessage(0);
  };
}

/** One event loop turn where a cheap one exists (Node's setImmediate, a MessageChannel task in browsers). */
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
    // unless every object is held, whole objects and deltas are inflated into the reader's
    // reused buffer (no new memory per entry): they are hashed or applied, and copied by the
    // cache when kept (record)
    ...(held ? {} : { lendAbove: 0, lendDeltas: true }),
    ...(options.streamThreshold !== undefined ? { streamThreshold: options.streamThreshold } : {}),
    ...(options.reusedInput ? { reusedInput: true } : {}),
    ...(spool ? { onBytes: (b: Uint8Array) => spool.append(b) } : {}),
    ...(buffer ? { onBytes: (b: Uint8Array, owned: boolean) => buffer.append(b, owned) } : {}),
  });
  const limits = reader.limits;
  // one column per field: no object per entry (see import-slots.ts)
  let slots = new ImportSlots(1024);
  /**
   * Deltas left for the second pass, as git index-pack leaves them: those whose base is not at
   * hand when they arrive (a base that comes later, a delta on such a delta, a base no longer
   * cached). Listed by their base's entry when it is known, else by the base's id (REF_DELTA);
   * their data is read back from the pack then, except for a store that holds every object.
   */
  const childrenOf = new Map<number, number[]>();
  const childrenOfId = new Map<ObjectId, number[]>();
  /** Delta data of deferred deltas, when the pack is not kept to read it back from. */
  const deltas = new Map<number, Uint8Array>();
  // copies in one arena (results are views into shared slabs, which a kept view would pin): a
  // view it returns is valid until the next `remember`
  const cacheBytes = options.cacheBytes ?? DEFAULT_CACHE_BYTES;
  const cache = held ? undefined : new RingCache(cacheBytes);
  // results too large for the cache: the latest are kept, so that a chain of large objects in
  // pack order applies each delta once rather than rebuilding each object from the chain's root
  const tips = new ChainTips<number, Uint8Array>(cacheBytes, (v) => v.length);
  const remember = (index: number, data: Uint8Array) => {
    if (cache && data.length <= cache.maxValue) cache.set(index, data);
    else {
      const base = slots.base[index]!;
      tips.set(index, data, base >= 0 ? base : undefined);
    }
  };
  /**
   * Where a delta of the first pass is applied: a result the cache takes (a copy) goes into one
   * reused buffer, not into slab memory that would be garbage right after; a larger one into
   * the slabs (the tips keep it as it is).
   */
  let scratch = new Uint8Array(0);
  const toCache = (size: number): Uint8Array => {
    if (size > cache!.maxValue) return resultBuffer(size);
    if (scratch.length < size) scratch = new Uint8Array(Math.max(size, Math.min(2 * scratch.length, cache!.maxValue)));
    return scratch.subarray(0, size);
  };
  const cached = (index: number): Uint8Array | undefined =>
    held ? held[index] : (cache!.get(index) ?? tips.get(index));
  const collected: { oid: ObjectId; type: ObjectType; data: Uint8Array }[] = [];
  const onObject = options.onObject;

  const defer = <K>(map: Map<K, number[]>, key: K, slot: number) => {
    const list = map.get(key);
    if (list) list.push(slot);
    else map.set(key, [slot]);
  };

  /**
   * Re-inflates a slot's own data from the pack buffer. Counted against the inflated-bytes limit
   * like every byte rebuilt: work a pack forces by its layout is bounded too.
   */
  const reinflate = async (i: number): Promise<Uint8Array> => {
    const offset = slots.offset[i]!;
    reader.flush();
    if (!spool && !buffer) throw new PackError('PACK_CORRUPT_ZLIB', 'entry could not be re-read', { offset });
    // the whole entry, header included: its size is read from there again
    const length = slots.end(i) - offset;
    const bytes = spool ? await spool.read(offset, length) : buffer!.read(offset, length);
    const header = decodeEntryHeader(bytes, 0, offset);
    if (!header) throw new PackError('PACK_CORRUPT_ZLIB', 'entry could not be re-read', { offset });
    reader.addInflated(header.size);
    const r = inflateOne(bytes.subarray(header.length), header.size, true);
    if (r.kind !== 'done') throw new PackError('PACK_CORRUPT_ZLIB', 'entry could not be re-read', { offset });
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
      data = cached(i);
      if (data) break;
      if (slots.base[i] === WHOLE) {
        data = await reinflate(i);
        remember(i, data);
        break;
      }
      chain.push(i);
      i = slots.base[i]!;
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const c = chain[k]!;
      data = resolveDelta(data, deltas.get(c) ?? (await reinflate(c)), limits.maxDeltaResultSize);
      reader.addInflated(data.length);
      remember(chain[k]!, data);
    }
    return data;
  };

  /** Takes a delta's base: its type and depth, the chain length checked. */
  const link = (c: number, base: number) => {
    slots.base[c] = base;
    slots.setType(c, slots.type(base));
    const depth = slots.depth[base]! + 1;
    slots.depth[c] = depth;
    if (depth > limits.maxDeltaDepth) {
      throw new PackError('PACK_LIMIT_DEPTH', `delta chain longer than ${limits.maxDeltaDepth}`, {
        offset: slots.offset[c]!,
      });
    }
  };

  /** Hashes (unless its id is given), caches (unless told not to) and collects one resolved object. */
  const record = (index: number, data: Uint8Array, known: ObjectId | undefined, keep = true): ObjectId => {
    const type = slots.type(index)!;
    const oid = known ?? hashObjectSync(type, data);
    if (!slots.hasOid(index)) slots.setOid(index, oid);
    onObject?.(oid, type, data);
    if (!keepPack) collected.push({ oid, type, data });
    // large objects stored whole are read back when a delta needs them (as git index-pack does);
    // delta results (the likely next bases) and small objects are kept. A whole object's data
    // is the reader's, lent until the next entry: the cache copies it, the tips would not
    if (held) held[index] = data;
    else if (!keep) return oid;
    else if (slots.base[index] !== WHOLE) remember(index, data);
    else if (data.length <= WHOLE_CACHE_MAX) remember(index, data.length <= cache!.maxValue ? data : data.slice());
    return oid;
  };

  /**
   * Second pass, from one resolved base: its deferred deltas depth first, each applied to its
   * base's data, hashed, then its own deferred deltas, so that only the chain being walked is
   * in memory. `data` is the base's (owned: not a cache view).
   */
  const resolveFrom = async (root: number, data: Uint8Array): Promise<void> => {
    const stack: { data: Uint8Array; kids: number[]; next: number }[] = [];
    const push = (i: number, d: Uint8Array) => {
      const byIndex = childrenOf.get(i);
      const byId = childrenOfId.size > 0 && slots.hasOid(i) ? childrenOfId.get(slots.oid(i)) : undefined;
      if (!byIndex && !byId) return;
      childrenOf.delete(i);
      if (byId) childrenOfId.delete(slots.oid(i));
      const kids = byIndex && byId ? [...byIndex, ...byId] : (byIndex ?? byId)!;
      for (const c of kids) link(c, i);
      stack.push({ data: d, kids, next: 0 });
    };
    push(root, data);
    while (stack.length > 0) {
      throwIfAborted(options.signal);
      const top = stack[stack.length - 1]!;
      if (top.next === top.kids.length) {
        stack.pop();
        continue;
      }
      const c = top.kids[top.next++]!;
      const delta = deltas.get(c) ?? (await reinflate(c));
      deltas.delete(c);
      const result = resolveDelta(top.data, delta, limits.maxDeltaResultSize);
      reader.addInflated(result.length);
      record(c, result, undefined, false);
      push(c, result);
    }
  };

  /** Slot of the entry starting at `offset` (entries are in increasing offset order). */
  const slotAt = (offset: number): number | undefined => {
    let lo = 0;
    let hi = slots.length - 1;
    const offsets = slots.offset;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const o = offsets[mid]!;
      if (o === offset) return mid;
      if (o < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  };

  /**
   * First pass, one entry: whole objects are hashed; a delta on a resolved base is applied at
   * once (packs mostly put a delta right after its base, in the cache; a base no longer cached is
   * rebuilt from the pack), one on a base not resolved yet is deferred. A promise only when it
   * must wait for a base read back.
   */
  const take = (e: PackEntry): Promise<void> | undefined => {
    const index = slots.add(e.offset, e.end, e.crc32);
    if (e.kind === 'whole') {
      slots.setType(index, e.type);
      // a streamed object (no data) is kept in the pack only; its deltas re-read it
      if (e.data) record(index, e.data, e.oid);
      else slots.setOid(index, e.oid);
      return undefined;
    }
    const baseIndex = e.kind === 'ofs-delta' ? slotAt(e.baseOffset) : slots.find(e.baseOid);
    if (e.kind === 'ofs-delta' && baseIndex === undefined) {
      throw new PackError('PACK_BAD_BASE_OFFSET', `no entry starts at base offset ${e.baseOffset}`, {
        offset: e.offset,
      });
    }
    if (baseIndex === undefined || !slots.hasOid(baseIndex)) {
      // kept only when it cannot be read back from the pack (the reader lends it otherwise)
      if (held) deltas.set(index, e.data);
      slots.base[index] = BASE_UNKNOWN;
      if (baseIndex !== undefined) defer(childrenOf, baseIndex, index);
      else defer(childrenOfId, (e as { baseOid: ObjectId }).baseOid, index);
      return undefined;
    }
    link(index, baseIndex);
    const apply = (baseData: Uint8Array, delta: Uint8Array) => {
      const result = applyDelta(baseData, delta, limits.maxDeltaResultSize, cache ? toCache : resultBuffer);
      reader.addInflated(result.length);
      record(index, result, undefined);
    };
    const baseData = cached(baseIndex);
    if (baseData) {
      apply(baseData, e.data);
      return undefined;
    }
    // the reader's data is lent until the next entry, which waits for this one
    const delta = e.data;
    return load(baseIndex).then((data) => apply(data, delta));
  };

  await reader.readHeader();
  const total = reader.count;
  // sized for the declared count up to a bound (a header may claim more than comes), grown after:
  // columns are zero-filled memory, which costs nothing until entries are written, where growing
  // would copy every column and hold the old and new ones at once
  slots = new ImportSlots(Math.min(total, 1 << 21), total, limits.maxDeltaDepth);
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

  // Second pass: the deferred deltas, from each resolved base they wait on (bases in pack order;
  // a base that is itself deferred is reached through its own base)
  const roots: number[] = [...childrenOf.keys()];
  for (const oid of childrenOfId.keys()) {
    const i = slots.find(oid);
    if (i !== undefined) roots.push(i);
  }
  roots.sort((a, b) => a - b);
  for (const root of roots) {
    if (!slots.hasOid(root) || (!childrenOf.has(root) && !childrenOfId.has(slots.oid(root)))) continue;
    // a copy: the cache's views change as the chain is rebuilt and walked
    const data = await load(root);
    await resolveFrom(root, held ? data : data.slice());
  }

  // Thin pack: bases named by REF deltas that the pack does not contain.
  const appended: { oid: ObjectId; offset: number; crc32: number }[] = [];
  // where appended bases would start: the trailer's offset
  let thinLength = spool
    ? spool.length - 20
    : buffer
      ? buffer.length - 20
      : slots.length > 0
        ? slots.end(slots.length - 1)
        : 12;
  const thinParts: Uint8Array[] = [];
  for (const key of [...childrenOfId.keys()]) {
    throwIfAborted(options.signal);
    if (!childrenOfId.has(key)) continue;
    const base = await store.read(key);
    if (!base || !options.fixThin) {
      throw new PackError(
        'PACK_MISSING_BASE',
        base ? `thin pack: base ${key} is not in the pack (use fixThin)` : `delta base ${key} is missing`,
      );
    }
    // deflated where the platform does it (a thin pack appends a few bases)
    const entry = wholeEntry(base.type, base.data, await deflateAsync(base.data));
    const crc = crc32(entry.bytes);
    const index = slots.add(thinLength, thinLength + entry.bytes.length, crc);
    slots.setType(index, base.type);
    slots.setOid(index, key);
    thinParts.push(entry.bytes);
    appended.push({ oid: key, offset: thinLength, crc32: crc });
    thinLength += entry.bytes.length;
    // already in the store: its deltas are resolved without storing the base again
    await resolveFrom(index, base.data);
  }
  if (childrenOf.size > 0 || childrenOfId.size > 0) {
    throw new PackError('PACK_MISSING_BASE', 'unresolvable deltas (cycle or missing base)');
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

  const n = slots.length;
  // resolution is over: its memory goes before the index is written
  cache?.clear();
  tips.clear();
  slots.release();
  if (keepPack) {
    // the index is made where the entries' ids and CRCs lie (no second copy of them), or else
    // from the columns: no id string nor entry object per entry either way
    const built = slots.buildIndex(hash);
    const entries: IndexEntries = built
      ? { count: n, built: built.idx }
      : { count: n, ids: slots.ids, offsets: slots.offset, crc32s: slots.crc32 };
    const codes = slots.takeTypeCodes();
    const result = built
      ? importResult(hash, n, appended.length, codes, built.idx, (i) => IDS_AT + built.rank[i]! * 20)
      : importResult(hash, n, appended.length, codes, slots.ids, (i) => i * 20);
    if (spool) await spool.commit(hash, entries);
    else await store.writePack!({ hash, chunks: buffer!.chunks(), length: buffer!.length, entries });
    // (an id the pack holds twice is refused by buildIndex, or the store's writeIdx with strict)
    options.onProgress?.({ objects: n, total: n, phase: 'resolving' });
    return result;
  }
  // a store that takes objects writes no index: a repeated id is refused here, the same way
  const seen = new Set<ObjectId>();
  for (let i = 0; i < n; i++) {
    const oid = slots.oid(i);
    if (seen.has(oid)) {
      throw new PackError('PACK_DUPLICATE_OBJECT', `object ${oid} appears twice in the pack`, {
        offset: slots.offset[i]!,
      });
    }
    seen.add(oid);
  }
  if (store.writeHashed) await store.writeHashed(collected);
  else for (const o of collected) await store.write(o.type, o.data);
  options.onProgress?.({ objects: n, total: n, phase: 'resolving' });
  return importResult(hash, n, appended.length, slots.takeTypeCodes(), slots.ids, (i) => i * 20);
}

const TYPE_BY_CODE: readonly (ObjectType | undefined)[] = [undefined, 'commit', 'tree', 'blob', 'tag'];

/**
 * An import's result: the ids and types of its entries kept as bytes (entry i's id at
 * `ids[idAt(i)]`, in the columns or in the .idx), their strings made only when first read (an
 * index-pack or a clone needs only the count). The lists are own enumerable accessors, so that
 * spreading, structured cloning (posting the result to another thread) and JSON see them as
 * plain properties.
 */
function importResult(
  hash: string,
  count: number,
  thinBases: number,
  codes: Uint8Array,
  ids: Uint8Array,
  idAt: (i: number) => number,
): ImportResult {
  let objects: ObjectId[] | undefined;
  let types: ObjectType[] | undefined;
  const result = { hash, count, thinBases } as ImportResult;
  Object.defineProperties(result, {
    objects: {
      enumerable: true,
      get() {
        if (!objects) {
          objects = new Array<ObjectId>(count);
          for (let i = 0; i < count; i++) objects[i] = bytesToHex(ids, idAt(i), idAt(i) + 20);
        }
        return objects;
      },
    },
    types: {
      enumerable: true,
      get() {
        if (!types) {
          types = new Array<ObjectType>(count);
          for (let i = 0; i < count; i++) types[i] = TYPE_BY_CODE[codes[i]!]!;
        }
        return types;
      },
    },
  });
  return result;
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
  return wholeEntry(type, data, deflate(data, level));
}

/** A whole-object pack entry: header + the zlib data `z` of `data`. */
function wholeEntry(type: ObjectType, data: Uint8Array, z: Uint8Array): { bytes: Uint8Array; headerLength: number } {
  const header = encodeEntryHeader(TYPE_CODES[type], data.length);
  const bytes = new Uint8Array(header.length + z.length);
  bytes.set(header);
  bytes.set(z, header.length);
  return { bytes, headerLength: header.length };
}

export type { PackEntry };
export { objectHeader };
