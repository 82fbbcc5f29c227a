/**
 * Reads a pack's `.idx` (version 2, see idx.ts) into columns with positional reads, a piece at a
 * time: the ids go straight into their column, the offsets become numbers, the CRCs are only
 * hashed (serving and reading objects do not use them), and the whole file is checked against
 * its SHA-1 trailer on the way. What stays is the ids and a number per object, never the file:
 * git maps the file instead, which private memory does not count. Given synchronous reads of the
 * file, the ids of a large index stay there too (`IndexReadingIds`): a lookup reads the few ids
 * that share its first bits, until lookups are many enough to hold them whole.
 */
import { createSha1 } from '#sha1';
import { PackError } from './errors.js';
import type { FileHandleLike } from './fs-like.js';
import { PackIndex, type PackIndexColumns, readIdxHead } from './idx.js';
import { bytesToHex, type ObjectId } from './object.js';
import { bytesRead } from './store-files.js';

/** Bytes of the CRC and offset tables read at once. */
const PIECE = 64 * 1024;
const HEAD = 8 + 1024;

/** Fills `into` with the file's bytes at `position`, synchronously. */
export type ReadSync = (position: number, into: Uint8Array) => void;

/** A file open for positional reads (`read`), and synchronous ones where the fs has them. */
export type IndexFile = FileHandleLike & Pick<Required<FileHandleLike>, 'read'>;

/**
 * Reads the pack index of `size` bytes in the open `file` at `path` (the `indexReader` option of
 * FsObjectStore: `readPackIndexFile`). It owns the file: it closes it, or leaves it open to the
 * index it returns, which closes it in `closeFile`.
 */
export type PackIndexReader = (file: IndexFile, size: number, path: string) => Promise<PackIndex>;

/** Ids read at once to hash them and count their buckets (a multiple of 20 bytes). */
const ID_PIECE = 3276 * 20;
/** Bytes of ids from which they are left in the file (given `readSync`): fewer are held. */
export const MIN_IDS_IN_FILE = 256 * 1024;
/**
 * Lookups answered from the file within `LOOKUP_SPAN_MS` past which the ids are read into memory
 * whole: a walk looks ids up by the hundred thousand in a few seconds, where one positional read
 * each would cost more than holding them, while serving by bitmaps looks up only the requested
 * tips, a few thousand a request. Counted over a span, not over the index's life: a server that
 * stays up would otherwise pass any count, request after request, and hold every id for good.
 */
export const LOOKUPS_FROM_FILE = 16_384;
export const LOOKUP_SPAN_MS = 10_000;
/** Ids in one bucket past which they are read whole (ids are uniformly spread). */
const MAX_BUCKET = 1024;

/**
 * `readPackIndex` over an open file (a `PackIndexReader`): with synchronous reads, the ids of a
 * large index stay in the file, which stays open until the index's `closeFile`.
 */
export async function readPackIndexFile(file: IndexFile, size: number, path: string): Promise<PackIndex> {
  const shorter = () => new PackError('IDX_TRUNCATED', `${path} is shorter than it was`);
  const readSync = file.readSync?.bind(file);
  let index: PackIndex | undefined;
  try {
    index = await readPackIndex(
      size,
      async (position, into) => {
        for (let got = 0, n = 0; got < into.length; got += n) {
          n = bytesRead(await file.read(into, got, into.length - got, position + got));
          if (n <= 0) throw shorter();
        }
      },
      readSync &&
        ((position, into) => {
          for (let got = 0, n = 0; got < into.length; got += n) {
            n = readSync(into, got, into.length - got, position + got);
            if (n <= 0) throw shorter();
          }
        }),
      () => file.close(),
    );
    return index;
  } finally {
    if (!(index instanceof IndexReadingIds)) await file.close();
  }
}

/**
 * The index of `size` bytes that `read` reads (`into.length` bytes at `position`, all of them),
 * held in columns; a file that does not parse or does not match its checksum throws the IDX_*
 * errors of `new PackIndex(bytes, { verify: true })`. Given `readSync`, the ids of an index of
 * `MIN_IDS_IN_FILE` bytes of ids or more are left in the file (an `IndexReadingIds`, whose
 * `closeFile` calls `closeFile` here once it needs the file no more).
 */
