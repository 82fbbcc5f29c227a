/**
 * The reads of a store's packs that only serving needs: an object's type and size from the
 * headers of its entry and of the entries down its delta chain (git's packed_object_info,
 * without rebuilding the object), its stored entry (for delta and compression reuse), where the
 * entries of many objects lie (in columns), and a stored pack to send as it is.
 *
 * A store over pack files lends its packs (`ObjectStore.storedPacks`) and the code that serves
 * (the pack writer, the walks, upload-pack) reads them through these functions, so that a store
 * that only clones and reads (a worker that clones) does not carry them. A store with its own
 * `readHeader`, `readHeaderSync`, `readRaw`, `locateStored` or `findPack` is asked that first.
 */
import { readDeltaSizes } from './delta.js';
import { type EntryHeader, EntryType, entryTypeOf, isWholeEntry } from './entry-header.js';
import { PackError } from './errors.js';
import { CODE_TYPES, type ObjectId, type ObjectType } from './object.js';
import { entryNumberAt, inflateEntry, type LoadedPack, MAX_CHAIN_STEPS, type PackFiles } from './pack-files.js';
import type { ObjectStore, RawEntry, StoredPack } from './store.js';
import { locateEntries } from './stored-entries.js';
import type { StoredEntries, StoredLocation } from './stored-location.js';

type Header = { type: ObjectType; size: number };

/** Whether `store` tells an object's type and size without reading it (`readHeaderOf`). */
export function hasHeaderReads(store: ObjectStore): boolean {
  return store.readHeader !== undefined || store.storedPacks !== undefined;
}

/** The type and size of an object: from its entry headers where the store can, else from reading it. */
export async function readHeaderOf(store: ObjectStore, oid: ObjectId): Promise<Header | undefined> {
  if (store.readHeader) return store.readHeader(oid);
  const stored = store.storedPacks?.();
  const at = stored && (await stored.locate(oid));
  if (stored && at) {
    const packs = stored.packs;
    const steps = packedHeader(packs, at.pack, at.offset);
    let step = steps.next();
    while (!step.done) {
      const want = step.value;
      step = steps.next(
        packs.view(want.pack, want.position, want.length, true) ??
          (await packs.readAt(want.pack, want.position, want.length)),
      );
    }
    if (step.value) return step.value;
  }
  const object = await store.read(oid);
  return object && { type: object.type, size: object.data.length };
}

/**
 * `readHeaderOf` when it can be answered without awaiting (packed, in packs held whole or in
 * pages of the page cache); undefined means "use `readHeaderOf`", not "missing".
 */
export function readHeaderSyncOf(store: ObjectStore, oid: ObjectId): Header | undefined {
  if (store.readHeaderSync) return store.readHeaderSync(oid);
  const packs = store.storedPacks?.().packs;
  if (!packs?.scanned || oid.length !== 40) return undefined;
  const at = packs.find(oid);
  if (!at) return undefined;
  const steps = packedHeader(packs, at.pack, at.offset);
  let step = steps.next();
  while (!step.done) {
    const want = step.value;
    const bytes = packs.view(want.pack, want.position, want.length, true);
    if (!bytes) return undefined;
    step = steps.next(bytes);
  }
  return step.value;
}

/** The stored (packed) entry of an object, for delta and compression reuse; undefined when the store has none. */
export async function readRawOf(store: ObjectStore, oid: ObjectId): Promise<RawEntry | undefined> {
  if (store.readRaw) return store.readRaw(oid);
  const stored = store.storedPacks?.();
  const at = stored && (await stored.locate(oid));
  if (!stored || !at) return undefined;
  const { packs } = stored;
  const { pack, offset } = at;
  const end = packs.entryEnd(pack, offset);
  const header = await packs.header(pack, offset, end);
  const dataOffset = offset + header.length;
  const compressed = await packs.readAt(pack, dataOffset, end - dataOffset);
  const location: StoredLocation = { source: pack.source, offset, dataOffset, end, code: header.type };
  if (isWholeEntry(header)) {
    return { kind: 'whole', type: CODE_TYPES[header.type]!, size: header.size, compressed, stored: location };
  }
  let base: ObjectId;
  if (header.type === EntryType.OFS_DELTA) {
    location.baseDistance = offset - header.baseOffset;
    base = packs.oidAtOffset(pack, header.baseOffset);
  } else {
    base = header.baseOid;
  }
  return { kind: 'delta', base, size: header.size, compressed, stored: location };
}

/** Whether `store` says where many stored entries lie at once (`locateStoredOf`). */
export function hasLocateStored(store: ObjectStore): boolean {
  return store.locateStored !== undefined || store.storedPacks !== undefined;
}

/** Where the stored entries of `oids` lie, in columns (see StoredEntries); undefined when the store cannot say. */
export async function locateStoredOf(
  store: ObjectStore,
  oids: readonly ObjectId[],
  signal?: AbortSignal,
): Promise<StoredEntries | undefined> {
  if (store.locateStored) return store.locateStored(oids, signal);
  const packs = store.storedPacks?.().packs;
  if (!packs) return undefined;
  await packs.ensureScanned();
  return locateEntries(packs, oids, signal);
}

/** Whether `store` may hold a pack to send as it is (`findPackOf`). */
export function hasStoredPacks(store: ObjectStore): boolean {
  return store.findPack !== undefined || store.storedPacks !== undefined;
}

