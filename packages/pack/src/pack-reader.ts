/**
 * A streaming pack parser over any chunking of its input (gitformat-pack, "pack-*.pack files"):
 *
 *   pack    = "PACK" u32be(version 2|3) u32be(count) count*entry sha1(everything before)
 *   entry   = header [base] zlib(data)        (header and base: see entry-header.ts)
 *
 * Entries are yielded in order with their offset and CRC32; whole objects get their id. zlib
 * streams may cross input chunks anywhere. Objects above `streamThreshold` are inflated in
 * pieces (`keepLarge: false` hashes them without keeping the data).
 */
import { createSha1, type Sha1 } from '#sha1';
import { crc32, type InflateRest, inflateOne, loadStreamInflater } from '#zlib';
import { decodeEntryHeader, EntryType, isWholeEntryType } from './entry-header.js';
import { PackError, throwIfAborted } from './errors.js';
import { bytesToHex, CODE_TYPES, hashObjectSync, type ObjectId, type ObjectType, objectHeader } from './object.js';

export interface PackLimits {
  /** Objects a pack may declare (default 2^26). */
  maxObjects?: number;
  /** Declared inflated size of one entry (default 1 GiB). */
  maxObjectSize?: number;
  /** Size of an object rebuilt from a delta (default 1 GiB). */
  maxDeltaResultSize?: number;
  /** Delta chain length (default 10,000). */
  maxDeltaDepth?: number;
  /** Inflated bytes over the whole pack, deltas' results included (default 64 GiB). */
  maxInflatedBytes?: number;
}

export const DEFAULT_LIMITS: Required<PackLimits> = {
  maxObjects: 2 ** 26,
  maxObjectSize: 2 ** 30,
  maxDeltaResultSize: 2 ** 30,
  maxDeltaDepth: 10_000,
  maxInflatedBytes: 64 * 2 ** 30,
};

export type PackEntry =
  | {
      kind: 'whole';
      offset: number;
      /** Offset of the zlib stream. */
      dataOffset: number;
      end: number;
      crc32: number;
      type: ObjectType;
      size: number;
      oid: ObjectId;
      /**
       * Undefined when the object was streamed and not kept. May be a view of a buffer shared
       * with other entries: copy it to keep or transfer it.
       */
      data: Uint8Array | undefined;
    }
  | {
      kind: 'ofs-delta';
      offset: number;
      dataOffset: number;
      end: number;
      crc32: number;
      size: number;
      baseOffset: number;
      data: Uint8Array;
    }
  | {
      kind: 'ref-delta';
      offset: number;
      dataOffset: number;
      end: number;
      crc32: number;
      size: number;
      baseOid: ObjectId;
      data: Uint8Array;
    };

export interface PackReaderOptions {
  limits?: PackLimits;
  signal?: AbortSignal;
  /** Entries larger than this are inflated in pieces (default 8 MiB). */
  streamThreshold?: number;
  /** Keep the data of streamed whole objects (default true). */
  keepLarge?: boolean;
  /**
   * Whole objects larger than this (and not streamed) are inflated into one buffer the reader
   * reuses, not into new memory: such an entry's `data` is valid only until the next entry is
   * read (copy it to keep it). Default: never.
   */
  lendAbove?: number;
  /**
   * Deltas are inflated into the lent buffer too (see `lendAbove`): their `data` is then valid
   * only until the next entry is read. Default: false.
   */
  lendDeltas?: boolean;
  /**
   * Receives every byte of the pack (trailer included) in order. Views the reader's reused buffer
   * are valid during the call only (copy what you keep); `owned` views lie in an input chunk,
   * which the reader never writes to, and may be kept as they are.
   */
  onBytes?: (bytes: Uint8Array, owned: boolean) => void;
  /**
   * The input's chunks are the source's reused buffers: each is valid only until the next one is
   * asked for, so the reader copies each into its own buffer as it comes. A source that fills one
   * buffer again and again then allocates nothing per chunk (chunks that die young pile up as
   * garbage until the next collection). Default: false (chunks are kept as they are).
   */
  reusedInput?: boolean;
}

/** The longest zlib stream accepted for `size` inflated bytes (stored blocks cost 5 bytes per 64 KiB). */
function maxCompressed(size: number): number {
  return size * 2 + 64 * 1024;
}

