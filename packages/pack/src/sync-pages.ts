/**
 * Reads of missing pack pages in place, for packs whose file handle reads synchronously
 * (`readSync`: Node's fs in a worker thread, a one-shot process's own handles). A walk over a
 * pack larger than the page cache (every tree of a history) would otherwise hand each page it
 * misses to an awaited read; git maps its packs instead. Given to FsObjectStore as its
 * `pageReads` option (`syncPageReads`) where stores are made on Node, so that bundles which
 * cannot use it (a browser's MemoryFs) do not carry it; a store without it reads missing pages
 * only through awaited reads.
 */
import { PackError } from './errors.js';
import { type LoadedPack, type PackFiles, READ_AHEAD, type SyncPageReads } from './pack-files.js';

export type { SyncPageReads };

/**
 * PackFiles' page size: the pages read here go into its cache, keyed by page index (store.test.ts
 * reads a pack through both). Not exported from pack-files.ts: bundlers then inline it there,
 * which grows the browser bundles.
 */
const PAGE = 16 * 1024;

export const syncPageReads: SyncPageReads = (pages, view) => {
  /** The key of the last page read, and how many misses in a row followed the one before. */
  let lastRead = -1;
  let run = 0;

  const read = (pack: LoadedPack, position: number, length: number): Uint8Array => {
    const out = new Uint8Array(length);
    const handle = pack.handle!;
    let got = 0;
    while (got < length) {
      const n = handle.readSync!(out, got, length - got, position + got);
      if (n <= 0) throw new PackError('OBJECT_CORRUPT', `${pack.name}.pack is shorter than its index says`);
      got += n;
    }
    return out;
  };

  const page = (pack: LoadedPack, index: number): Uint8Array => {
    const key = pack.serial * 2 ** 32 + index;
    const hit = pages.get(key);
    if (hit) return hit;
    // the third miss in a row of pages that follow each other: reads go through the pack in
    // order (a walk of every object), so the next pages are read with this one, in one read, as
    // long as none of them is cached (a scattered walk reads one page at a time)
    run = lastRead === key - 1 ? run + 1 : 0;
    let count = 1;
    if (run >= 2) {
      const end = Math.ceil(pack.size / PAGE);
      while (count < READ_AHEAD && index + count < end && !pages.has(key + count)) count++;
    }
    lastRead = key + count - 1;
    const start = index * PAGE;
    const bytes = read(pack, start, Math.min(count * PAGE, pack.size - start));
    if (count === 1) {
      pages.set(key, bytes);
      return bytes;
    }
    // each page a buffer of its own (copied out), so that the cache drops them one by one
    for (let k = count - 1; k > 0; k--) pages.set(key + k, bytes.slice(k * PAGE, (k + 1) * PAGE));
    const first = bytes.slice(0, PAGE);
    pages.set(key, first);
    return first;
  };

  return function (this: PackFiles, pack, position, length, withPages) {
    const cached = view.call(this, pack, position, length, withPages);
    if (cached || !withPages || pack.bytes || !pack.handle?.readSync || length === 0) return cached;
    const first = Math.floor(position / PAGE);
    const last = Math.floor((position + length - 1) / PAGE);
    if (last - first > 1) return read(pack, position, length);
    const a = page(pack, first);
    const from = position - first * PAGE;
    if (first === last) return a.subarray(from, from + length);
    const b = page(pack, last);
    const out = new Uint8Array(length);
    out.set(a.subarray(from));
    out.set(b.subarray(0, length - (a.length - from)), a.length - from);
    return out;
  };
};