/** A stored pack holding exactly `oids`, streamed verbatim (git's pack reuse); undefined when there is none. */
export function findPackOf(store: ObjectStore, oids: readonly ObjectId[]): Promise<StoredPack | undefined> {
  if (store.findPack) return store.findPack(oids);
  const packs = store.storedPacks?.().packs;
  return packs ? findStoredPack(packs, oids) : Promise.resolve(undefined);
}

/** The pieces a stored pack goes out in, and how many spare buffers of that size the packs keep. */
const STREAM_PIECE = 1 << 20;
const MAX_STREAM_SPARES = 4;

/** A pack of `packs` whose objects are exactly `oids`, to be sent as it is stored. */
async function findStoredPack(packs: PackFiles, oids: readonly ObjectId[]): Promise<StoredPack | undefined> {
  await packs.ensureScanned();
  const pack = packs.list.find((p) => p.index.count === oids.length);
  if (!pack) return undefined;
  for (const oid of oids) if (pack.index.find(oid) < 0) return undefined;
  pack.ofsDeltas ??= await hasOfsDeltas(packs, pack);
  return {
    ofsDeltas: pack.ofsDeltas,
    async *stream(signal?: AbortSignal, options?: { borrow?: boolean }) {
      const step = STREAM_PIECE;
      // borrowed pieces are read into two buffers in turn (the one the caller is done with),
      // taken from the store's spares and given back after
      const spares = packs.streamSpares;
      const buffers = options?.borrow ? [spares.pop(), spares.pop()] : undefined;
      let turn = 0;
      const piece = (at: number) =>
        packs.copyOut(pack, at, step, buffers && (buffers[turn++ & 1] ??= new Uint8Array(step)));
      // the next piece is read while this one goes out
      let next: Promise<Uint8Array> | undefined = pack.size > 0 ? piece(0) : undefined;
      try {
        for (let at = 0; next; at += step) {
          if (signal?.aborted) throw new PackError('PACK_ABORTED', 'aborted', { cause: signal.reason });
          const bytes = await next;
          next = at + step < pack.size ? piece(at + step) : undefined;
          yield bytes;
        }
      } finally {
        const reading = next?.catch(() => undefined);
        if (buffers) {
          // a read still going on writes into its buffer: given back once it is done
          void Promise.resolve(reading).then(() => {
            for (const b of buffers) if (b && spares.length < MAX_STREAM_SPARES) spares.push(b);
          });
        }
      }
    },
  };
}

/** Whether any entry of the pack is an OFS_DELTA (as the first byte of its header says). */
async function hasOfsDeltas(packs: PackFiles, pack: LoadedPack): Promise<boolean> {
  for (let i = 0; i < pack.positions.length; i++) {
    const at = pack.index.offsetAt(pack.positions[i]!);
    const head = packs.view(pack, at, 1, false) ?? (await packs.readAt(pack, at, 1));
    if (entryTypeOf(head[0]!) === EntryType.OFS_DELTA) return true;
  }
  return false;
}

/**
 * Type and size of a packed object without rebuilding it (git's packed_object_info): a delta's
 * size is the result size at the start of its data, its type that of the whole entry at the
 * bottom of its chain, found header by header and remembered per entry (`LoadedPack.types`).
 * Yields the ranges of packs it reads, to be sent back; returns undefined when the chain
 * leaves the packs (a base stored loose): the object is read then.
 */
function* packedHeader(
  packs: PackFiles,
  pack: LoadedPack,
  offset: number,
): Generator<{ pack: LoadedPack; position: number; length: number }, Header | undefined, Uint8Array> {
  const end = packs.entryEnd(pack, offset);
  const header = packs.decodeHeader(
    pack,
    offset,
    yield { pack, position: offset, length: packs.headerRange(offset, end) },
  );
  if (isWholeEntry(header)) return { type: CODE_TYPES[header.type]!, size: header.size };
  const dataOffset = offset + header.length;
  const compressed = yield { pack, position: dataOffset, length: end - dataOffset };
  const size = readDeltaSizes(inflateEntry(compressed, header.size)).resultSize;
  // down the chain to a whole entry or one whose type is known
  const path: { pack: LoadedPack; n: number }[] = [{ pack, n: entryNumberAt(pack, offset) }];
  let at = pack;
  let h: EntryHeader = header;
  let code = 0;
  for (let steps = 0; !isWholeEntry(h); steps++) {
    if (steps > MAX_CHAIN_STEPS) throw new PackError('OBJECT_CORRUPT', 'delta chain too long or cyclic');
    let baseOffset: number;
    if (h.type === EntryType.OFS_DELTA) {
      baseOffset = h.baseOffset;
    } else {
      const base = packs.find(h.baseOid);
      if (!base) return undefined;
      at = base.pack;
      baseOffset = base.offset;
    }
    const n = entryNumberAt(at, baseOffset);
    if (n < 0) throw new PackError('OBJECT_CORRUPT', `no entry at offset ${baseOffset} in ${at.name}.pack`);
    code = at.types?.[n] ?? 0;
    if (code !== 0) break;
    const baseEnd = packs.entryEnd(at, baseOffset);
    h = packs.decodeHeader(
      at,
      baseOffset,
      yield { pack: at, position: baseOffset, length: packs.headerRange(baseOffset, baseEnd) },
    );
    path.push({ pack: at, n });
    code = h.type;
  }
  for (const p of path) if (p.n >= 0) (p.pack.types ??= new Uint8Array(p.pack.positions.length))[p.n] = code;
  return { type: CODE_TYPES[code]!, size };
}
