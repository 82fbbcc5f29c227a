/**
 * Pack reuse by ranges (git's pack-bitmap.c `reuse_partial_packfile_from_bitmap` and
 * builtin/pack-objects.c `write_reused_pack`): the entries of the bitmapped pack that a pack
 * sends are copied from the pack file as they are stored, in pack order, in contiguous runs
 * (the whole body of the pack when every object goes), read in chunks of bounded size, so the
 * memory is the chunk's, not the pack's.
 *
 * An entry goes out verbatim unless its base reference must change:
 * - an OFS_DELTA whose base is sent, but a gap before it (entries not sent) shortened the
 *   distance, gets its header re-encoded with the new distance (REF_DELTA when the receiver
 *   cannot take OFS_DELTA);
 * - an OFS_DELTA whose base is not sent but the receiver has it (a thin pack) becomes a
 *   REF_DELTA naming the base;
 * - a delta whose base is neither sent nor on the receiver is not reused: the object is
 *   rebuilt and written whole.
 * The compressed data is always copied as it is. Objects outside the bitmapped pack are the
 * writer's, after these (see pack-writer.ts).
 *
 * With `lead` (a clone's HEAD commit), that commit and the trees under it that the pack sends go
 * first, whole (copied as stored when stored whole, else rebuilt and deflated), then the ranges
 * without them: a receiver that shows HEAD's tree while the pack comes (a clone's first view) has
 * all it needs from the first bytes instead of after every older commit. A pack may order its
 * entries freely as long as a base precedes its OFS_DELTA; the deltas on a moved entry point
 * back to it there.
 */
import { deflate } from '#zlib';
import type { BitmapEnumeration } from './bitmap-walk.js';
import { parseCommitLinks } from './commit.js';
import {
  decodeEntryHeader,
  EntryType,
  encodeEntryHeader,
  isWholeEntry,
  MAX_ENTRY_HEADER,
  writeEntryHeader,
} from './entry-header.js';
import { PackError, throwIfAborted } from './errors.js';
import { countBits, hasBit } from './ewah.js';
import { bytesToHex, hexToBytes, type ObjectId, type ObjectType, TYPE_CODES } from './object.js';
import type { ObjectStore } from './store.js';
import { forEachTreeEntryRaw } from './tree.js';

/**
 * Bytes read from the pack at once: the bound on the memory a reuse holds (twice this when
 * borrowed). A read of this size costs little more per byte than a larger one.
 */
export const DEFAULT_REUSE_CHUNK = 256 * 1024;
/** Bytes read to decode an entry header (the longest, a REF_DELTA's, fits). */
const HEADER_READ = 32;

/** Entries a pack writer puts right after the pack header, before its own. */
export interface PackPrefix {
  /** How many entries it writes. */
  readonly count: number;
  /** Its bytes, the first at output offset `at`; each chunk is the caller's to keep. */
  chunks(at: number): AsyncIterable<Uint8Array>;
}

export interface RangeReuseOptions {
  /** The receiver has the objects of `haves` (REF_DELTA against them is allowed). */
  thin?: boolean;
  /** The receiver takes OFS_DELTA (default true). */
  ofsDelta?: boolean;
  /** zlib level of the objects rewritten whole (default 6). */
  level?: number;
  signal?: AbortSignal;
  /** Bytes read at once (default 256 KiB). */
  chunkBytes?: number;
  /**
   * The caller is done with each chunk before it asks for the next: chunks read verbatim may
   * then be views of two buffers used in turn, instead of a new buffer each.
   */
  borrow?: boolean;
  /** A commit whose entry and trees (those sent) go first, whole (see the module header). */
  lead?: ObjectId;
}

/** Most entries put first for `lead`: the work of reading a huge tree is bounded. */
const MAX_LEAD = 1 << 16;

/**
 * Positions of `commit` and of the trees under it that `e` sends from the bitmapped pack, the
 * commit first, then the trees breadth first; none when the commit is not sent from there.
 */
