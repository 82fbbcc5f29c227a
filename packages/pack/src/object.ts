/**
 * The git object model (gitformat-pack / git's object storage): an object is
 * `<type> SP <decimal size> NUL <data>` hashed with SHA-1; its id is 40 lowercase hex digits.
 */
import { createSha1, sha1, sha1Hex } from '#sha1';
import { PackError } from './errors.js';

/** The id of no object, from its module that imports nothing (the `@gitport/pack/zero-id` entry). */
export { ZERO_ID } from './zero-id.js';

export type ObjectId = string;
export type ObjectType = 'commit' | 'tree' | 'blob' | 'tag';
export interface GitObject {
  type: ObjectType;
  data: Uint8Array;
}

export const OBJECT_TYPES: readonly ObjectType[] = ['commit', 'tree', 'blob', 'tag'];

/** Pack type numbers (gitformat-pack: 1 commit, 2 tree, 3 blob, 4 tag, 6 OFS_DELTA, 7 REF_DELTA). */
export const TYPE_CODES: Record<ObjectType, 1 | 2 | 3 | 4> = { commit: 1, tree: 2, blob: 3, tag: 4 };
export const CODE_TYPES: readonly (ObjectType | undefined)[] = [
  undefined,
  'commit',
  'tree',
  'blob',
  'tag',
  undefined,
  undefined,
  undefined,
];

const encoder = new TextEncoder();

const TYPE_BYTES: Record<ObjectType, Uint8Array> = {
  commit: encoder.encode('commit '),
  tree: encoder.encode('tree '),
  blob: encoder.encode('blob '),
  tag: encoder.encode('tag '),
};

/** `<type> SP <size> NUL` (ASCII). */
export function objectHeader(type: ObjectType, size: number): Uint8Array {
  const t = TYPE_BYTES[type];
  const digits = String(size);
  const out = new Uint8Array(t.length + digits.length + 1);
  out.set(t);
  for (let i = 0; i < digits.length; i++) out[t.length + i] = digits.charCodeAt(i);
  return out;
}

export function isObjectType(value: unknown): value is ObjectType {
  return value === 'commit' || value === 'tree' || value === 'blob' || value === 'tag';
}

const OID = /^[0-9a-f]{40}$/;
export function isObjectId(value: unknown): value is ObjectId {
  return typeof value === 'string' && OID.test(value);
}

export function assertObjectId(value: unknown): asserts value is ObjectId {
  if (!isObjectId(value)) throw new PackError('OBJECT_BAD_ID', `not an object id: ${String(value).slice(0, 60)}`);
}

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, '0'));

/** Char codes of each byte's two hex digits. */
const HEX_CODES = new Uint16Array(512);
for (let i = 0; i < 256; i++) {
  HEX_CODES[2 * i] = HEX[i]!.charCodeAt(0);
  HEX_CODES[2 * i + 1] = HEX[i]!.charCodeAt(1);
}
const idCodes: number[] = new Array(40).fill(0);

export function bytesToHex(bytes: Uint8Array, start = 0, end = bytes.length): string {
  if (end - start === 20) {
    // ids: one flat string (concatenation builds a rope that every Map/Set lookup must flatten)
    for (let i = 0, o = 0; i < 20; i++, o += 2) {
      const v = bytes[start + i]! * 2;
      idCodes[o] = HEX_CODES[v]!;
      idCodes[o + 1] = HEX_CODES[v + 1]!;
    }
    return String.fromCharCode.apply(null, idCodes);
  }
  let s = '';
  for (let i = start; i < end; i++) s += HEX[bytes[i]!];
  return s;
}

const NIBBLE = new Uint8Array(128);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[97 + i] = 10 + i;
  NIBBLE[65 + i] = 10 + i;
}

/** The parts one after the other, always in one new array (`total`: their length, when known). */
export function concatBytes(parts: readonly Uint8Array[], total = -1): Uint8Array {
  let length = total;
  if (length < 0) {
    length = 0;
    for (const p of parts) length += p.byteLength;
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Decodes hex (both cases); a non-hex digit decodes as 0 (ids are validated before they get here). */
export function hexToBytes(hex: string, out = new Uint8Array(hex.length >>> 1), offset = 0): Uint8Array {
  for (let i = 0, o = offset; i < hex.length; i += 2, o++) {
    out[o] = (NIBBLE[hex.charCodeAt(i) & 127]! << 4) | NIBBLE[hex.charCodeAt(i + 1) & 127]!;
  }
  return out;
}

/** The object id of `data` stored as `type`. */
export async function hashObject(type: ObjectType, data: Uint8Array): Promise<ObjectId> {
  return hashObjectSync(type, data);
}

/** Where `hashObjectSync` writes `<type> <size>\0`: reused, at most 5 + 1 + 16 + 1 bytes. */
const headerScratch = new Uint8Array(32);

/**
 * The object id of `data` stored as `type`, synchronously. `<type> <size>\0` is written into a
 * reused buffer and hashed with the data as two parts: the data is not copied (the web hash reads
 * both in place; node:crypto joins small inputs in its own scratch for a one-shot hash).
 */
export function hashObjectSync(type: ObjectType, data: Uint8Array): ObjectId {
  const n = data.length;
  const out = headerScratch;
  const prefix = TYPE_BYTES[type];
  out.set(prefix);
  let o = prefix.length;
  let digits = 1;
  for (let v = n; v >= 10; v = Math.floor(v / 10)) digits++;
  for (let i = digits - 1, v = n; i >= 0; i--, v = Math.floor(v / 10)) out[o + i] = 48 + (v % 10);
  o += digits;
  out[o++] = 0;
  return sha1Hex(out.subarray(0, o), data);
}

export { createSha1, sha1 };
