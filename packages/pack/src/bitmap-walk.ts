/**
 * Object enumeration with reachability bitmaps (git's pack-bitmap.c `prepare_bitmap_walk`):
 *
 *   result = reachable(wants) AND NOT reachable(haves)
 *
 * Each side is a walk from its tips, newest commit first, that stops at objects already in the
 * side's bitmap: a commit with a stored bitmap ORs it in and is not walked further; a commit
 * without one sets its own bit and goes on to its parents; the trees of the walked commits are
 * then walked (git's fill-in), entries already set skipped. Objects outside the bitmapped pack
 * (loose, other packs) are kept by id beside the bitmap. The wants' walk also stops at what the
 * haves reach. Unlike the commit walk in walk.ts, which excludes only the trees of the boundary
 * commits (git without bitmaps does the same), this excludes everything the haves reach, as git
 * with bitmaps does: never more objects, sometimes fewer.
 *
 * A filter is answered from the type bitmaps, as git's pack-bitmap.c `filter_bitmap` does, for the
 * filters that do not depend on paths or depths below the root: `blob:none`, `object:type`,
 * `tree:0` (every tree and blob), `blob:limit` (blob sizes from their entry headers) and
 * `combine:` of these. Objects a request names (the wants, and what an annotated tag among them
 * peels to) stay whatever the filter says, as in the walk.
 *
 * Requests it cannot serve exactly return undefined, and the caller walks: shallow boundaries,
 * `tree:<depth>` past 0 and `sparse:oid`.
 */

import type { BitmappedPack } from './bitmap-index.js';
import { parseCommitLinks } from './commit.js';
import { PackError, throwIfAborted } from './errors.js';
import { andNotBits, type Bits, countBits, emptyBits, hasBit, orBits, setBit } from './ewah.js';
import { bytesToHex, type ObjectId, type ObjectType } from './object.js';
import type { ObjectFilter } from './object-filter.js';
import type { ObjectStore } from './store.js';
import { readHeaderOf, readHeaderSyncOf } from './stored-reads.js';
import { parseTagTarget } from './tag.js';
import { forEachTreeEntryRaw } from './tree.js';
import { CommitQueue, type EnumerateOptions, type PackObject } from './walk.js';

/** What the bitmap walk selected. */
export interface BitmapEnumeration {
  pack: BitmappedPack;
  /** Objects of the bitmapped pack to send, by pack-order position. */
  bits: Bits;
  /** Objects outside it to send, in walk order (commits first). */
  extra: PackObject[];
  /** What the receiver has in the bitmapped pack (thin-pack bases). */
  haves: Bits;
  /** How many objects are sent. */
  count: number;
}

/** What the object walk takes, less its thin-pack edges (the bitmaps give what the receiver has). */
export type BitmapWalkOptions = Omit<EnumerateOptions, 'edges' | 'edgeCommits'>;

/** Whether the bitmaps answer `filter` exactly (git's `can_filter_bitmap`). */
export function bitmapFilterable(filter: ObjectFilter): boolean {
  switch (filter.kind) {
    case 'blob:none':
    case 'blob:limit':
    case 'object:type':
      return true;
    case 'tree':
      return filter.depth === 0;
    case 'combine':
      return filter.filters.every(bitmapFilterable);
    case 'sparse:oid':
      return false;
  }
}

/** Whether `bitmapWalk` can answer a request (no shallow boundary, a filter it does exactly). */
export function bitmapWalkApplies(options: Pick<BitmapWalkOptions, 'shallow' | 'filter'>): boolean {
  return (options.shallow?.length ?? 0) === 0 && (options.filter === undefined || bitmapFilterable(options.filter));
}

/** One side of the walk: a bitmap over the pack and the objects outside it. */
class Side {
  readonly bits: Bits;
  readonly extra = new Map<ObjectId, PackObject>();
  constructor(count: number) {
    this.bits = emptyBits(count);
  }
}