export class PackReader {
  readonly #it: AsyncIterator<Uint8Array>;
  readonly #limits: Required<PackLimits>;
  readonly #signal: AbortSignal | undefined;
  readonly #threshold: number;
  readonly #keepLarge: boolean;
  readonly #lendAbove: number;
  readonly #lendDeltas: boolean;
  readonly #reusedInput: boolean;
  /** The buffer lent out for large whole objects (see `lendAbove`), grown as needed. */
  #lent: Uint8Array | undefined;
  readonly #onBytes: ((bytes: Uint8Array, owned: boolean) => void) | undefined;
  #buf: Uint8Array = new Uint8Array(0);
  /**
   * Where bytes that cross input chunks (an entry's zlib stream) are put together: one buffer,
   * grown as needed and reused, rather than a new one per crossing. `#buf` is a view of it then.
   */
  #joint: Uint8Array = new Uint8Array(0);
  #pos = 0;
  /** Pack offset of `#buf[#pos]`. */
  #offset = 0;
  #eof = false;
  #hash: Sha1 = createSha1();
  /**
   * Consumed bytes are hashed and handed to `onBytes` in runs (`#flush`), not one call per
   * consumed field: `#buf` before this index is done.
   */
  #hashFrom = 0;
  #crc = 0;
  /** The current entry's bytes in `#buf` before this index are in `#crc`. */
  #crcFrom = 0;
  #count = -1;
  #read = 0;
  /**
   * An entry `#entrySync` began whose zlib stream goes on past the buffered bytes: its header is
   * consumed and its stream inflated so far; `#entry` feeds it the input that follows.
   */
  #partial:
    | {
        rest: InflateRest;
        offset: number;
        dataOffset: number;
        size: number;
        /** Compressed bytes fed so far. */
        used: number;
        type: ObjectType | undefined;
        baseOid: ObjectId | undefined;
        baseOffset: number;
      }
    | undefined;
  #inflated = 0;
  version = 0;
  /** The verified trailer checksum once `entries()` finished. */
  hash: string | undefined;

  constructor(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: PackReaderOptions = {}) {
    this.#it =
      Symbol.asyncIterator in source
        ? source[Symbol.asyncIterator]()
        : (async function* () {
            yield* source;
          })();
    this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#signal = options.signal;
    this.#threshold = options.streamThreshold ?? 8 * 2 ** 20;
    this.#keepLarge = options.keepLarge ?? true;
    this.#lendAbove = options.lendAbove ?? Number.POSITIVE_INFINITY;
    this.#lendDeltas = options.lendDeltas ?? false;
    this.#reusedInput = options.reusedInput ?? false;
    this.#onBytes = options.onBytes;
  }

  /** Where a whole object of `size` bytes is inflated: the lent buffer, or new memory (undefined). */
  #into(size: number): Uint8Array | undefined {
    if (size <= this.#lendAbove) return undefined;
    // one byte more than the data: inflate checks that nothing follows it
    const lent = this.#lent;
    if (lent === undefined || lent.length <= size) {
      this.#lent = new Uint8Array(Math.max(size + 1, Math.min(2 * (lent?.length ?? 0), this.#threshold + 1)));
    }
    return this.#lent;
  }