async function leadPositions(store: ObjectStore, e: BitmapEnumeration, commit: ObjectId): Promise<number[]> {
  const { pack, bits } = e;
  const sentAt = (oid: ObjectId) => {
    const p = pack.position(oid);
    return p >= 0 && hasBit(bits, p) ? p : -1;
  };
  const first = sentAt(commit);
  if (first < 0) return [];
  const head = await store.read(commit);
  if (head?.type !== 'commit') return [];
  const out = [first];
  const seen = new Set<number>();
  const queue = [parseCommitLinks(head.data).tree];
  for (let i = 0; i < queue.length && out.length < MAX_LEAD; i++) {
    const oid = queue[i]!;
    const p = sentAt(oid);
    if (p < 0 || seen.has(p)) continue;
    seen.add(p);
    out.push(p);
    const tree = await store.read(oid);
    if (tree?.type !== 'tree') continue;
    const data = tree.data;
    forEachTreeEntryRaw(data, (mode, _nameStart, _nameEnd, idAt) => {
      if (mode === 0o40000) queue.push(bytesToHex(data, idAt, idAt + 20));
    });
  }
  return out;
}

/**
 * Buffers of the lengths asked for. `borrow`: views of two spares used in turn, so a chunk handed
 * out is written into again only after the next one was asked for and handed out; each spare
 * grows as requests need (an incremental fetch's batches are small), up to a chunk unless one
 * asks for more. Otherwise a new buffer each time.
 */
function buffersInTurn(borrow: boolean, chunkBytes: number): (length: number) => Uint8Array {
  if (!borrow) return (length) => new Uint8Array(length);
  const spares: (Uint8Array | undefined)[] = [undefined, undefined];
  let turn = 0;
  return (length) => {
    const k = turn++ & 1;
    let spare = spares[k];
    if (!spare || spare.length < length) {
      spare = new Uint8Array(Math.max(length, Math.min(chunkBytes, (spare?.length ?? 32 * 1024) * 4)));
      spares[k] = spare;
    }
    return spare.subarray(0, length);
  };
}

/** The selected entries of the bitmapped pack, reused by ranges. */
export function rangeReuse(store: ObjectStore, e: BitmapEnumeration, options: RangeReuseOptions = {}): PackPrefix {
  return { count: countBits(e.bits), chunks: (at) => reuseChunks(store, e, options, at) };
}

