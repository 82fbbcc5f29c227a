/**
 * A pack being received, written to `objects/pack/tmp_pack_*` as it arrives (see `PackSpool` in
 * store.ts) and renamed into place, with its .idx, once verified. Appends gather in blocks of
 * 64 KiB, written a few at a time in one call; the last 256 KiB stay in memory too, since delta
 * bases usually lie close behind their deltas. Blocks of finished spools go back to their
 * store's pool.
 */
import { PackError } from './errors.js';
import type { FileHandleLike } from './fs-like.js';
import { type IndexEntries, PackIndex, writeIdx } from './idx.js';
import type { PackSpool, PackSpoolHost } from './store.js';
import { bytesRead, bytesWritten } from './store-files.js';

/**
 * Size of the blocks a pack spool gathers appends in: small, since the blocks queued for writing
 * while the import goes on are private memory, and a write of 64 KiB costs little more than one
 * of 256 KiB.
 */
const SPOOL_BLOCK = 64 * 1024;
/** Bytes of the latest blocks a spool keeps in memory for reads. */
const RECENT_BYTES = 256 * 1024;
/**
 * Bytes of full blocks handed to one write call (vectored where the file handle can): each call
 * is a round trip to the I/O thread pool, which costs more than the bytes it writes. The blocks
 * lie within the recent ones, so waiting for a few costs no memory.
 */
const WRITE_BYTES = RECENT_BYTES;
/** Spare blocks a pool keeps (at most 128 KiB: each is private memory held between packs). */
const SPARE_BLOCKS_MAX = 2;

/**
 * Full blocks of finished spools, reused by the next ones of the same store: a new block is
 * memory to zero and fault in, and external memory that brings GC forward.
 */
export class BlockPool {
  readonly #spare: Uint8Array[] = [];

  take(): Uint8Array {
    return this.#spare.pop() ?? new Uint8Array(SPOOL_BLOCK);
  }

