/**
 * Where the packed entries of many objects lie, in columns: a few numbers per object, as git's
 * pack-objects keeps a pack and an offset per object entry and maps the pack. A pack writer keeps
 * these (not the entries' bytes, nor views of the buffers they were read into) and copies each
 * entry when it writes it. Headers are read in pack order, so that each page of a pack read at
 * positions is read once and in sequence.
 */
import { EntryType } from './entry-header.js';
import { throwIfAborted } from './errors.js';
import type { ObjectId } from './object.js';
import type { LoadedPack, PackFiles } from './pack-files.js';
import type { StoredEntries } from './stored-location.js';

/** The entries of `oids` among the packs of `packs` (listed beforehand). */
export async function locateEntries(
  packs: PackFiles,
  oids: readonly ObjectId[],
  signal?: AbortSignal,
): Promise<StoredEntries> {
  const list: readonly LoadedPack[] = packs.list.slice();
  const n = oids.length;
  const pack = new Int32Array(n).fill(-1);
  const offset = new Float64Array(n);
  const headerLength = new Uint8Array(n);
  const end = new Float64Array(n);
  const code = new Uint8Array(n);
  const size = new Float64Array(n);
  const baseOffset = new Float64Array(n).fill(-1);
  const refBases = new Map<number, ObjectId>();
  let found = 0;
  for (let i = 0; i < n; i++) {
    const oid = oids[i]!;
    for (let p = 0; p < list.length; p++) {
      const at = list[p]!.index.find(oid);
      if (at < 0) continue;
      pack[i] = p;
      offset[i] = list[p]!.index.offsetAt(at);
      end[i] = packs.entryEnd(list[p]!, offset[i]!);
      found++;
      break;
    }
  }
  // headers in pack order
  const order = new Uint32Array(found);
  for (let i = 0, k = 0; i < n; i++) if (pack[i]! >= 0) order[k++] = i;
  order.sort((a, b) => pack[a]! - pack[b]! || offset[a]! - offset[b]!);
  for (let k = 0; k < found; k++) {
    if ((k & 1023) === 0) throwIfAborted(signal);
    const i = order[k]!;
    const p = list[pack[i]!]!;
    const at = offset[i]!;
    const length = packs.headerRange(at, end[i]!);
    const head = packs.view(p, at, length, true) ?? (await packs.readAt(p, at, length));
    const h = packs.decodeHeader(p, at, head);
    headerLength[i] = h.length;
    code[i] = h.type;
    size[i] = h.size;
    if (h.type === EntryType.OFS_DELTA) baseOffset[i] = h.baseOffset;
    else if (h.type === EntryType.REF_DELTA) refBases.set(i, h.baseOid);
  }
  return {
    sources: list.map((p) => p.source),
    pack,
    offset,
    headerLength,
    end,
    code,
    size,
    baseOffset,
    baseOid: (i) => {
      const ref = refBases.get(i);
      if (ref !== undefined) return ref;
      return packs.oidAtOffset(list[pack[i]!]!, baseOffset[i]!);
    },
  };
}