async function* reuseChunks(
  store: ObjectStore,
  e: BitmapEnumeration,
  options: RangeReuseOptions,
  start: number,
): AsyncGenerator<Uint8Array> {
  const { pack, bits, haves } = e;
  const n = pack.count;
  const chunkBytes = Math.max(HEADER_READ, options.chunkBytes ?? DEFAULT_REUSE_CHUNK);
  const ofs = options.ofsDelta !== false;
  const thin = options.thin === true;
  const level = options.level ?? 6;
  const extra = new Set(e.extra.map((o) => o.oid));
  // with `borrow`, reads go into two buffers in turn, and so do the chunks a batch is copied
  // into when it does not go out as it was read
  const readBuffer = buffersInTurn(options.borrow === true, chunkBytes);
  const outBuffer = buffersInTurn(options.borrow === true, chunkBytes);
  // the lead's entries go first; the ranges are the other entries sent
  const lead = options.lead !== undefined ? await leadPositions(store, e, options.lead) : [];
  const ranged = lead.length > 0 ? bits.slice() : bits;
  for (const p of lead) ranged[p >>> 5]! &= ~(1 << (p & 31));
  /** Output offset of each lead entry written. */
  const leadAt = new Map<number, number>();
  /** Where the entry at `p` starts and ends, in pack order. */
  const offsetAt = (p: number) => pack.offsetAt(p);
  const endAt = (p: number) => pack.endAt(p);
  /**
   * Where the entries of the ranges went out. While every entry written so far went out as far
   * from its place in the pack as the first (the whole pack sent as it is: a full clone), that
   * one distance says it: the entries before position `straight` lie at their offset plus
   * `shift`, and no table is made. From the first entry that does not, a table: output offset
   * plus one of each entry of the ranges written (by its rank among them), 0 before; four bytes
   * an entry (the size of the objects sent, held while they go out), eight once an offset no
   * longer fits.
   */
  let shift = 0;
  let straight = 0;
  let rank: Uint32Array | undefined;
  let written: Uint32Array | Float64Array | undefined;
  const writtenAt = (p: number) => {
    if (!hasBit(ranged, p)) return lead.length > 0 ? (leadAt.get(p) ?? -1) : -1;
    if (written) return written[rankOf(ranged, rank!, p)]! - 1;
    return p < straight ? offsetAt(p) + shift : -1;
  };
  const setWritten = (p: number, at: number) => {
    if (!written) {
      if (straight === 0) shift = at - offsetAt(p);
      if (at === offsetAt(p) + shift) {
        straight = p + 1;
        return;
      }
      // the table, with the entries that went out straight so far
      rank = bitRanks(ranged);
      const count = countBits(ranged);
      const table = pack.size + Math.max(0, shift) < 0xffffffff ? new Uint32Array(count) : new Float64Array(count);
      for (let r = nextSet(ranged, 0, straight); r < straight; r = nextSet(ranged, r + 1, straight)) {
        table[rankOf(ranged, rank, r)] = offsetAt(r) + shift + 1;
      }
      written = table;
    }
    if (at >= 0xffffffff && written instanceof Uint32Array) written = Float64Array.from(written);
    written[rankOf(ranged, rank!, p)] = at + 1;
  };
  let out = start;
  /** Pieces of the chunk being built (entries put first, rebuilt whole, or a large one's header). */
  let pieces: Uint8Array[] = [];
  let piecesBytes = 0;
  /** Adds bytes to the chunk being built and moves `out` past them. */
  const push = (bytes: Uint8Array) => {
    pieces.push(bytes);
    piecesBytes += bytes.length;
    out += bytes.length;
  };
  /**
   * The pieces as chunks (each a buffer of its own): borrowed, each as it is; else one chunk,
   * a copy of them all.
   */
  const cut = (): Uint8Array[] => {
    const list = pieces;
    const bytes = piecesBytes;
    pieces = [];
    piecesBytes = 0;
    if (options.borrow || list.length === 1) return list;
    const chunk = new Uint8Array(bytes);
    let at = 0;
    for (const p of list) {
      chunk.set(p, at);
      at += p.length;
    }
    return [chunk];
  };
  /** The object at `p` rebuilt and deflated whole: its header and its data. */
  const wholeEntry = async (p: number): Promise<[Uint8Array, Uint8Array]> => {
    const oid = pack.oidAt(p);
    const obj = await store.read(oid);
    if (!obj) throw new PackError('OBJECT_NOT_FOUND', `object ${oid} is missing`);
    return [encodeEntryHeader(TYPE_CODES[obj.type as ObjectType], obj.data.length), deflate(obj.data, level)];
  };
  const whole = async (p: number) => {
    for (const piece of await wholeEntry(p)) push(piece);
  };
  // what `plan` decided for the last entry: its stored header's length, and for a rewritten
  // header, its type, size and base (an OFS_DELTA's distance, a REF_DELTA's base position)
  let storedLength = 0;
  let newType: EntryType = EntryType.OFS_DELTA;
  let newSize = 0;
  let newBase = 0;
  /**
   * How the entry at `p` (its bytes from `bytes[at]` on) goes out when written at `out`:
   * VERBATIM, REWRITE (the header `writeHeader` writes, then its compressed data) or WHOLE.
   */
  const plan = (p: number, bytes: Uint8Array, at: number): Plan => {
    const offset = offsetAt(p);
    const h = decodeEntryHeader(bytes, at, offset);
    if (!h) throw new PackError('OBJECT_CORRUPT', `entry header cut short at ${offset}`);
    storedLength = h.length;
    if (isWholeEntry(h)) return VERBATIM;
    newSize = h.size;
    if (h.type === EntryType.OFS_DELTA) {
      const bp = pack.positionAt(h.baseOffset);
      if (bp < 0) throw new PackError('OBJECT_CORRUPT', `no entry at offset ${h.baseOffset}`);
      const baseAt = writtenAt(bp);
      if (baseAt >= 0) {
        const distance = out - baseAt;
        if (ofs && distance === offset - h.baseOffset) return VERBATIM;
        newType = ofs ? EntryType.OFS_DELTA : EntryType.REF_DELTA;
        newBase = ofs ? distance : bp;
        return REWRITE;
      }
      if (thin && hasBit(haves, bp)) {
        newType = EntryType.REF_DELTA;
        newBase = bp;
        return REWRITE;
      }
      return WHOLE;
    }
    // REF_DELTA: fine wherever its base is, in this pack or on the receiver
    const bp = pack.position(h.baseOid);
    const sent = bp >= 0 ? hasBit(bits, bp) : extra.has(h.baseOid);
    if (sent || (thin && bp >= 0 && hasBit(haves, bp))) return VERBATIM;
    return WHOLE;
  };
  /** Writes the header `plan` decided on into `into` at `at`; returns where it ends. */
  const writeHeader = (into: Uint8Array, at: number): number =>
    newType === EntryType.OFS_DELTA
      ? writeEntryHeader(into, at, newType, newSize, newBase)
      : writeEntryHeader(into, at, newType, newSize, hexToBytes(pack.oidAt(newBase)));

  for (const p of lead) {
    throwIfAborted(options.signal);
    const from = offsetAt(p);
    const entry = new Uint8Array(endAt(p) - from);
    await pack.source.readInto(from, entry, DIRECT);
    const h = decodeEntryHeader(entry, 0, from);
    if (!h) throw new PackError('OBJECT_CORRUPT', `entry header cut short at ${from}`);
    leadAt.set(p, out);
    if (isWholeEntry(h)) push(entry);
    else await whole(p);
    if (piecesBytes >= chunkBytes) yield* cut();
  }
  if (pieces.length > 0) yield* cut();
  let p = nextSet(ranged, 0, n);
  while (p < n) {
    throwIfAborted(options.signal);
    // a batch: the next entries sent whose bytes fit the chunk (at least one entry), read at
    // once with the entries not sent between them when those are few bytes (one read instead
    // of one per run)
    const from = offsetAt(p);
    let q = p;
    let to = endAt(p);
    let sentBytes = to - from;
    for (let r = nextSet(ranged, p + 1, n); r < n; r = nextSet(ranged, r + 1, n)) {
      const end = endAt(r);
      if (offsetAt(r) - to > MAX_READ_GAP || end - from > chunkBytes) break;
      sentBytes += end - offsetAt(r);
      q = r;
      to = end;
    }
    if (to - from > chunkBytes) {
      // one entry larger than a chunk: its header, then its data streamed
      const head = new Uint8Array(Math.min(HEADER_READ, to - from));
      await pack.source.readInto(from, head, DIRECT);
      const entryAt = out;
      const how = plan(p, head, 0);
      if (how === WHOLE) await whole(p);
      else if (how === VERBATIM) push(head.subarray(0, storedLength));
      else {
        const header = new Uint8Array(MAX_ENTRY_HEADER);
        push(header.subarray(0, writeHeader(header, 0)));
      }
      if (pieces.length > 0) yield* cut();
      if (how !== WHOLE) {
        for (let at = from + storedLength; at < to; at += chunkBytes) {
          throwIfAborted(options.signal);
          const piece = readBuffer(Math.min(chunkBytes, to - at));
          await pack.source.readInto(at, piece, DIRECT);
          out += piece.length;
          yield piece;
        }
      }
      setWritten(p, entryAt);
      p = nextSet(ranged, p + 1, n);
      continue;
    }
    const buffer = readBuffer(to - from);
    await pack.source.readInto(from, buffer, DIRECT);
    // the batch's entries as they go out: copied into `chunk` (made on the first gap or rewritten
    // header; a batch read in one stretch and sent as it is goes out as the buffer read), where
    // `run` is the verbatim stretch of the buffer not copied yet; `out` counts it already (plan()
    // reads it for distances)
    const chunkAt = out;
    let chunk: Uint8Array | undefined;
    let filled = 0;
    let runStart = -1;
    let runEnd = -1;
    const room = (bytes: number) => {
      if (chunk && filled + bytes <= chunk.length) return chunk;
      const grown = outBuffer(Math.max(sentBytes + 64, filled + bytes, chunk ? chunk.length * 2 : 0));
      if (chunk) grown.set(chunk.subarray(0, filled));
      chunk = grown;
      return grown;
    };
    const flushRun = () => {
      if (runStart < 0) return;
      room(runEnd - runStart).set(buffer.subarray(runStart, runEnd), filled);
      filled += runEnd - runStart;
      runStart = -1;
    };
    for (let r = p; r <= q; r = nextSet(ranged, r + 1, n)) {
      const at = offsetAt(r) - from;
      const end = endAt(r) - from;
      const how = plan(r, buffer, at);
      setWritten(r, out);
      if (how === VERBATIM) {
        if (runStart >= 0 && runEnd !== at) flushRun();
        if (runStart < 0) runStart = at;
        runEnd = end;
        out += end - at;
        continue;
      }
      flushRun();
      if (how === REWRITE) {
        const into = room(MAX_ENTRY_HEADER + end - at - storedLength);
        filled = writeHeader(into, filled);
        into.set(buffer.subarray(at + storedLength, end), filled);
        filled += end - at - storedLength;
      } else {
        for (const piece of await wholeEntry(r)) {
          room(piece.length).set(piece, filled);
          filled += piece.length;
        }
      }
      out = chunkAt + filled;
    }
    if (chunk === undefined) yield buffer.subarray(runStart, runEnd);
    else {
      flushRun();
      yield chunk.subarray(0, filled);
    }
    p = nextSet(ranged, q + 1, n);
  }
}