  /** Where a delta of `size` bytes is inflated (see `lendDeltas`). */
  #deltaInto(size: number): Uint8Array | undefined {
    return this.#lendDeltas && size <= this.#threshold ? this.#into(size) : undefined;
  }

  get count(): number {
    return this.#count;
  }

  /** Entries not read yet (after `readHeader`). */
  get remaining(): number {
    return this.#count - this.#read;
  }

  get limits(): Required<PackLimits> {
    return this.#limits;
  }

  /** Counts inflated bytes against `maxInflatedBytes` (delta results are counted by the caller). */
  addInflated(n: number): void {
    this.#inflated += n;
    if (this.#inflated > this.#limits.maxInflatedBytes) {
      throw new PackError('PACK_LIMIT_INFLATED', `more than ${this.#limits.maxInflatedBytes} inflated bytes`);
    }
  }

  get #available(): number {
    return this.#buf.length - this.#pos;
  }

  /**
   * Hashes every byte consumed so far and hands it to `onBytes`. Runs by itself whenever the
   * input buffer moves on; callers that read the pack back through `onBytes` call it first.
   */
  flush(): void {
    if (this.#pos > this.#hashFrom) {
      const view = this.#buf.subarray(this.#hashFrom, this.#pos);
      this.#hashFrom = this.#pos;
      this.#hash.update(view);
      this.#onBytes?.(view, this.#buf.buffer !== this.#joint.buffer);
    }
  }

  /** The current entry's CRC32 up to `#pos`. */
  #crcNow(): number {
    if (this.#pos > this.#crcFrom) {
      this.#crc = crc32(this.#buf.subarray(this.#crcFrom, this.#pos), this.#crc);
      this.#crcFrom = this.#pos;
    }
    return this.#crc >>> 0;
  }

  /** The next chunk of input, undefined at its end (then `#eof`). */
  async #nextChunk(): Promise<Uint8Array | undefined> {
    throwIfAborted(this.#signal);
    const r = await this.#it.next();
    if (r.done) {
      this.#eof = true;
      return undefined;
    }
    if (!(r.value instanceof Uint8Array)) throw new PackError('PACK_BAD_INPUT', 'pack input chunks must be Uint8Array');
    return r.value;
  }

  /** Ensures `n` bytes are buffered; false at end of input with fewer. */
  async #fill(n: number): Promise<boolean> {
    if (this.#available >= n) return true;
    if (this.#eof) return false;
    if (this.#reusedInput) return this.#fillCopying(n);
    const parts: Uint8Array[] = [];
    let have = this.#available;
    while (have < n) {
      const chunk = await this.#nextChunk();
      if (chunk === undefined) break;
      if (chunk.length === 0) continue;
      parts.push(chunk);
      have += chunk.length;
    }
    if (parts.length === 0) return this.#available >= n;
    // the consumed part of the buffer goes: hash it and fold it into the entry's CRC first
    this.flush();
    this.#crcNow();
    if (this.#available === 0 && parts.length === 1) {
      this.#buf = parts[0]!;
    } else {
      const rest = this.#available;
      let joint = this.#joint;
      if (joint.length < have) {
        joint = new Uint8Array(Math.max(have, Math.min(joint.length * 2, have + (1 << 20)), 64 * 1024));
        joint.set(this.#buf.subarray(this.#pos), 0);
        this.#joint = joint;
      } else if (this.#buf.buffer === joint.buffer) {
        // the rest is already in the joint buffer (at the start of `#buf`, a view from 0)
        joint.copyWithin(0, this.#pos, this.#buf.length);
      } else {
        joint.set(this.#buf.subarray(this.#pos), 0);
      }
      let o = rest;
      for (const p of parts) {
        joint.set(p, o);
        o += p.length;
      }
      this.#buf = joint.subarray(0, have);
    }
    this.#pos = 0;
    this.#hashFrom = 0;
    this.#crcFrom = 0;
    return this.#available >= n;
  }

  /** `#fill` for reused input chunks: what is left of the buffer, then each chunk, copied into the joint buffer. */
  async #fillCopying(n: number): Promise<boolean> {
    this.flush();
    this.#crcNow();
    let have = this.#available;
    let joint = this.#joint;
    if (this.#buf.buffer === joint.buffer) joint.copyWithin(0, this.#pos, this.#buf.length);
    else {
      if (joint.length < have) joint = this.#joint = new Uint8Array(Math.max(have, 64 * 1024));
      joint.set(this.#buf.subarray(this.#pos), 0);
    }
    this.#buf = joint.subarray(0, have);
    this.#pos = 0;
    this.#hashFrom = 0;
    this.#crcFrom = 0;
    while (have < n) {
      const chunk = await this.#nextChunk();
      if (chunk === undefined) break;
      if (have + chunk.length > joint.length) {
        const grown = new Uint8Array(Math.max(have + chunk.length, Math.min(joint.length * 2, have + (1 << 20))));
        grown.set(joint.subarray(0, have));
        joint = this.#joint = grown;
      }
      joint.set(chunk, have);
      have += chunk.length;
      this.#buf = joint.subarray(0, have);
    }
    return have >= n;
  }

  #consume(n: number): Uint8Array {
    const view = this.#buf.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    this.#offset += n;
    return view;
  }

  async #need(n: number, what: string): Promise<void> {
    if (this.#available < n && !(await this.#fill(n))) {
      throw new PackError('PACK_TRUNCATED', `pack ends inside ${what}`, { offset: this.#offset });
    }
  }

  /** Reads and checks the 12-byte pack header (`entries()` does this itself). */
  async readHeader(): Promise<void> {
    await this.#need(12, 'the header');
    const h = this.#consume(12);
    if (h[0] !== 0x50 || h[1] !== 0x41 || h[2] !== 0x43 || h[3] !== 0x4b) {
      throw new PackError('PACK_BAD_SIGNATURE', 'not a pack (no PACK signature)', { offset: 0 });
    }
    const view = new DataView(h.buffer, h.byteOffset, 12);
    this.version = view.getUint32(4);
    if (this.version !== 2 && this.version !== 3) {
      throw new PackError('PACK_BAD_VERSION', `pack version ${this.version} is not supported`, { offset: 4 });
    }
    this.#count = view.getUint32(8);
    if (this.#count > this.#limits.maxObjects) {
      throw new PackError(
        'PACK_LIMIT_OBJECTS',
        `pack declares ${this.#count} objects (limit ${this.#limits.maxObjects})`,
        {
          offset: 8,
        },
      );
    }
    this.#read = 0;
  }

  /**
   * The next entry when it lies whole in the bytes already buffered (no waiting, no promise),
   * else undefined: then `next()` reads it. Call only while `remaining > 0`.
   */
  nextSync(): PackEntry | undefined {
    if (this.#partial) return undefined;
    const entry = this.#entrySync();
    if (entry) this.#read++;
    return entry;
  }

  /**
   * The next entry, waiting for input as needed (after `nextSync` came back empty: this does not
   * try the buffered bytes alone again). Call only while `remaining > 0`.
   */
  async next(): Promise<PackEntry> {
    const entry = await this.#entry();
    this.#read++;
    return entry;
  }

  /** Reads and verifies the trailer after the last entry; sets `hash`. */
  async finish(): Promise<void> {
    await this.#need(20, 'the trailer');
    this.flush();
    const expected = bytesToHex(this.#hash.digest());
    const trailer = this.#consume(20);
    this.#hashFrom = this.#pos;
    this.#onBytes?.(trailer, this.#buf.buffer !== this.#joint.buffer);
    const actual = bytesToHex(trailer);
    if (expected !== actual) {
      throw new PackError('PACK_BAD_CHECKSUM', `pack checksum mismatch: trailer ${actual}, content ${expected}`, {
        offset: this.#offset - 20,
      });
    }
    if (await this.#fill(1)) {
      throw new PackError('PACK_TRAILING_DATA', 'bytes after the pack trailer', { offset: this.#offset });
    }
    this.hash = actual;
  }

  async *entries(): AsyncGenerator<PackEntry> {
    try {
      await this.readHeader();
      while (this.#read < this.#count) {
        throwIfAborted(this.#signal);
        yield this.nextSync() ?? (await this.next());
      }
      await this.finish();
    } finally {
      // however the iteration ends (done, broken off, an error)
      this.close();
    }
  }

  /**
   * Gives back the inflate context of an entry begun and not finished (`nextSync` came back empty
   * and `next` was not called): for a reader left before its end. `entries()` does it itself;
   * idempotent. Read no further entry afterwards (that entry's first bytes are consumed).
   */
  close(): void {
    const partial = this.#partial;
    if (!partial) return;
    this.#partial = undefined;
    partial.rest.close();
  }

  /** Throws PACK_LIMIT_OBJECT_SIZE past the limit. */
  #checkSize(size: number, offset: number): void {
    if (size > this.#limits.maxObjectSize) {
      throw new PackError(
        'PACK_LIMIT_OBJECT_SIZE',
        `entry declares ${size} bytes (limit ${this.#limits.maxObjectSize})`,
        {
          offset,
        },
      );
    }
  }

  /**
   * The entry at `#pos` parsed and inflated from the buffer alone, or undefined when it needs more
   * input: either with nothing consumed (a header cut short, a large entry, one over the inflated
   * limit, a stream that cannot be continued), `#entry` then reading it from its start; or, when
   * its zlib stream goes on past the buffer, with its header and every buffered byte consumed
   * (in `#crc`, `#offset` past them) and the inflate so far kept in `#partial`, which `#entry`
   * (`#rest`) finishes with the input that follows. Throws exactly what `#entry` would for the
   * same bytes.
   */
  #entrySync(): PackEntry | undefined {
    const buf = this.#buf;
    const end = buf.length;
    const start = this.#pos;
    const offset = this.#offset;
    this.#crc = 0;
    this.#crcFrom = start;
    const header = decodeEntryHeader(buf, start, offset, end);
    if (!header) return undefined;
    const size = header.size;
    this.#checkSize(size, offset);
    if (size > this.#threshold || this.#inflated + size > this.#limits.maxInflatedBytes) return undefined;
    const p = start + header.length;
    const type = isWholeEntryType(header.type) ? CODE_TYPES[header.type] : undefined;
    const baseOffset = header.type === EntryType.OFS_DELTA ? header.baseOffset : 0;
    const baseOid = header.type === EntryType.REF_DELTA ? header.baseOid : undefined;
    // a stream that surely ends in the buffer goes through the one-shot inflate (Z_FINISH keeps
    // no sliding window); one that may go on past it is inflated so that it can be continued
    const into = type || this.#lendDeltas ? this.#into(size) : undefined;
    const r = inflateOne(buf.subarray(p), size, false, end - p < size + (size >>> 3) + 64, into);
    const dataOffset = offset + (p - start);
    if (r.kind !== 'done') {
      if (!r.rest) return undefined;
      // the stream goes on in the next input: what is inflated so far is kept, not done again
      try {
        this.addInflated(size);
      } catch (error) {
        r.rest.close();
        throw error;
      }
      this.#partial = { rest: r.rest, offset, dataOffset, size, used: end - p, type, baseOid, baseOffset };
      this.#pos = end;
      this.#offset = dataOffset + (end - p);
      return undefined;
    }
    this.addInflated(size);
    this.#pos = p + r.consumed;
    this.#offset = dataOffset + r.consumed;
    return this.#inflatedEntry(offset, dataOffset, size, type, baseOid, baseOffset, r.data);
  }

  /** The entry whose data is inflated and consumed up to `#offset`: a whole object (hashed) or a delta. */
  #inflatedEntry(
    offset: number,
    dataOffset: number,
    size: number,
    type: ObjectType | undefined,
    baseOid: ObjectId | undefined,
    baseOffset: number,
    data: Uint8Array,
  ): PackEntry {
    const end = this.#offset;
    const crc32 = this.#crcNow();
    if (type)
      return { kind: 'whole', offset, dataOffset, end, crc32, type, size, oid: hashObjectSync(type, data), data };
    if (baseOid !== undefined) return { kind: 'ref-delta', offset, dataOffset, end, crc32, size, baseOid, data };
    return { kind: 'ofs-delta', offset, dataOffset, end, crc32, size, baseOffset, data };
  }

  /** Finishes the entry `#entrySync` began (`#partial`) with the input that follows. */
  async #rest(): Promise<PackEntry> {
    const partial = this.#partial!;
    this.#partial = undefined;
    const { offset, dataOffset, size, type, baseOid, baseOffset } = partial;
    const data = await this.#feed(partial.rest, size, partial.used);
    return this.#inflatedEntry(offset, dataOffset, size, type, baseOid, baseOffset, data);
  }

  /** Feeds the input that follows to a stream begun with `used` compressed bytes; its data. */
  async #feed(rest: InflateRest, size: number, used: number): Promise<Uint8Array> {
    try {
      for (;;) {
        throwIfAborted(this.#signal);
        if (this.#available === 0) await this.#need(1, 'a zlib stream');
        const input = this.#buf.subarray(this.#pos);
        const r = rest.push(input, false);
        if (r.kind === 'done') {
          this.#consume(r.consumed);
          return r.data;
        }
        this.#consume(input.length);
        used += input.length;
        if (used > maxCompressed(size)) {
          throw new PackError('PACK_CORRUPT_ZLIB', `zlib stream of a ${size}-byte entry is too long`, {
            offset: this.#offset,
          });
        }
      }
    } finally {
      rest.close();
    }
  }

  async #entry(): Promise<PackEntry> {
    if (this.#partial) return this.#rest();
    const offset = this.#offset;
    this.#crc = 0;
    this.#crcFrom = this.#pos;
    let header = decodeEntryHeader(this.#buf, this.#pos, offset);
    while (!header) {
      await this.#need(this.#available + 1, 'an entry header');
      header = decodeEntryHeader(this.#buf, this.#pos, offset);
    }
    const size = header.size;
    this.#checkSize(size, offset);
    this.#pos += header.length;
    this.#offset += header.length;
    if (header.type === EntryType.OFS_DELTA) {
      const dataOffset = this.#offset;
      const data = (await this.#inflate(size, true, undefined, this.#deltaInto(size)))!;
      return {
        kind: 'ofs-delta',
        offset,
        dataOffset,
        end: this.#offset,
        crc32: this.#crcNow(),
        size,
        baseOffset: header.baseOffset,
        data,
      };
    }
    if (header.type === EntryType.REF_DELTA) {
      const baseOid = header.baseOid;
      const dataOffset = this.#offset;
      const data = (await this.#inflate(size, true, undefined, this.#deltaInto(size)))!;
      return { kind: 'ref-delta', offset, dataOffset, end: this.#offset, crc32: this.#crcNow(), size, baseOid, data };
    }
    const type = CODE_TYPES[header.type]!;
    const dataOffset = this.#offset;
    if (size <= this.#threshold) {
      const data = (await this.#inflate(size, true, undefined, this.#into(size)))!;
      const oid = hashObjectSync(type, data);
      return { kind: 'whole', offset, dataOffset, end: this.#offset, crc32: this.#crcNow(), type, size, oid, data };
    }
    const hasher = createSha1().update(objectHeader(type, size));
    const data = await this.#inflate(size, this.#keepLarge, hasher);
    const oid = bytesToHex(hasher.digest());
    return { kind: 'whole', offset, dataOffset, end: this.#offset, crc32: this.#crcNow(), type, size, oid, data };
  }

  /**
   * Inflates one zlib stream of `size` bytes; feeds `hasher`; returns the data when kept (placed
   * in `into` when given, up to the stream threshold).
   */
  async #inflate(
    size: number,
    keep: boolean,
    hasher: Sha1 | undefined,
    into?: Uint8Array,
  ): Promise<Uint8Array | undefined> {
    this.addInflated(size);
    if (size <= this.#threshold) {
      // what is buffered first; a stream going on past it is fed the input that follows
      await this.#need(1, 'a zlib stream');
      const input = this.#buf.subarray(this.#pos);
      const first = inflateOne(input, size, false, true, into);
      if (first.kind === 'done') {
        this.#consume(first.consumed);
        hasher?.update(first.data);
        return first.data;
      }
      if (first.rest) {
        this.#consume(input.length);
        const data = await this.#feed(first.rest, size, input.length);
        hasher?.update(data);
        return data;
      }
      let want = size + (size >>> 10) + 64;
      for (;;) {
        await this.#fill(want);
        const input = this.#buf.subarray(this.#pos);
        const r = inflateOne(input, size, this.#eof && this.#available < want, false, into);
        if (r.kind === 'done') {
          this.#consume(r.consumed);
          hasher?.update(r.data);
          return r.data;
        }
        if (this.#eof && this.#available < want) {
          throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream', { offset: this.#offset });
        }
        if (this.#available > maxCompressed(size)) {
          throw new PackError('PACK_CORRUPT_ZLIB', `zlib stream of a ${size}-byte entry is too long`, {
            offset: this.#offset,
          });
        }
        want = Math.min(this.#available * 2 + 1024, maxCompressed(size) + 1);
      }
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    const StreamInflater = await loadStreamInflater();
    const inflater = new StreamInflater((chunk) => {
      total += chunk.length;
      if (total > size) {
        throw new PackError('PACK_SIZE_MISMATCH', `inflated data exceeds declared ${size}`, { offset: this.#offset });
      }
      hasher?.update(chunk);
      // the inflater hands out a new buffer per chunk: full ones are kept as they are
      if (keep) chunks.push(chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice());
    });
    let used = 0;
    while (!inflater.done) {
      throwIfAborted(this.#signal);
      if (this.#available === 0) await this.#need(1, 'a zlib stream');
      const n = inflater.push(this.#buf.subarray(this.#pos, this.#pos + 1024 * 1024));
      this.#consume(n);
      used += n;
      if (used > maxCompressed(size)) {
        throw new PackError('PACK_CORRUPT_ZLIB', `zlib stream of a ${size}-byte entry is too long`, {
          offset: this.#offset,
        });
      }
    }
    if (total !== size) throw new PackError('PACK_SIZE_MISMATCH', `inflated ${total} bytes, header declared ${size}`);
    if (!keep) return undefined;
    const out = new Uint8Array(size);
    let o = 0;
    for (const c of chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}
