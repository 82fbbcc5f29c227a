/**
 * Object filters of partial clone (git's `--filter=<spec>`, gitprotocol-v2's `filter` argument,
 * `Documentation/rev-list-options.adoc`): which objects a walk leaves out.
 *
 *   blob:none                every blob
 *   blob:limit=<n>[kmg]      blobs of at least n bytes
 *   tree:<depth>             trees and blobs at `depth` or deeper (a commit's root tree is at 0)
 *   object:type=<type>       every object not of that type
 *   sparse:oid=<blob>        blobs outside the sparse-checkout patterns kept in that blob
 *   combine:<f>+<f>...       an object is kept only when every filter keeps it (each part
 *                            percent-encoded, as git writes it)
 *
 * Objects a request names (`want`) are sent whatever the filter says; that is the walk's rule,
 * not the filter's.
 */
import { PackError } from './errors.js';
import type { ObjectType } from './object.js';

export type ObjectFilter =
  | { kind: 'blob:none' }
  | { kind: 'blob:limit'; bytes: number }
  | { kind: 'tree'; depth: number }
  | { kind: 'object:type'; type: ObjectType }
  | { kind: 'sparse:oid'; oid: string }
  | { kind: 'combine'; filters: ObjectFilter[] };

/** What a filter decides for a tree: whether it is sent, and whether the walk goes into it. */
export interface TreeVerdict {
  include: boolean;
  walk: boolean;
}

/** The longest spec accepted (a `filter` line is one pkt-line; combine parts nest within it). */
export const MAX_FILTER_SPEC_LENGTH = 4096;
/** The deepest `tree:<depth>` worth saying (deeper than any tree a repository can hold). */
const MAX_TREE_DEPTH = 2 ** 31 - 1;

/** How deep `combine:` may nest within `combine:`. */
const MAX_COMBINE_NESTING = 8;
/** Characters a `combine:` part must percent-encode (git's `RESERVED_NON_WS` and whitespace). */
const RESERVED = /[~`!@#$^&*()[\]{}\\;'",<>?\s]/;
/** What `formatObjectFilter` encodes in a part: the reserved characters, `+` and `%`. */
const ENCODED = /[~`!@#$^&*()[\]{}\\;'",<>?\s+%]/;
const utf8 = new TextEncoder();

function invalid(spec: string, why: string): PackError {
  return new PackError('FILTER_INVALID', `invalid filter-spec '${spec.slice(0, 200)}': ${why}`);
}

/** A non-negative count with an optional k/m/g suffix (1024-based, either case), as git's `git_parse_ulong`. */
function parseCount(spec: string, text: string): number {
  const match = /^(\d+)([kmgKMG]?)$/.exec(text);
  if (!match) throw invalid(spec, `'${text}' is not a count`);
  const unit = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 }[match[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  const value = Number(match[1]) * unit;
  if (!Number.isSafeInteger(value)) throw invalid(spec, `'${text}' is too large`);
  return value;
}

/** Parses a filter spec as git does; a bad one is `FILTER_INVALID`. */
export function parseObjectFilter(spec: string): ObjectFilter {
  if (spec.length > MAX_FILTER_SPEC_LENGTH) throw invalid(spec, `longer than ${MAX_FILTER_SPEC_LENGTH} characters`);
  return parseOne(spec, spec, 0);
}

function parseOne(whole: string, spec: string, nesting: number): ObjectFilter {
  if (spec === 'blob:none') return { kind: 'blob:none' };
  if (spec.startsWith('blob:limit=')) return { kind: 'blob:limit', bytes: parseCount(whole, spec.slice(11)) };
  if (spec.startsWith('tree:')) {
    const depth = parseCount(whole, spec.slice(5));
    if (depth > MAX_TREE_DEPTH) throw invalid(whole, 'tree depth too large');
    return { kind: 'tree', depth };
  }
  if (spec.startsWith('object:type=')) {
    const type = spec.slice(12);
    if (type !== 'blob' && type !== 'tree' && type !== 'commit' && type !== 'tag')
      throw invalid(whole, `'${type}' is not an object type`);
    return { kind: 'object:type', type };
  }
  if (spec.startsWith('sparse:oid=')) {
    const oid = spec.slice(11);
    if (oid === '') throw invalid(whole, 'sparse:oid needs an object');
    return { kind: 'sparse:oid', oid };
  }
  if (spec.startsWith('combine:')) {
    if (nesting >= MAX_COMBINE_NESTING) throw invalid(whole, 'combine: nested too deep');
    const parts = spec.slice(8).split('+');
    if (parts.some((part) => part === '')) throw invalid(whole, 'an empty combine: part');
    const filters = parts.map((part) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(part);
      } catch {
        throw invalid(whole, `bad percent-encoding in '${part}'`);
      }
      if (RESERVED.test(part)) throw invalid(whole, `'${part}' must be percent-encoded`);
      return parseOne(whole, decoded, nesting + 1);
    });
    return { kind: 'combine', filters };
  }
  throw invalid(whole, 'unknown filter');
}

