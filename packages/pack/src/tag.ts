/**
 * Annotated tag objects:
 *
 *   tag = "object" SP oid LF "type" SP type LF "tag" SP name LF ["tagger" SP ident LF] *(header) LF message
 */
import { formatHeaders, formatPerson, identBrackets, type Person, parseHeaders, parsePerson } from './commit.js';
import { PackError } from './errors.js';
import { isObjectId, isObjectType, type ObjectId, type ObjectType } from './object.js';

export interface Tag {
  object: ObjectId;
  type: ObjectType;
  tag: string;
  tagger?: Person;
  extraHeaders: [key: string, value: string][];
  message: string;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function parseTag(data: Uint8Array): Tag {
  const { headers, message } = tagHeaders(data);
  const [o, t, n] = headers as [[string, ObjectId], [string, ObjectType], [string, string]];
  let i = 3;
  const tag: Tag = { object: o[1], type: t[1], tag: n[1], extraHeaders: [], message };
  if (headers[i]?.[0] === 'tagger') tag.tagger = parsePerson(headers[i++]![1], 'tagger', 'PARSE_TAG');
  tag.extraHeaders = headers.slice(i);
  return tag;
}

/**
 * The object a tag names, the tag checked as `parseTag` checks it (PARSE_TAG), without building
 * the rest: what peeling needs.
 */
export function parseTagTarget(data: Uint8Array): ObjectId {
  const { headers } = tagHeaders(data);
  const tagger = headers[3];
  if (tagger?.[0] === 'tagger') identBrackets(tagger[1], 'tagger', 'PARSE_TAG');
  return headers[0]![1];
}

/** A tag's headers and message, its `object`, `type` and `tag` lines checked (PARSE_TAG). */
function tagHeaders(data: Uint8Array): { headers: [string, string][]; message: string } {
  const parsed = parseHeaders(decoder.decode(data), 'PARSE_TAG');
  const [o, t, n] = parsed.headers;
  if (o?.[0] !== 'object' || !isObjectId(o[1])) throw new PackError('PARSE_TAG', 'tag has no valid object');
  if (t?.[0] !== 'type' || !isObjectType(t[1])) throw new PackError('PARSE_TAG', 'tag has no valid type');
  if (n?.[0] !== 'tag') throw new PackError('PARSE_TAG', 'tag has no name');
  return parsed;
}

export function serializeTag(tag: Tag): Uint8Array {
  const headers: [string, string][] = [
    ['object', tag.object],
    ['type', tag.type],
    ['tag', tag.tag],
  ];
  if (tag.tagger) headers.push(['tagger', formatPerson(tag.tagger)]);
  return encoder.encode(`${formatHeaders([...headers, ...tag.extraHeaders])}\n${tag.message}`);
}
