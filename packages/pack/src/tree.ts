/**
 * Tree objects: a sequence of entries `mode SP name NUL <20-byte oid>`, sorted by name with
 * directories compared as if their name ended in "/" (git's tree.c / fsck.c).
 * Modes: 40000 tree, 100644/100755 blob, 120000 symlink (blob), 160000 gitlink (commit).
 */
import { PackError } from './errors.js';
import { bytesToHex, hexToBytes, isObjectId, type ObjectId } from './object.js';

export interface TreeEntry {
  mode: string;
  name: string;
  oid: ObjectId;
  type: 'tree' | 'blob' | 'commit';
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function modeType(mode: string): TreeEntry['type'] {
  if (mode === '40000' || mode === '040000') return 'tree';
  if (mode === '160000') return 'commit';
  return 'blob';
}

/** Calls `visit` for each entry with the raw name bytes (a view into `data`). */
export function forEachTreeEntry(
  data: Uint8Array,
  visit: (mode: number, name: Uint8Array, oid: ObjectId) => void,
): void {
  forEachTreeEntryRaw(data, (mode, nameStart, nameEnd, idAt) =>
    visit(mode, data.subarray(nameStart, nameEnd), bytesToHex(data, idAt, idAt + 20)),
  );
}

/**
 * Calls `visit` for each entry with positions instead of copies: the name is
 * `data[nameStart..nameEnd]` and the binary id `data[idAt..idAt+20]` (no hex strings).
 */
export function forEachTreeEntryRaw(
  data: Uint8Array,
  visit: (mode: number, nameStart: number, nameEnd: number, idAt: number) => void,
): void {
  let pos = 0;
  const n = data.length;
  while (pos < n) {
    let mode = 0;
    let p = pos;
    while (p < n && data[p] !== 0x20) {
      const d = data[p]! - 0x30;
      if (d < 0 || d > 7) throw new PackError('PARSE_TREE', `bad mode at ${pos}`);
      mode = mode * 8 + d;
      p++;
    }
    if (p === pos || p >= n) throw new PackError('PARSE_TREE', `bad entry at ${pos}`);
    const nul = data.indexOf(0, p + 1);
    if (nul < 0 || nul === p + 1 || nul + 21 > n) throw new PackError('PARSE_TREE', `truncated entry at ${pos}`);
    visit(mode, p + 1, nul, nul + 1);
    pos = nul + 21;
  }
}

export function parseTree(data: Uint8Array): TreeEntry[] {
  const entries: TreeEntry[] = [];
  forEachTreeEntry(data, (mode, name, oid) => {
    const m = mode.toString(8);
    entries.push({ mode: m, name: decoder.decode(name), oid, type: modeType(m) });
  });
  return entries;
}

function sortKey(e: TreeEntry): Uint8Array {
  return encoder.encode(e.type === 'tree' ? `${e.name}/` : e.name);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Serializes entries in git's order (the input order does not matter). */
export function serializeTree(entries: readonly TreeEntry[]): Uint8Array {
  const keyed = entries.map((e) => ({ e, key: sortKey(e) }));
  keyed.sort((a, b) => compareBytes(a.key, b.key));
  const parts: Uint8Array[] = [];
  let total = 0;
  for (const { e } of keyed) {
    if (!isObjectId(e.oid)) throw new PackError('OBJECT_BAD_ID', `bad tree entry id ${e.oid}`);
    if (e.name === '' || e.name.includes('/') || e.name.includes('\0')) {
      throw new PackError('PARSE_TREE', `bad tree entry name ${JSON.stringify(e.name)}`);
    }
    const mode = e.mode.replace(/^0+(?=\d)/, '');
    const head = encoder.encode(`${mode} ${e.name}\0`);
    const part = new Uint8Array(head.length + 20);
    part.set(head);
    hexToBytes(e.oid, part, head.length);
    parts.push(part);
    total += part.length;
  }
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