/**
 * reachable(wants) - reachable(haves) by bitmaps; undefined when the request is not one the
 * bitmaps answer (see `bitmapWalkApplies`).
 */
export async function bitmapWalk(
  store: ObjectStore,
  pack: BitmappedPack,
  options: BitmapWalkOptions,
): Promise<BitmapEnumeration | undefined> {
  if (!bitmapWalkApplies(options)) return undefined;
  const signal = options.signal;
  const n = pack.count;
  const { commits, trees, blobs } = pack.bitmaps;
  const typeAt = (p: number): ObjectType =>
    hasBit(commits, p) ? 'commit' : hasBit(trees, p) ? 'tree' : hasBit(blobs, p) ? 'blob' : 'tag';
  const headerOf = (oid: ObjectId) => readHeaderOf(store, oid);
  const readObject = async (oid: ObjectId) => store.readSync?.(oid) ?? (await store.read(oid));

  /**
   * Adds everything reachable from `roots` to `side`, skipping what `side` or `stop` has. With
   * `lenient` (the haves), objects the store lacks are passed over.
   */
  const reach = async (side: Side, roots: readonly ObjectId[], stop: Side | undefined, lenient: boolean) => {
    const queue = new CommitQueue();
    const walkTrees: { oid: ObjectId; hash: number }[] = [];
    const has = (oid: ObjectId, p: number): boolean =>
      p >= 0
        ? hasBit(side.bits, p) || (stop !== undefined && hasBit(stop.bits, p))
        : side.extra.has(oid) || (stop?.extra.has(oid) ?? false);
    /** Marks one object; false when it was marked already (or the other side has it). */
    const mark = (oid: ObjectId, p: number, type: ObjectType, hash: number): boolean => {
      if (has(oid, p)) return false;
      if (p >= 0) setBit(side.bits, p);
      else side.extra.set(oid, { oid, type, nameHash: hash });
      return true;
    };
    const missing = (oid: ObjectId, what: string) => {
      if (lenient) return;
      throw new PackError('OBJECT_NOT_FOUND', `${what} ${oid} is missing`);
    };
    const enqueueCommit = async (oid: ObjectId) => {
      const p = pack.position(oid);
      if (has(oid, p)) return;
      if (p >= 0) {
        const r = pack.reachable(p);
        if (r) {
          orBits(side.bits, r);
          return;
        }
      }
      let info: { oid: ObjectId; tree: ObjectId; parents: ObjectId[]; time: number };
      if (options.cache) {
        try {
          info = await options.cache.get(oid);
        } catch (error) {
          if (lenient) return;
          throw error;
        }
      } else {
        const obj = await readObject(oid);
        if (obj?.type !== 'commit') return missing(oid, 'commit');
        info = { oid, ...parseCommitLinks(obj.data) };
      }
      if (!mark(oid, p, 'commit', 0)) return;
      queue.push(info);
    };
    const visit = async (root: ObjectId) => {
      let oid = root;
      for (let guard = 0; ; guard++) {
        if (guard > 100) throw new PackError('OBJECT_CORRUPT', `tag chain too long at ${root}`);
        const p = pack.position(oid);
        if (has(oid, p)) return;
        let type: ObjectType;
        if (p >= 0) type = typeAt(p);
        else {
          const h = await headerOf(oid);
          if (!h) return missing(oid, 'object');
          type = h.type;
        }
        if (type === 'commit') return enqueueCommit(oid);
        if (type === 'tree') {
          walkTrees.push({ oid, hash: 0 });
          return;
        }
        mark(oid, p, type, 0);
        if (type === 'blob') return;
        const tag = await readObject(oid);
        if (!tag) return missing(oid, 'tag');
        oid = parseTagTarget(tag.data);
      }
    };
    // tips with a stored bitmap first (in the order of their entries, so that each bitmap they
    // are XORed with is among the last decoded): the walk then stops at whatever they reach
    const rest: ObjectId[] = [];
    const bitmapped: { p: number; entry: number }[] = [];
    for (const r of roots) {
      const p = pack.position(r);
      const entry = p >= 0 ? pack.entryOf(p) : -1;
      if (entry >= 0) bitmapped.push({ p, entry });
      else rest.push(r);
    }
    bitmapped.sort((a, b) => a.entry - b.entry);
    for (const { p } of bitmapped) orBits(side.bits, pack.reachable(p)!);
    for (const r of rest) await visit(r);
    while (queue.size > 0) {
      throwIfAborted(signal);
      const c = queue.pop()!;
      walkTrees.push({ oid: c.tree, hash: 0 });
      for (const parent of c.parents) await enqueueCommit(parent);
    }
    // fill-in: the trees of the commits walked, down to what is set already
    const stack: { oid: ObjectId; hash: number; root: boolean }[] = [];
    for (let i = walkTrees.length - 1; i >= 0; i--) stack.push({ ...walkTrees[i]!, root: true });
    while (stack.length > 0) {
      throwIfAborted(signal);
      const t = stack.pop()!;
      const p = pack.position(t.oid);
      if (!mark(t.oid, p, 'tree', t.hash)) continue;
      const tree = await readObject(t.oid);
      if (tree?.type !== 'tree') {
        if (lenient) continue;
        throw new PackError('OBJECT_NOT_FOUND', `tree ${t.oid} is missing`);
      }
      const data = tree.data;
      const children: { oid: ObjectId; hash: number; root: boolean }[] = [];
      forEachTreeEntryRaw(data, (mode, nameStart, nameEnd, idAt) => {
        if (mode === 0o160000) return;
        // most entries are set already: look them up by their binary id, and build the hex id
        // only for the others
        const cp = pack.positionRaw(data, idAt);
        if (cp >= 0 && (hasBit(side.bits, cp) || (stop !== undefined && hasBit(stop.bits, cp)))) return;
        const child = bytesToHex(data, idAt, idAt + 20);
        if (has(child, cp)) return;
        const hash = hashMore(t.hash, data, nameStart, nameEnd, !t.root);
        if (mode === 0o40000) children.push({ oid: child, hash, root: false });
        else mark(child, cp, 'blob', hash);
      });
      for (let k = children.length - 1; k >= 0; k--) stack.push(children[k]!);
    }
  };

  // the haves, peeled to commits (as the commit walk takes them); ids the store lacks are ignored
  const haveCommits: ObjectId[] = [];
  for (let h of options.haves ?? []) {
    for (let guard = 0; guard < 100; guard++) {
      const p = pack.position(h);
      const type = p >= 0 ? typeAt(p) : (await headerOf(h))?.type;
      if (type === 'commit') haveCommits.push(h);
      if (type !== 'tag') break;
      const tag = await readObject(h);
      if (!tag) break;
      h = parseTagTarget(tag.data);
    }
  }
  const haves = new Side(n);
  if (haveCommits.length > 0) await reach(haves, haveCommits, undefined, true);
  const wants = new Side(n);
  await reach(wants, options.wants, haves, false);
  andNotBits(wants.bits, haves.bits);
  for (const oid of haves.extra.keys()) wants.extra.delete(oid);
  // include-tag: annotated tags whose chain ends at an object sent
  const sent = (oid: ObjectId): boolean => {
    const p = pack.position(oid);
    return p >= 0 ? hasBit(wants.bits, p) : wants.extra.has(oid);
  };
  for (const t of options.tags ?? []) {
    if (sent(t)) continue;
    let oid = t;
    const chain: ObjectId[] = [];
    for (let guard = 0; guard < 100; guard++) {
      const obj = await store.read(oid);
      if (obj?.type !== 'tag') break;
      chain.push(oid);
      oid = parseTagTarget(obj.data);
    }
    if (chain.length > 0 && sent(oid)) {
      for (const c of chain) {
        const p = pack.position(c);
        if (p >= 0) setBit(wants.bits, p);
        else if (!wants.extra.has(c)) wants.extra.set(c, { oid: c, type: 'tag', nameHash: 0 });
      }
    }
  }
  // a filter the type bitmaps answer: objects named in the request stay
  if (options.filter) {
    const given = await givenObjects(pack, options.wants, typeAt, headerOf, readObject);
    const givenBits = emptyBits(n);
    for (const oid of given) {
      const p = pack.position(oid);
      if (p >= 0) setBit(givenBits, p);
    }
    await filterBits(options.filter, { store, pack, bits: wants.bits, extra: wants.extra, given, givenBits, signal });
  }
  const extra = [...wants.extra.values()];
  // commits first, as the walk lists them
  extra.sort((a, b) => (a.type === 'commit' ? 0 : 1) - (b.type === 'commit' ? 0 : 1));
  return { pack, bits: wants.bits, extra, haves: haves.bits, count: countBits(wants.bits) + extra.length };
}

