/**
 * Protocol v2 `ls-refs` rounds as cache entries (gitprotocol-v2, "ls-refs"):
 *
 *   request = PKT-LINE("command=ls-refs" LF) capability-list [delim-pkt *(PKT-LINE(arg LF))] flush-pkt
 *   output  = *(PKT-LINE(obj-id SP refname *(SP ref-attribute) LF)) flush-pkt
 *
 * The output depends on the repository's refs and on the request's arguments alone, so a listing
 * is cached like an advertisement, under the request's exact bytes; an answer that is not a
 * listing (an `ERR` packet) is never kept.
 */
import { parseLength } from '@gitport/pktline';

/** Requests larger than this (many `ref-prefix` arguments) are not cached. */
export const MAX_CACHED_LS_REFS_REQUEST = 8 * 1024;

const COMMAND = 'command=ls-refs';

/** The cache key of an `ls-refs` request, undefined for any other request (or one too large). */
export function lsRefsKey(request: Uint8Array): string | undefined {
  if (request.byteLength < 4 || request.byteLength > MAX_CACHED_LS_REFS_REQUEST) return undefined;
  const length = parseLength(request, 0);
  if (length !== COMMAND.length + 4 && length !== COMMAND.length + 5) return undefined;
  if (length > request.byteLength) return undefined;
  for (let i = 0; i < COMMAND.length; i++) if (request[4 + i] !== COMMAND.charCodeAt(i)) return undefined;
  if (length === COMMAND.length + 5 && request[4 + COMMAND.length] !== 10) return undefined;
  return `ls-refs\0${Buffer.from(request.buffer, request.byteOffset, request.byteLength).toString('latin1')}`;
}

/** Whether `output` is a whole ref listing: data packets, none of them `ERR`, then one flush. */
export function isRefListing(output: Uint8Array): boolean {
  let at = 0;
  while (at + 4 <= output.byteLength) {
    const length = parseLength(output, at);
    if (length === 0) return at + 4 === output.byteLength;
    if (length < 5 || at + length > output.byteLength) return false;
    if (
      length >= 8 &&
      output[at + 4] === 69 &&
      output[at + 5] === 82 &&
      output[at + 6] === 82 &&
      output[at + 7] === 32
    ) {
      return false;
    }
    at += length;
  }
  return false;
}
