/**
 * Checks of pushed objects, at two levels:
 *
 * - always: what git's own connectivity walk (`rev-list --objects`) needs to read an object, so
 *   a push git would fail on is refused here too: a commit's `tree`/`parent` headers, a tag's
 *   `object`/`type` headers, tree entries that parse (octal mode, non-empty name, 20-byte id);
 *   the walk then checks that each link names an object of the type the link says.
 * - `fsck` (git's `receive.fsckObjects`, as `index-pack --strict` checks, warnings counted as
 *   errors): idents of author, committer and tagger, NUL in headers, the `tag` header, and tree
 *   entries: modes, names (`.`, `..`, `.git` in any case and git's HFS+ and NTFS spellings of it,
 *   `/` in a name), duplicates and order.
 *
 * Problems carry git fsck's message ids (Documentation/fsck-msgids.txt) where git has one.
 *
 *   commit = "tree" SP hex LF *("parent" SP hex LF) "author" SP ident LF "committer" SP ident LF
 *            *(header LF) LF message
 *   tag    = "object" SP hex LF "type" SP type LF "tag" SP name LF ["tagger" SP ident LF] LF message
 *   tree   = *(octal-mode SP name NUL 20-byte-id)
 *   ident  = name SP "<" email ">" SP timestamp SP ("+" / "-") 4DIGIT
 */
import type { ObjectId, ObjectType } from '@gitport/pack';
import { ZERO_ID } from '@gitport/pack/internal/object';
import { bytesToHex } from './hex.js';

/** What a link out of an object must name: an object of this type, or a gitlink (not followed). */
export type LinkType = ObjectType | 'gitlink';

export interface ObjectLink {
  oid: ObjectId;
  type: LinkType;
  /** A tree entry's name (its bytes as latin1). */
  name?: string;
}

export type ObjectVerdict =
  | { ok: true; links: ObjectLink[] }
  | {
      ok: false;
      /** git fsck's message id (`missingTree`, `hasDotgit`, `duplicateEntries`, ...). */
      id: string;
      message: string;
    };

export interface ObjectCheckOptions {
  /** git's `receive.fsckObjects` checks (default false: only what the walk itself needs). */
  fsck?: boolean;
}

const decoder = new TextDecoder();
const HEX40 = /^[0-9a-f]{40}$/;
const TYPES: readonly string[] = ['commit', 'tree', 'blob', 'tag'];

class Problem {
  constructor(
    readonly id: string,
    readonly message: string,
  ) {}
}

/**
 * Checks one object and returns the objects it links to. Never throws: any input gets a verdict.
 */
export function checkObject(type: ObjectType, data: Uint8Array, options: ObjectCheckOptions = {}): ObjectVerdict {
  const fsck = options.fsck === true;
  try {
    switch (type) {
      case 'commit':
        return { ok: true, links: checkCommit(data, fsck) };
      case 'tag':
        return { ok: true, links: checkTag(data, fsck) };
      case 'tree':
        return { ok: true, links: checkTree(data, fsck) };
      case 'blob':
        return { ok: true, links: [] };
      default:
        return { ok: false, id: 'badType', message: `unknown object type ${String(type)}` };
    }
  } catch (error) {
    if (error instanceof Problem) return { ok: false, id: error.id, message: error.message };
    return { ok: false, id: 'badObject', message: 'object could not be parsed' };
  }
}

/** Reads header lines up to the blank line (or the end), as byte ranges. */
class HeaderReader {
  #pos = 0;
  /** `strict`: a last line without LF is a problem (fsck), not a line (git's parsers). */
  constructor(
    readonly data: Uint8Array,
    readonly strict: boolean,
  ) {}