/** What a filter acts on: the selection, in the bitmapped pack and outside it, and what stays. */
interface FilterTarget {
  store: ObjectStore;
  pack: BitmappedPack;
  /** The selected objects of the bitmapped pack (filtered in place). */
  bits: Bits;
  /** The selected objects outside it (filtered in place). */
  extra: Map<ObjectId, PackObject>;
  /** Objects named in the request, which stay (by id, and as bits of the pack). */
  given: Set<ObjectId>;
  givenBits: Bits;
  signal: AbortSignal | undefined;
}

/**
 * Leaves out of `t` what `filter` leaves out (git's `filter_bitmap`): whole types by their type
 * bitmaps, blobs of `blob:limit` one by one by their sizes; each part of a `combine:` in turn
 * (an object stays only when every part keeps it).
 */
async function filterBits(filter: ObjectFilter, t: FilterTarget): Promise<void> {
  const { commits, trees, blobs, tags } = t.pack.bitmaps;
  const dropType = (type: ObjectType, typeBits: Bits) => {
    const { bits, givenBits } = t;
    for (let w = 0; w < bits.length; w++) bits[w]! &= ~(typeBits[w]! & ~givenBits[w]!);
    for (const [oid, o] of t.extra) if (o.type === type && !t.given.has(oid)) t.extra.delete(oid);
  };
  switch (filter.kind) {
    case 'blob:none':
      return dropType('blob', blobs);
    case 'tree':
      // only depth 0 comes here (bitmapFilterable): every tree and blob
      dropType('tree', trees);
      return dropType('blob', blobs);
    case 'object:type':
      for (const [type, typeBits] of [
        ['commit', commits],
        ['tree', trees],
        ['blob', blobs],
        ['tag', tags],
      ] as const) {
        if (type !== filter.type) dropType(type, typeBits);
      }
      return;
    case 'blob:limit':
      return dropLargeBlobs(filter.bytes, t);
    case 'combine':
      for (const f of filter.filters) await filterBits(f, t);
      return;
    case 'sparse:oid':
      throw new PackError('FILTER_UNSUPPORTED', 'filter sparse:oid is not answered by bitmaps');
  }
}

