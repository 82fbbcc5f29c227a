/**
 * The stream protocol: the frames one transport multiplexer sends another over a bus
 * connection (one bus event, {@link FRAME_EVENT}). A stream is named by the id its opener
 * gave it; `i` says whether the sender of a frame is that opener (1) or the acceptor (0), so
 * both sides can open streams without their ids colliding.
 *
 *   open    {t:'open',   s, n: name, w: window, m: max, v: 2, c?: credit}  opener -> acceptor
 *   accept  {t:'accept', s, w: window, m: max, r?: room}      acceptor -> opener
 *   refuse  {t:'refuse', s, c: code, m: message}         acceptor -> opener (nobody listens)
 *   data    {t:'data',   s, i, b: Uint8Array | Uint8Array[]}  costs the bytes' length in credit;
 *                                                        an array carries several chunks in order
 *   credit  {t:'credit', s, i, n: bytes}                 the reader consumed n more bytes
 *   blocked {t:'blocked',s, i}                           the writer waits for credit: grant now
 *   end     {t:'end',    s, i}                           the sender's write side is done
 *   cancel  {t:'cancel', s, i, e: reason}                the sender's reader gave up: stop writing
 *   abort   {t:'abort',  s, i, e: reason}                both directions fail on both sides
 *
 * `m` is the largest data payload the sender's bus accepts in one message; each writer splits
 * its data below the smaller of its own limit and the other side's.
 *
 * Optimistic open: an opener that already had a stream on that name accepted by that peer (so
 * it knows the listener's window and payload limit, and `r`, how many more streams the listener
 * took then) may start writing right after the open frame, within the credit `c` it announces
 * there (at most {@link OPTIMISTIC_CREDIT}, and no more than the window it learnt). The acceptor
 * gives every stream of a listener that listener's window, never more: it refuses (code
 * TRANSPORT_WINDOW_CHANGED: open again) an open whose `c` is above it (a listener replaced by one
 * with a smaller window). So an accept's `w` is at least `c`; it replaces `c` on the writer's
 * side (what it sent counts against it), and an opener given less aborts the stream with
 * TRANSPORT_PROTOCOL. A refused open drops that data (at most `c` bytes): frames for streams
 * nobody has are ignored.
 * The acceptor need not answer such an open at once: its accept may wait for the next frame it
 * sends that peer (and goes ahead of it) or for its next macrotask, so the accept and a quick
 * answer share one message. It sends no accept for a stream the opener ended before (abort, or
 * end and cancel): the opener stops waiting for the answer when its stream is finished.
 *
 * Flow control: each side advertises a receive window in bytes (open/accept). A writer may
 * have at most that many bytes sent and not yet granted back; the reader grants bytes back in
 * batches as its consumer takes them, at the latest once half of its window is consumed and
 * not granted (one grant for every half window: each grant is a message that wakes the writer's
 * thread). A writer that waits for more than the other half (a big chunk it sends whole) says
 * `blocked`, and the reader then grants what its consumer took at once. A reader that receives
 * more than its window aborts the stream with TRANSPORT_PROTOCOL. Frames for unknown streams are
 * ignored (they race with an abort or a finished stream).
 */
import type { WireReason } from './errors.js';

/** The bus event every transport frame travels under. */
export const FRAME_EVENT = 'gitport.transport';
export const PROTOCOL_VERSION = 2;

export type Side = 0 | 1;

export type Frame =
  | { t: 'open'; s: number; n: string; w: number; m: number; v: number; c?: number }
  | { t: 'accept'; s: number; w: number; m: number; r?: number }
  | { t: 'refuse'; s: number; c: string; m: string }
  | { t: 'data'; s: number; i: Side; b: Uint8Array | Uint8Array[] }
  | { t: 'credit'; s: number; i: Side; n: number }
  | { t: 'blocked'; s: number; i: Side }
  | { t: 'end'; s: number; i: Side }
  | { t: 'cancel'; s: number; i: Side; e: WireReason }
  | { t: 'abort'; s: number; i: Side; e: WireReason };

const MAX_NAME = 1024;
/**
 * The most chunks one data frame carries: a writer sends a batch of this many at once, a
 * reader ignores a frame with more as malformed.
 */
export const MAX_FRAME_CHUNKS = 64;

const isChunks = (v: unknown): v is Uint8Array | Uint8Array[] => {
  if (v instanceof Uint8Array) return true;
  if (!Array.isArray(v) || v.length > MAX_FRAME_CHUNKS) return false;
  for (let k = 0; k < v.length; k++) if (!(v[k] instanceof Uint8Array)) return false;
  return true;
};

/** The bytes a data frame carries. */
export const dataBytes = (b: Uint8Array | Uint8Array[]): number => {
  if (b instanceof Uint8Array) return b.byteLength;
  let n = 0;
  for (let k = 0; k < b.length; k++) n += b[k]!.byteLength;
  return n;
};
export const MAX_WINDOW = 2 ** 30;
/** The most credit an optimistic open may announce (and an acceptor grants on its word). */
export const OPTIMISTIC_CREDIT = 1024 * 1024;

/** The most a reader keeps consumed and not granted: half its window. */
export const grantBatch = (window: number): number => Math.max(1, Math.floor(window / 2));
/** Whether a writer waiting for `need` bytes of credit must say `blocked` (see the header). */
export const mustSayBlocked = (need: number, remoteWindow: number): boolean =>
  need > remoteWindow - grantBatch(remoteWindow);

const isId = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2 ** 52;
/** The largest count a frame carries (an accept's room for more streams is capped to it). */
export const MAX_COUNT = 2 ** 31;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_COUNT;
const isSide = (v: unknown): v is Side => v === 0 || v === 1;
const isWindow = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_WINDOW;
/** The smallest payload limit a side may announce. */
export const MIN_PAYLOAD = 1024;
const isPayloadLimit = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= MIN_PAYLOAD;
const isReason = (v: unknown): v is WireReason =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as WireReason).name === 'string' &&
  typeof (v as WireReason).message === 'string' &&
  ((v as WireReason).code === undefined || typeof (v as WireReason).code === 'string');

/** Checks a frame that came off the wire; anything malformed gives undefined. */
export function parseFrame(value: unknown): Frame | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const f = value as Record<string, unknown>;
  if (!isId(f.s)) return undefined;
  switch (f.t) {
    case 'data':
      return isSide(f.i) && isChunks(f.b) ? (value as Frame) : undefined;
    case 'credit':
      return isSide(f.i) && typeof f.n === 'number' && Number.isInteger(f.n) && f.n > 0 && f.n <= MAX_WINDOW
        ? (value as Frame)
        : undefined;
    case 'blocked':
    case 'end':
      return isSide(f.i) ? (value as Frame) : undefined;
    case 'cancel':
    case 'abort':
      return isSide(f.i) && isReason(f.e) ? (value as Frame) : undefined;
    case 'open':
      return typeof f.n === 'string' &&
        f.n.length <= MAX_NAME &&
        isWindow(f.w) &&
        isPayloadLimit(f.m) &&
        typeof f.v === 'number' &&
        (f.c === undefined || (isWindow(f.c) && f.c <= OPTIMISTIC_CREDIT))
        ? (value as Frame)
        : undefined;
    case 'accept':
      return isWindow(f.w) && isPayloadLimit(f.m) && (f.r === undefined || isCount(f.r)) ? (value as Frame) : undefined;
    case 'refuse':
      return typeof f.c === 'string' && typeof f.m === 'string' ? (value as Frame) : undefined;
    default:
      return undefined;
  }
}