  /** The next header line without its LF; undefined at the blank line or the end. */
  next(): string | undefined {
    const { data } = this;
    if (this.#pos >= data.length) return undefined;
    let end = data.indexOf(0x0a, this.#pos);
    if (end < 0 && this.strict) throw new Problem('unterminatedHeader', 'header not terminated by a newline');
    if (end < 0) end = data.length;
    if (end === this.#pos) return undefined;
    const line = data.subarray(this.#pos, end);
    this.#pos = end + 1;
    return decoder.decode(line);
  }

  /** The byte range of the header (up to the blank line), for the NUL check. */
  headerEnd(): number {
    const blank = indexOfBlankLine(this.data);
    return blank < 0 ? this.data.length : blank;
  }
}

function indexOfBlankLine(data: Uint8Array): number {
  for (let i = data.indexOf(0x0a); i >= 0 && i + 1 < data.length; i = data.indexOf(0x0a, i + 1)) {
    if (data[i + 1] === 0x0a) return i + 1;
  }
  return -1;
}

function checkNoNulInHeader(data: Uint8Array, reader: HeaderReader): void {
  const nul = data.indexOf(0);
  if (nul >= 0 && nul < reader.headerEnd()) throw new Problem('nulInHeader', `NUL at offset ${nul} in the header`);
}

function checkCommit(data: Uint8Array, fsck: boolean): ObjectLink[] {
  const reader = new HeaderReader(data, fsck);
  if (fsck) checkNoNulInHeader(data, reader);
  const links: ObjectLink[] = [];
  let line = reader.next();
  if (line === undefined || !line.startsWith('tree '))
    throw new Problem('missingTree', 'invalid format - expected "tree" line');
  // git's parse_commit_buffer wants the newline after the tree id too
  if (data[45] !== 0x0a) throw new Problem('badTreeSha1', 'invalid "tree" line format - bad sha1');
  const tree = line.slice(5);
  if (!HEX40.test(tree)) throw new Problem('badTreeSha1', 'invalid "tree" line format - bad sha1');
  links.push({ oid: tree, type: 'tree' });
  line = reader.next();
  while (line?.startsWith('parent ')) {
    const parent = line.slice(7);
    if (!HEX40.test(parent)) throw new Problem('badParentSha1', 'invalid "parent" line format - bad sha1');
    links.push({ oid: parent, type: 'commit' });
    line = reader.next();
  }
  if (!fsck) return links;
  if (line === undefined || !line.startsWith('author '))
    throw new Problem('missingAuthor', 'invalid format - expected "author" line');
  checkIdent(line.slice(7));
  line = reader.next();
  if (line === undefined || !line.startsWith('committer '))
    throw new Problem('missingCommitter', 'invalid format - expected "committer" line');
  checkIdent(line.slice(10));
  while (reader.next() !== undefined) {
    // further headers (encoding, gpgsig, mergetag and their continuations) are free-form
  }
  return links;
}

function checkTag(data: Uint8Array, fsck: boolean): ObjectLink[] {
  const reader = new HeaderReader(data, fsck);
  if (fsck) checkNoNulInHeader(data, reader);
  let line = reader.next();
  if (line === undefined || !line.startsWith('object '))
    throw new Problem('missingObject', 'invalid format - expected "object" line');
  const object = line.slice(7);
  if (!HEX40.test(object)) throw new Problem('badObjectSha1', 'invalid "object" line format - bad sha1');
  line = reader.next();
  if (line === undefined || !line.startsWith('type '))
    throw new Problem('missingTypeEntry', 'invalid format - expected "type" line');
  const type = line.slice(5);
  if (!TYPES.includes(type)) throw new Problem('badType', 'invalid "type" value');
  if (fsck) {
    line = reader.next();
    if (line === undefined || !line.startsWith('tag '))
      throw new Problem('missingTagEntry', 'invalid format - expected "tag" line');
    line = reader.next();
    // tags from before git 0.99 have no tagger: git's fsck lets that pass
    if (line?.startsWith('tagger ')) checkIdent(line.slice(7));
  }
  return [{ oid: object, type: type as ObjectType }];
}

/** git's fsck_ident: `name <email> timestamp tz`. */
function checkIdent(ident: string): void {
  if (ident.startsWith('<'))
    throw new Problem('missingNameBeforeEmail', 'invalid author/committer line - missing space before email');
  const open = ident.search(/[<>]/);
  if (open < 0 || ident[open] === '>') throw new Problem('badName', 'invalid author/committer line - bad name');
  if (ident[open - 1] !== ' ')
    throw new Problem('missingSpaceBeforeEmail', 'invalid author/committer line - missing space before email');
  const close = ident.slice(open + 1).search(/[<>]/);
  if (close < 0 || ident[open + 1 + close] !== '>')
    throw new Problem('badEmail', 'invalid author/committer line - bad email');
  const rest = ident.slice(open + 1 + close + 1);
  if (!rest.startsWith(' '))
    throw new Problem('missingSpaceBeforeDate', 'invalid author/committer line - missing space before date');
  const m = /^ (\d+) (.*)$/.exec(rest);
  if (!m) throw new Problem('badDate', 'invalid author/committer line - bad date');
  const date = m[1] as string;
  if (date.length > 1 && date.startsWith('0'))
    throw new Problem('zeroPaddedDate', 'invalid author/committer line - zero-padded date');
  // git keeps timestamps in 64 bits; what does not fit overflows
  if (date.length > 19 || BigInt(date) > 0x7fffffffffffffffn)
    throw new Problem('badDateOverflow', 'invalid author/committer line - date causes integer overflow');
  if (!/^[+-]\d{4}$/.test(m[2] as string))
    throw new Problem('badTimezone', 'invalid author/committer line - bad time zone');
}

/** Modes git writes today, and 100664 that early git wrote. */
const MODES = new Set(['100644', '100755', '100664', '120000', '40000', '160000']);

function checkTree(data: Uint8Array, fsck: boolean): ObjectLink[] {
  const links: ObjectLink[] = [];
  const names = fsck ? new Set<string>() : undefined;
  let previous: { name: Uint8Array; tree: boolean } | undefined;
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    if (space < 0) throw new Problem('badTree', 'cannot be parsed as a tree: no space after the mode');
    const nul = data.indexOf(0, space + 1);
    if (nul < 0 || nul + 21 > data.length) throw new Problem('badTree', 'cannot be parsed as a tree: truncated entry');
    const mode = latin1(data.subarray(pos, space));
    if (!/^[0-7]+$/.test(mode) || mode.length > 7)
      throw new Problem('badTree', 'cannot be parsed as a tree: malformed mode');
    const name = data.subarray(space + 1, nul);
    if (name.length === 0) throw new Problem(fsck ? 'emptyName' : 'badTree', 'contains empty pathname');
    const oid = bytesToHex(data, nul + 1, nul + 21);
    const tree = mode === '40000' || mode === '040000';
    const kind: LinkType = tree ? 'tree' : mode === '160000' ? 'gitlink' : 'blob';
    const key = latin1(name);
    links.push({ oid, type: kind, name: key });
    if (names) {
      checkEntry(mode, name, oid);
      if (names.has(key)) throw new Problem('duplicateEntries', 'contains duplicate file entries');
      names.add(key);
      if (previous && compareEntries(previous.name, previous.tree, name, tree) > 0)
        throw new Problem('treeNotSorted', 'not properly sorted');
      previous = { name, tree };
    }
    pos = nul + 21;
  }
  return links;
}

function checkEntry(mode: string, name: Uint8Array, oid: ObjectId): void {
  if (mode.startsWith('0')) throw new Problem('zeroPaddedFilemode', 'contains zero-padded file modes');
  if (!MODES.has(mode)) throw new Problem('badFilemode', `contains bad file mode ${mode}`);
  if (name.includes(0x2f)) throw new Problem('fullPathname', 'contains full pathnames');
  if (name.length === 1 && name[0] === 0x2e) throw new Problem('hasDot', "contains '.'");
  if (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e) throw new Problem('hasDotdot', "contains '..'");
  if (isDotGit(name)) throw new Problem('hasDotgit', "contains '.git'");
  if (oid === ZERO_ID) throw new Problem('nullSha1', 'contains entries pointing to null sha1');
}

/**
 * `.git` as git's verify_path refuses it: any case, and the spellings HFS+ (which ignores some
 * zero-width code points) and NTFS (trailing dots and spaces, an alternate stream, the 8.3 short
 * name `git~1`) read as `.git`.
 */
export function isDotGit(name: Uint8Array): boolean {
  const text = decoder.decode(name);
  const folded = text.replace(/[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g, '').toLowerCase();
  return folded === '.git' || /^(?:\.git|git~1)[. ]*(?::.*)?$/.test(folded);
}

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i] as number);
  return s;
}

/** git's base_name_compare: names compared bytewise, a tree's name as if it ended in `/`. */
export function compareEntries(a: Uint8Array, aTree: boolean, b: Uint8Array, bTree: boolean): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  const ca = a.length > n ? (a[n] as number) : aTree ? 0x2f : 0;
  const cb = b.length > n ? (b[n] as number) : bTree ? 0x2f : 0;
  return ca - cb;
}
