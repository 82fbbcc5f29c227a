/**
 * Commit objects (git's commit format, see Documentation/gitformat-*.adoc and commit.c):
 *
 *   commit  = "tree" SP oid LF *("parent" SP oid LF) "author" SP ident LF "committer" SP ident LF
 *             *(header) LF message
 *   header  = key SP value LF *(SP continuation LF)        ; e.g. encoding, gpgsig, mergetag
 *   ident   = name SP "<" email ">" SP seconds SP ("+" / "-") 4DIGIT
 */
import { PackError } from './errors.js';
import { isObjectId, type ObjectId } from './object.js';

export interface Person {
  name: string;
  email: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** As written, e.g. `+0100` or `-0000`. */
  timezone: string;
}

export interface Commit {
  tree: ObjectId;
  parents: ObjectId[];
  author: Person;
  committer: Person;
  /** Headers after `committer` in order (`encoding`, `gpgsig`, `mergetag`, ...), values without continuation spaces. */
  extraHeaders: [key: string, value: string][];
  message: string;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function parsePerson(text: string, what = 'ident', code = 'PARSE_COMMIT'): Person {
  const m = /^(.*?) ?<([^<>]*)> (-?\d+) ([+-]\d{4})$/.exec(text);
  if (!m) {
    // git tolerates odd idents; keep what can be kept.
    const [lt, gt] = identBrackets(text, what, code);
    const rest = text
      .slice(gt + 1)
      .trim()
      .split(' ');
    return {
      name: text.slice(0, lt).trimEnd(),
      email: text.slice(lt + 1, gt),
      timestamp: Number(rest[0]) || 0,
      timezone: rest[1] ?? '+0000',
    };
  }
  return { name: m[1]!, email: m[2]!, timestamp: Number(m[3]), timezone: m[4]! };
}

/**
 * Where the `<` and `>` around an ident's email are: what `parsePerson` needs of an ident that
 * is not in the usual form, or throws (`code`: `bad <what>: ...`).
 */
export function identBrackets(text: string, what: string, code: string): [lt: number, gt: number] {
  const lt = text.indexOf('<');
  const gt = text.indexOf('>', lt);
  if (lt < 0 || gt < 0) throw new PackError(code, `bad ${what}: ${text.slice(0, 80)}`);
  return [lt, gt];
}

export function formatPerson(p: Person): string {
  return `${p.name} <${p.email}> ${p.timestamp} ${p.timezone}`;
}

/** Splits `key value` header lines (with continuation lines) up to the blank line. */
export function parseHeaders(text: string, code: string): { headers: [string, string][]; message: string } {
  const headers: [string, string][] = [];
  let pos = 0;
  while (pos < text.length) {
    const eol = text.indexOf('\n', pos);
    if (eol < 0) throw new PackError(code, 'headers not terminated');
    if (eol === pos) return { headers, message: text.slice(eol + 1) };
    const line = text.slice(pos, eol);
    if (line.startsWith(' ')) {
      const last = headers[headers.length - 1];
      if (!last) throw new PackError(code, 'continuation line before any header');
      last[1] += `\n${line.slice(1)}`;
    } else {
      const sp = line.indexOf(' ');
      headers.push(sp < 0 ? [line, ''] : [line.slice(0, sp), line.slice(sp + 1)]);
    }
    pos = eol + 1;
  }
  return { headers, message: '' };
}

export function formatHeaders(headers: readonly (readonly [string, string])[]): string {
  let s = '';
  for (const [k, v] of headers) s += `${k} ${v.replaceAll('\n', '\n ')}\n`;
  return s;
}

export function parseCommit(data: Uint8Array): Commit {
  const { headers, message } = parseHeaders(decoder.decode(data), 'PARSE_COMMIT');
  let i = 0;
  const tree = headers[i]?.[0] === 'tree' ? headers[i++]![1] : undefined;
  if (!isObjectId(tree)) throw new PackError('PARSE_COMMIT', 'commit has no valid tree');
  const parents: ObjectId[] = [];
  while (headers[i]?.[0] === 'parent') {
    const p = headers[i++]![1];
    if (!isObjectId(p)) throw new PackError('PARSE_COMMIT', `bad parent ${String(p).slice(0, 60)}`);
    parents.push(p);
  }
  if (headers[i]?.[0] !== 'author') throw new PackError('PARSE_COMMIT', 'commit has no author');
  const author = parsePerson(headers[i++]![1], 'author');
  if (headers[i]?.[0] !== 'committer') throw new PackError('PARSE_COMMIT', 'commit has no committer');
  const committer = parsePerson(headers[i++]![1], 'committer');
  return { tree, parents, author, committer, extraHeaders: headers.slice(i), message };
}

export function serializeCommit(commit: Commit): Uint8Array {
  const headers: [string, string][] = [['tree', commit.tree]];
  for (const p of commit.parents) headers.push(['parent', p]);
  headers.push(['author', formatPerson(commit.author)], ['committer', formatPerson(commit.committer)]);
  return encoder.encode(`${formatHeaders([...headers, ...commit.extraHeaders])}\n${commit.message}`);
}

/**
 * The tree, parents and committer time of a commit without decoding the whole text: what history
 * walks need.
 */
export function parseCommitLinks(data: Uint8Array): { tree: ObjectId; parents: ObjectId[]; time: number } {
  // "tree " + 40 hex + "\n"
  if (data.length < 46 || data[0] !== 0x74 || data[45] !== 0x0a)
    throw new PackError('PARSE_COMMIT', 'commit has no tree');
  const tree = decoder.decode(data.subarray(5, 45));
  const parents: ObjectId[] = [];
  let pos = 46;
  while (data[pos] === 0x70 && data[pos + 6] === 0x20 && data[pos + 47] === 0x0a) {
    parents.push(decoder.decode(data.subarray(pos + 7, pos + 47)));
    pos += 48;
  }
  let time = 0;
  const limit = Math.min(data.length, pos + 2048);
  for (let p = pos; p < limit; ) {
    let eol = data.indexOf(0x0a, p);
    if (eol < 0 || eol > limit) eol = limit;
    if (eol === p) break;
    if (data[p] === 0x63 && decoder.decode(data.subarray(p, p + 10)) === 'committer ') {
      const line = decoder.decode(data.subarray(p, eol));
      const m = / (-?\d+) [+-]\d{4}$/.exec(line);
      if (m) time = Number(m[1]);
      break;
    }
    p = eol + 1;
  }
  if (!isObjectId(tree) || !parents.every(isObjectId)) throw new PackError('PARSE_COMMIT', 'bad commit links');
  return { tree, parents, time };
}