/**
 * `blob:limit=<limit>`: leaves out the blobs of at least `limit` bytes, sizes read from their
 * entry headers (a delta's from the start of its data), as git's `filter_bitmap_blob_limit`.
 */
async function dropLargeBlobs(limit: number, t: FilterTarget): Promise<void> {
  const { pack, bits, givenBits, store } = t;
  const blobs = pack.bitmaps.blobs;
  for (let w = 0; w < bits.length; w++) {
    let word = (bits[w]! & blobs[w]! & ~givenBits[w]!) >>> 0;
    if (word === 0) continue;
    throwIfAborted(t.signal);
    while (word !== 0) {
      const low = word & -word;
      word = (word ^ low) >>> 0;
      const p = w * 32 + 31 - Math.clz32(low);
      const oid = pack.oidAt(p);
      const size = (readHeaderSyncOf(store, oid) ?? (await readHeaderOf(store, oid)))?.size;
      if (size === undefined) throw new PackError('OBJECT_NOT_FOUND', `blob ${oid} is missing`);
      if (size >= limit) bits[w]! &= ~low;
    }
  }
  for (const [oid, o] of t.extra) {
    if (o.type !== 'blob' || t.given.has(oid)) continue;
    const size = (await readHeaderOf(store, oid))?.size;
    if (size === undefined) throw new PackError('OBJECT_NOT_FOUND', `blob ${oid} is missing`);
    if (size >= limit) t.extra.delete(oid);
  }
}