/** How an entry of the bitmapped pack goes out (see `plan` in reuseChunks). */
type Plan = 0 | 1 | 2;
const VERBATIM: Plan = 0;
const REWRITE: Plan = 1;
const WHOLE: Plan = 2;

/** Reads of ranges each read once, in batches: past any cache of pages. */
const DIRECT = { direct: true };

/**
 * Bytes of entries not sent that a batch reads through to reach the next entry sent: reading
 * them costs less than another read.
 */
const MAX_READ_GAP = 16 * 1024;

/** Set bits before each 32-bit word of `bits` (for `rankOf`). */
function bitRanks(bits: Uint32Array): Uint32Array {
  const ranks = new Uint32Array(bits.length);
  let total = 0;
  for (let w = 0; w < bits.length; w++) {
    ranks[w] = total;
    total += popCount(bits[w]!);
  }
  return ranks;
}

/** How many bits before bit `p` are set (`p`'s index among the set bits when it is set). */
function rankOf(bits: Uint32Array, ranks: Uint32Array, p: number): number {
  const w = p >>> 5;
  const low = p & 31;
  return ranks[w]! + (low === 0 ? 0 : popCount(bits[w]! & (0xffffffff >>> (32 - low))));
}

function popCount(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The first set bit at or after `from`, or `n`. */
function nextSet(bits: Uint32Array, from: number, n: number): number {
  let i = from;
  while (i < n) {
    const w = bits[i >>> 5]! >>> (i & 31);
    if (w === 0) {
      i = (i | 31) + 1;
      continue;
    }
    return Math.min(n, i + (31 - Math.clz32(w & -w)));
  }
  return n;
}