export async function readPackIndex(
  size: number,
  read: (position: number, into: Uint8Array) => Promise<void>,
  readSync?: ReadSync,
  closeFile?: () => Promise<void>,
): Promise<PackIndex> {
  if (size < HEAD + 40) throw new PackError('IDX_TRUNCATED', 'pack index too short');
  const hash = createSha1();
  const head = new Uint8Array(HEAD);
  await read(0, head);
  const fanout = readIdxHead(new DataView(head.buffer));
  const n = fanout[255]!;
  const crcsAt = HEAD + n * 20;
  const offsAt = crcsAt + n * 4;
  const bigsAt = offsAt + n * 4;
  if (size < bigsAt + 40) throw new PackError('IDX_TRUNCATED', 'pack index truncated');
  const large = size - 40 - bigsAt;
  if (large % 8 !== 0) throw new PackError('IDX_CORRUPT', 'pack index has a partial large offset table');
  hash.update(head);
  let ids: Uint8Array | undefined;
  let inFile: IdsInFile | undefined;
  if (readSync && n * 20 >= MIN_IDS_IN_FILE) {
    // the ids hashed and counted by their first bits a piece at a time, and left in the file
    const bits = idBucketBits(n);
    const shift = 16 - bits;
    const starts = new Uint32Array(2 ** bits + 1);
    const idPiece = new Uint8Array(Math.min(ID_PIECE, n * 20));
    for (let at = HEAD; at < crcsAt; at += ID_PIECE) {
      const part = idPiece.subarray(0, Math.min(ID_PIECE, crcsAt - at));
      await read(at, part);
      hash.update(part);
      for (let k = 0; k < part.length; k += 20) starts[(((part[k]! << 8) | part[k + 1]!) >>> shift) + 1]!++;
    }
    for (let b = 1; b < starts.length; b++) starts[b]! += starts[b - 1]!;
    inFile = { read: readSync, close: closeFile ?? (async () => {}), bits, starts };
  } else {
    ids = new Uint8Array(n * 20);
    await read(HEAD, ids);
    hash.update(ids);
  }
  const piece = new Uint8Array(Math.min(PIECE, n * 4));
  for (let at = crcsAt; at < offsAt; at += PIECE) {
    const part = piece.subarray(0, Math.min(PIECE, offsAt - at));
    await read(at, part);
    hash.update(part);
  }
  const offsets = new Uint32Array(n);
  let hasLarge = false;
  for (let at = offsAt, i = 0; at < bigsAt; at += PIECE) {
    const part = piece.subarray(0, Math.min(PIECE, bigsAt - at));
    await read(at, part);
    hash.update(part);
    for (let k = 0; k < part.length; k += 4, i++) {
      const v = ((part[k]! << 24) | (part[k + 1]! << 16) | (part[k + 2]! << 8) | part[k + 3]!) >>> 0;
      offsets[i] = v;
      if (v & 0x80000000) hasLarge = true;
    }
  }
  // the large offsets (packs past 2 GiB) and the trailer
  const tail = new Uint8Array(large + 40);
  await read(bigsAt, tail);
  hash.update(tail.subarray(0, large + 20));
  if (bytesToHex(hash.digest()) !== bytesToHex(tail, large + 20)) {
    throw new PackError('IDX_BAD_CHECKSUM', 'pack index checksum');
  }
  const packHash = bytesToHex(tail, large, large + 20);
  const made = (columns: PackIndexColumns) => (inFile ? new IndexReadingIds(columns, inFile) : new PackIndex(columns));
  if (!hasLarge) return made({ ids, fanout, offsets, packHash });
  const tv = new DataView(tail.buffer);
  const wide = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = offsets[i]!;
    if (!(v & 0x80000000)) {
      wide[i] = v;
      continue;
    }
    const at = (v & 0x7fffffff) * 8;
    if (at + 8 > large) throw new PackError('IDX_CORRUPT', 'large offset index out of range');
    wide[i] = tv.getUint32(at) * 0x100000000 + tv.getUint32(at + 4);
  }
  return made({ ids, fanout, offsets: wide, packHash });
}

/** The bits of an id's start that an index over its file buckets `count` ids by: a few a bucket. */
function idBucketBits(count: number): number {
  return Math.max(8, Math.min(16, Math.ceil(Math.log2(count + 1)) - 2));
}