/**
 * The objects a request names, which a filter keeps (as the walk in walk.ts does, and git's
 * `find_tip_objects`): the wants themselves, and every object an annotated tag among them peels
 * to, the end of the chain included.
 */
async function givenObjects(
  pack: BitmappedPack,
  wants: readonly ObjectId[],
  typeAt: (p: number) => ObjectType,
  headerOf: (oid: ObjectId) => Promise<{ type: ObjectType } | undefined>,
  readObject: (oid: ObjectId) => Promise<{ type: ObjectType; data: Uint8Array } | undefined>,
): Promise<Set<ObjectId>> {
  const given = new Set<ObjectId>(wants);
  for (let oid of wants) {
    for (let guard = 0; guard < 100; guard++) {
      const p = pack.position(oid);
      const type = p >= 0 ? typeAt(p) : (await headerOf(oid))?.type;
      given.add(oid);
      if (type !== 'tag') break;
      const tag = await readObject(oid);
      if (!tag) break;
      oid = parseTagTarget(tag.data);
    }
  }
  return given;
}

/** Continues git's name hash over `bytes[start..end]` (dir/name continues dir's). */
function hashMore(h: number, bytes: Uint8Array, start: number, end: number, slash: boolean): number {
  if (slash) h = ((h >>> 2) + (0x2f << 24)) >>> 0;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    h = ((h >>> 2) + (c << 24)) >>> 0;
  }
  return h;
}

/**
 * The bitmap walk when the store has a bitmapped pack and the request is one it answers; else
 * undefined (walk instead). A bitmap found corrupt while it is read is ignored the same way.
 */
export async function tryBitmapWalk(
  store: ObjectStore,
  options: BitmapWalkOptions,
): Promise<BitmapEnumeration | undefined> {
  if (!store.bitmappedPack || !bitmapWalkApplies(options)) return undefined;
  const pack = await store.bitmappedPack();
  if (!pack) return undefined;
  try {
    return await bitmapWalk(store, pack, options);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'BITMAP_CORRUPT') return undefined;
    throw error;
  } finally {
    // what the walk decoded is in its own bits now
    pack.bitmaps.dropDecoded();
  }
}

/** The objects a bitmap walk selected as a list: the pack's in pack order, then the others. */
export async function bitmapObjects(e: BitmapEnumeration): Promise<PackObject[]> {
  const { pack, bits } = e;
  await pack.bitmaps.loadNameHashes();
  const { commits, trees, blobs } = pack.bitmaps;
  const out: PackObject[] = [];
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w]!;
    while (word !== 0) {
      const low = word & -word;
      const p = w * 32 + 31 - Math.clz32(low);
      word = (word ^ low) >>> 0;
      const type: ObjectType = hasBit(commits, p)
        ? 'commit'
        : hasBit(trees, p)
          ? 'tree'
          : hasBit(blobs, p)
            ? 'blob'
            : 'tag';
      out.push({ oid: pack.oidAt(p), type, nameHash: pack.nameHashAt(p) });
    }
  }
  out.push(...e.extra);
  return out;
}

/** What the receiver has, as a pack writer asks it (thin-pack bases). */
export function bitmapHaves(e: BitmapEnumeration): { has(oid: ObjectId): boolean } {
  return {
    has(oid) {
      const p = e.pack.position(oid);
      return p >= 0 && hasBit(e.haves, p);
    },
  };
}