/** The spec of `filter` as git sends it (counts in bytes; combine parts percent-encoded). */
export function formatObjectFilter(filter: ObjectFilter): string {
  switch (filter.kind) {
    case 'blob:none':
      return 'blob:none';
    case 'blob:limit':
      return `blob:limit=${filter.bytes}`;
    case 'tree':
      return `tree:${filter.depth}`;
    case 'object:type':
      return `object:type=${filter.type}`;
    case 'sparse:oid':
      return `sparse:oid=${filter.oid}`;
    case 'combine':
      return `combine:${filter.filters.map((f) => encodePart(formatObjectFilter(f))).join('+')}`;
  }
}

function encodePart(part: string): string {
  let out = '';
  for (const ch of part) {
    if (!ENCODED.test(ch)) out += ch;
    else for (const byte of utf8.encode(ch)) out += `%${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/** Whether a commit or an annotated tag passes `filter`. */
export function filterKeeps(filter: ObjectFilter, type: 'commit' | 'tag'): boolean {
  switch (filter.kind) {
    case 'object:type':
      return filter.type === type;
    case 'combine':
      return filter.filters.every((f) => filterKeeps(f, type));
    default:
      return true;
  }
}

/**
 * What `filter` decides for a tree at `depth` (0: a commit's root tree). A walk that is told not
 * to go into a tree leaves out everything below it for this filter.
 */
export function filterTree(filter: ObjectFilter, depth: number): TreeVerdict {
  switch (filter.kind) {
    case 'blob:none':
    case 'blob:limit':
    case 'sparse:oid':
      return { include: true, walk: true };
    case 'tree':
      return depth < filter.depth ? { include: true, walk: true } : { include: false, walk: false };
    case 'object:type':
      // blobs lie below trees; commits and tags do not
      return { include: filter.type === 'tree', walk: filter.type === 'tree' || filter.type === 'blob' };
    case 'combine': {
      let include = true;
      let walk = true;
      for (const f of filter.filters) {
        const verdict = filterTree(f, depth);
        include &&= verdict.include;
        walk &&= verdict.walk;
      }
      return { include, walk };
    }
  }
}

/**
 * Whether a blob at `depth` (its tree's depth + 1) passes `filter`; `size` is asked only of
 * filters that need it (`blob:limit`). `sparse:oid` is decided by the walk that knows the path
 * (`filterBlobByPath`); here it keeps every blob.
 */
export function filterBlob(filter: ObjectFilter, depth: number, size: () => number): boolean {
  switch (filter.kind) {
    case 'blob:none':
      return false;
    case 'blob:limit':
      return size() < filter.bytes;
    case 'tree':
      return depth < filter.depth;
    case 'object:type':
      return filter.type === 'blob';
    case 'sparse:oid':
      return true;
    case 'combine':
      return filter.filters.every((f) => filterBlob(f, depth, size));
  }
}

/** Whether deciding blobs needs their sizes (so a walk reads headers only then). */
export function filterNeedsBlobSize(filter: ObjectFilter): boolean {
  if (filter.kind === 'blob:limit') return true;
  return filter.kind === 'combine' && filter.filters.some(filterNeedsBlobSize);
}

/** The filter kinds in `filter` (`combine` and each part's), for a server's allow list. */
export function filterKinds(filter: ObjectFilter): Set<ObjectFilter['kind']> {
  const kinds = new Set<ObjectFilter['kind']>([filter.kind]);
  if (filter.kind === 'combine') for (const f of filter.filters) for (const k of filterKinds(f)) kinds.add(k);
  return kinds;
}