/**
 * Sorted ids left in an .idx file: `read` reads its bytes at a position, synchronously;
 * `starts[k]` is the first id whose first `bits` bits (8 to 16) are at least `k` (`2 ** bits + 1`
 * values), so that a lookup reads the few ids sharing its first bits.
 */
interface IdsInFile {
  readonly read: ReadSync;
  readonly close: () => Promise<void>;
  readonly bits: number;
  readonly starts: Uint32Array;
}

/**
 * A pack index whose sorted ids stay in its file (as git maps the file), read when asked: a
 * lookup reads the ids of its bucket, `oidAt` one id. Past `LOOKUPS_FROM_FILE` lookups within
 * `LOOKUP_SPAN_MS`, or on a bucket of over `MAX_BUCKET` ids, or at `closeFile`, it reads them
 * whole and answers as a `PackIndex` in columns does.
 */
export class IndexReadingIds extends PackIndex {
  readonly #file: IdsInFile;
  /** The columns but the ids, for the index the ids make once read whole. */
  readonly #columns: PackIndexColumns;
  #whole: PackIndex | undefined;
  /** Lookups since `#spanStart` (see LOOKUPS_FROM_FILE). */
  #lookups = 0;
  #spanStart = Number.NEGATIVE_INFINITY;
  #open = true;
  /** The ids of the last bucket read (reused). */
  #bucket: Uint8Array = new Uint8Array(0);

  constructor(columns: PackIndexColumns, file: IdsInFile) {
    super(columns);
    this.#columns = columns;
    this.#file = file;
  }

  /** Whether the ids are still read from the file when asked. */
  get idsInFile(): boolean {
    return this.#whole === undefined;
  }

  override oidAt(i: number): ObjectId {
    const whole = this.#counted();
    if (whole) return whole.oidAt(i);
    const id = new Uint8Array(20);
    this.#read(HEAD + i * 20, id);
    return bytesToHex(id);
  }

  override findRaw(key: Uint8Array, at: number): number {
    const whole = this.#counted();
    if (whole) return whole.findRaw(key, at);
    if (at < 0 || at + 20 > key.length) throw new PackError('IDX_CORRUPT', 'object id cut short');
    const { bits, starts } = this.#file;
    const b = ((key[at]! << 8) | key[at + 1]!) >>> (16 - bits);
    const first = starts[b]!;
    const count = starts[b + 1]! - first;
    if (count === 0) return -1;
    // ids this crowded (not spread as hashes are) are searched in memory
    if (count > MAX_BUCKET) return this.#held().findRaw(key, at);
    if (this.#bucket.length < count * 20) this.#bucket = new Uint8Array(Math.max(count * 20, 512));
    const d = this.#bucket.subarray(0, count * 20);
    this.#read(HEAD + first * 20, d);
    // from the first byte the bucket does not tell apart
    const from = bits === 16 ? 2 : 1;
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const o = mid * 20;
      let c = 0;
      for (let k = from; k < 20; k++) {
        c = d[o + k]! - key[at + k]!;
        if (c !== 0) break;
      }
      if (c === 0) return first + mid;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  override async closeFile(): Promise<void> {
    if (!this.#open) return;
    try {
      this.#held();
    } finally {
      this.#open = false;
      await this.#file.close();
    }
  }

  /** Reads ids from the file, which a `closeFile` that could not read them whole has closed. */
  #read(position: number, into: Uint8Array): void {
    if (!this.#open) throw new PackError('STORE_IO', 'pack index file closed before its ids were read');
    this.#file.read(position, into);
  }

  /**
   * Counts a lookup: the index of the ids held whole once lookups are many within a span, else
   * undefined (a lookup reads the file anyway: the clock costs little beside it).
   */
  #counted(): PackIndex | undefined {
    if (this.#whole) return this.#whole;
    const now = performance.now();
    if (now - this.#spanStart > LOOKUP_SPAN_MS) {
      this.#spanStart = now;
      this.#lookups = 0;
    }
    if (++this.#lookups > LOOKUPS_FROM_FILE) return this.#held();
    return undefined;
  }

  /** The ids read whole, in an index of their own (read once). */
  #held(): PackIndex {
    if (!this.#whole) {
      const ids = new Uint8Array(this.count * 20);
      this.#read(HEAD, ids);
      this.#whole = new PackIndex({ ...this.#columns, ids });
      this.#bucket = new Uint8Array(0);
    }
    return this.#whole;
  }
}