  /** Takes back a block no longer read nor written (only whole ones of the spool's size). */
  give(block: Uint8Array): void {
    if (block.length !== SPOOL_BLOCK || block.byteOffset !== 0 || block.buffer.byteLength !== SPOOL_BLOCK) return;
    if (this.#spare.length < SPARE_BLOCKS_MAX && !this.#spare.includes(block)) this.#spare.push(block);
  }
}

/** A block of a spool held in memory. */
interface Segment {
  at: number;
  bytes: Uint8Array;
  /** On file. */
  written: boolean;
  /** No longer read from memory. */
  dropped: boolean;
}

export type { PackSpoolHost };

/**
 * A spool over a new temporary file in `host.dir`; undefined when the fs cannot open one for
 * positional reads and writes (the caller then gathers the pack in memory).
 */
export async function openPackSpool(host: PackSpoolHost): Promise<PackSpool | undefined> {
  const { files, dir, pool } = host;
  const fs = files.fs;
  if (!fs.open) return undefined;
  await host.ready;
  const tmp = files.tmpName(dir, 'pack');
  let handle: FileHandleLike;
  try {
    handle = await fs.open(tmp, 'w+');
  } catch {
    // an fs whose open() has no read-write mode (lock-only handles, some browser adapters) gets
    // the in-memory path; a real I/O failure surfaces there, on the pack's own write
    return undefined;
  }
  if (!handle.write || !handle.read) {
    await handle.close();
    await fs.unlink(tmp).catch(() => undefined);
    return undefined;
  }
  const write = handle.write.bind(handle);
  const read = handle.read.bind(handle);
  const writeAt = async (bytes: Uint8Array, position: number) => {
    let done = 0;
    while (done < bytes.length) {
      const r = await write(bytes, done, bytes.length - done, position + done);
      const n = bytesWritten(r);
      if (n <= 0) throw new PackError('STORE_IO', `short write to ${tmp}`);
      done += n;
    }
  };
  const writev = handle.writev?.bind(handle);
  const totalLength = (blocks: Uint8Array[]) => blocks.reduce((sum, b) => sum + b.length, 0);
  /** Writes what a short vectored write of `blocks` at `position` left out, past its first `done` bytes. */
  const writeRest = async (blocks: Uint8Array[], position: number, done: number) => {
    let skip = done;
    let at = position;
    for (const block of blocks) {
      if (skip >= block.length) skip -= block.length;
      else {
        await writeAt(block.subarray(skip), at + skip);
        skip = 0;
      }
      at += block.length;
    }
  };
  const readAt = async (position: number, length: number) => {
    const out = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const r = await read(out, got, length - got, position + got);
      const n = bytesRead(r);
      if (n <= 0) throw new PackError('OBJECT_CORRUPT', `${tmp} is shorter than written`);
      got += n;
    }
    return out;
  };
  // appends gather in blocks, written a few at a time; the last RECENT_BYTES stay in memory
  // too: the importer reads back only bases its cache dropped, and a delta's base lies mostly
  // right before it, so a larger window spares few file reads and costs private memory
  let length = 0;
  const BLOCK = SPOOL_BLOCK;
  let tail = pool.take();
  let tailLength = 0;
  /** Blocks in memory; `written` once on file, `dropped` once out of `recent` (then reusable). */
  const recent: Segment[] = [];
  let recentBytes = 0;
  const drop = (seg: Segment) => {
    seg.dropped = true;
    if (seg.written) pool.give(seg.bytes);
  };
  const RECENT_MAX = RECENT_BYTES;
  /** Full blocks not yet handed to a write (all within `recent`). */
  let unissued: Segment[] = [];
  let unissuedBytes = 0;
  /** Every write issued so far. */
  let queue: Promise<void> = Promise.resolve();
  /** The writes issued before the latest one (what `drain` waits for). */
  let earlier: Promise<void> = queue;
  /**
   * What a new write waits for before it starts: nothing, as writes lie at distinct offsets,
   * unless a truncate made a later one overlap one still in flight.
   */
  let barrier: Promise<void> = queue;
  let failure: unknown;
  let closed = false;
  const writeGroup = async (segments: Segment[]) => {
    const at = segments[0]!.at;
    if (segments.length > 1 && writev) {
      const blocks = segments.map((seg) => seg.bytes);
      const total = totalLength(blocks);
      const n = bytesWritten(await writev(blocks, at));
      // a short vectored write (rare on a regular file) is finished block by block
      if (n < total) await writeRest(blocks, at, n);
    } else for (const seg of segments) await writeAt(seg.bytes, seg.at);
  };
  /**
   * Hands the full blocks gathered so far to one write, which starts at once rather than after
   * the previous one: a chain would start the next write only on the turn of the event loop
   * after the previous one finished, and an import that parses input already in memory turns it
   * only every few blocks, so writes would fall behind (queued blocks held in memory, the
   * import then waiting for them one round trip at a time). Each write call costs a round trip
   * to the thread pool, hence a few blocks per call.
   */
  const issue = () => {
    if (unissued.length === 0) return;
    const segments = unissued;
    unissued = [];
    unissuedBytes = 0;
    const written = barrier
      .then(async () => {
        if (failure !== undefined) return;
        await writeGroup(segments);
        for (const seg of segments) {
          seg.written = true;
          if (seg.dropped) pool.give(seg.bytes);
        }
      })
      .catch((error) => {
        failure ??= error;
      });
    earlier = queue;
    queue = Promise.all([queue, written]).then(() => undefined);
  };
  const flushTail = () => {
    if (tailLength === 0) return;
    // a full block is handed over as it is (a new one takes its place); a partial one is copied
    const block = tailLength === BLOCK ? tail : tail.slice(0, tailLength);
    if (block === tail) tail = pool.take();
    const at = length - tailLength;
    tailLength = 0;
    const seg: Segment = { at, bytes: block, written: false, dropped: false };
    recent.push(seg);
    recentBytes += block.length;
    unissued.push(seg);
    unissuedBytes += block.length;
    if (unissuedBytes >= WRITE_BYTES || block.length < BLOCK) issue();
    while (recent.length > 1 && recentBytes - recent[0]!.bytes.length >= RECENT_MAX) {
      const first = recent.shift()!;
      recentBytes -= first.bytes.length;
      drop(first);
    }
  };
  /** A copy of the range from memory, when it lies in the recent blocks and the tail. */
  const fromMemory = (offset: number, n: number): Uint8Array | undefined => {
    if (offset + n > length) return undefined;
    const segments =
      tailLength > 0 ? [...recent, { at: length - tailLength, bytes: tail.subarray(0, tailLength) }] : recent;
    let i = segments.length - 1;
    while (i >= 0 && segments[i]!.at > offset) i--;
    if (i < 0) return undefined;
    const out = new Uint8Array(n);
    let o = 0;
    for (let k = i; k < segments.length && o < n; k++) {
      const seg = segments[k]!;
      const from = offset + o - seg.at;
      if (from < 0 || from >= seg.bytes.length) return undefined;
      const take = Math.min(seg.bytes.length - from, n - o);
      out.set(seg.bytes.subarray(from, from + take), o);
      o += take;
    }
    return o === n ? out : undefined;
  };
  const close = async () => {
    if (closed) return;
    closed = true;
    await queue.catch(() => undefined);
    // every write is done: the blocks go to the next spool
    for (const seg of recent.splice(0)) drop(seg);
    pool.give(tail);
    tailLength = 0;
    await handle.close();
  };
  const failed = () => {
    if (failure !== undefined) throw new PackError('STORE_IO', `cannot write ${tmp}`, { cause: failure });
  };
  /** Once closed (committed or aborted) the spool's blocks belong to the next spool: no more use. */
  const ensureOpen = () => {
    if (closed) throw new PackError('STORE_CLOSED', `the pack spool ${tmp} is closed`);
  };
  /** Every byte appended so far on file: what reading the file back, patching and the commit need. */
  const settle = async () => {
    flushTail();
    issue();
    await queue;
    failed();
  };
  /**
   * Backpressure while appending: waits for the writes queued before the latest block, which
   * goes on being written while the caller works; a partly filled block stays in memory.
   */
  const drain = async () => {
    issue();
    await earlier;
    failed();
  };
  return {
    get length() {
      return length;
    },
    append(bytes: Uint8Array) {
      ensureOpen();
      let pos = 0;
      while (pos < bytes.length) {
        if (tailLength === tail.length) flushTail();
        const n = Math.min(bytes.length - pos, tail.length - tailLength);
        tail.set(bytes.subarray(pos, pos + n), tailLength);
        tailLength += n;
        length += n;
        pos += n;
      }
    },
    drain,
    async read(offset: number, n: number) {
      ensureOpen();
      const hit = fromMemory(offset, n);
      if (hit) return hit;
      if (offset + n <= length - tailLength) {
        // on file once the writes queued so far are done: the partly filled block stays as it
        // is (handing it over would copy it, for each entry read back)
        issue();
        await queue;
        failed();
      } else await settle();
      return readAt(offset, n);
    },
    truncate(n: number) {
      ensureOpen();
      if (n >= length) return;
      if (n >= length - tailLength) {
        tailLength -= length - n;
        length = n;
        return;
      }
      flushTail();
      issue();
      length = n;
      // what lies past the new end will be overwritten by later appends: their writes wait for
      // the ones issued so far
      barrier = queue;
      while (recent.length > 0 && recent[recent.length - 1]!.at >= n) {
        const last = recent.pop()!;
        recentBytes -= last.bytes.length;
        drop(last);
      }
      const last = recent[recent.length - 1];
      if (last && last.at + last.bytes.length > n) {
        recentBytes -= last.at + last.bytes.length - n;
        last.bytes = last.bytes.subarray(0, n - last.at);
      }
    },
    async patch(offset: number, bytes: Uint8Array) {
      ensureOpen();
      await settle();
      await writeAt(bytes, offset);
      // the blocks still held in memory serve reads before the file: they get the bytes too
      for (const seg of recent) {
        const from = Math.max(offset, seg.at);
        const to = Math.min(offset + bytes.length, seg.at + seg.bytes.length);
        if (from < to) seg.bytes.set(bytes.subarray(from - offset, to - offset), from - seg.at);
      }
    },
    async *chunks() {
      ensureOpen();
      await settle();
      const step = 1 << 20;
      for (let at = 0; at < length; at += step) yield await readAt(at, Math.min(step, length - at));
    },
    async commit(hash: string, entries: IndexEntries) {
      const base = `pack-${hash}`;
      if (host.hasPack(base)) {
        await settle();
        await close();
        await fs.unlink(tmp).catch(() => undefined);
        return;
      }
      const idx = writeIdx(entries, hash, { strict: true });
      // the .idx goes to its temporary file while the pack's last writes finish and it moves
      // into place; it is renamed into place after the .pack, as git does
      const idxTmp = files.tmpName(dir, 'idx');
      const [moved, staged] = await Promise.allSettled([
        (async () => {
          await settle();
          await close();
          await fs.rename(tmp, `${dir}/${base}.pack`);
        })(),
        fs.writeFile(idxTmp, idx),
      ]);
      if (moved.status === 'rejected' || staged.status === 'rejected') {
        await fs.unlink(idxTmp).catch(() => undefined);
        if (moved.status === 'rejected') {
          await close().catch(() => undefined);
          await fs.unlink(tmp).catch(() => undefined);
          if (moved.reason instanceof PackError) throw moved.reason;
          throw new PackError('STORE_IO', `cannot write ${dir}/${base}.pack`, { cause: moved.reason });
        }
        // a .pack without its .idx is ignored by readers (git gc removes it), as on git's own failures
        throw new PackError('STORE_IO', `cannot write ${dir}/${base}.idx`, {
          cause: (staged as PromiseRejectedResult).reason,
        });
      }
      try {
        await fs.rename(idxTmp, `${dir}/${base}.idx`);
      } catch (error) {
        await fs.unlink(idxTmp).catch(() => undefined);
        throw new PackError('STORE_IO', `cannot write ${dir}/${base}.idx`, { cause: error });
      }
      // the index just written needs no reading back nor verifying
      host.addPack(base, new PackIndex(idx), length);
    },
    async abort() {
      await close().catch(() => undefined);
      await fs.unlink(tmp).catch(() => undefined);
    },
  };
}
