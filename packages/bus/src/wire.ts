/**
 * The bus's data envelopes on the wire (see bus.ts): arrays indexed by the slots below, with
 * numeric kinds. An array of a few slots clones in about half the time an object with named
 * fields takes, and this is the cost every message pays twice (serialise, deserialise).
 *
 * Internal to the package. `toWire` / `fromWire` convert from and to a readable object form, for
 * tests that play a peer by hand.
 */

/** Envelope slots. */
export const K = 0;
export const Q = 1;
/** Event, handler or channel name. */
export const E = 2;
/** Request id. */
export const I = 3;
/** Payload; the wire error of an error response; the peer ids of an announcement. */
export const P = 4;
/** Source, target and hops left: only on envelopes routed through a hub. */
export const S = 5;
export const T = 6;
export const H = 7;

/** Envelope kinds. */
export const EV = 0;
export const RQ = 1;
export const RS = 2;
export const RE = 3;
export const CN = 4;
export const CH = 5;
export const PJ = 6;
export const PL = 7;
export const HP = 8;
export const HO = 9;
export const BY = 10;

/** Transfer list of an envelope being sent (a symbol key: never cloned). */
declare const TRANSFER_BRAND: unique symbol;
export const TRANSFER: typeof TRANSFER_BRAND = Symbol('transfer') as typeof TRANSFER_BRAND;

/** An envelope as this side builds it; received ones are checked slot by slot. */
export type Envelope = unknown[] & { [TRANSFER]?: Transferable[] };

const NAMES = ['ev', 'rq', 'rs', 're', 'cn', 'ch', 'pj', 'pl', 'hp', 'ho', 'by'] as const;

/** The readable form used by tests: `{ k: 'rq', q, e, i, p, s, t, h }`, `x` for an error, `c` for a channel, `l` for peer ids. */
export type ReadableEnvelope = Record<string, unknown>;

/** Readable form to wire form (an unknown kind name is kept as it is: garbage stays garbage). */
export function toWire(envelope: ReadableEnvelope): unknown[] {
  const name = envelope.k;
  const at = NAMES.indexOf(name as (typeof NAMES)[number]);
  const k = at === -1 ? name : at;
  const e = 'c' in envelope ? envelope.c : envelope.e;
  const p = 'x' in envelope ? envelope.x : 'l' in envelope ? envelope.l : envelope.p;
  const wire: unknown[] = [k, envelope.q, e, envelope.i, p];
  if ('s' in envelope || 't' in envelope || 'h' in envelope) wire.push(envelope.s, envelope.t, envelope.h);
  return wire;
}

/** Wire form to readable form (slots left out stay absent). */
export function fromWire(wire: unknown): ReadableEnvelope {
  if (!Array.isArray(wire)) return { garbage: wire };
  const k = wire[K];
  const name = typeof k === 'number' && k >= 0 && k < NAMES.length ? NAMES[k]! : k;
  const out: ReadableEnvelope = { k: name, q: wire[Q] };
  const set = (key: string, value: unknown): void => {
    if (value !== undefined) out[key] = value;
  };
  set(k === CH ? 'c' : 'e', wire[E]);
  set('i', wire[I]);
  set(k === RE ? 'x' : k === PJ || k === PL ? 'l' : 'p', wire[P]);
  set('s', wire[S]);
  set('t', wire[T]);
  set('h', wire[H]);
  return out;
}

/** The envelopes of a data frame, in wire form (a lone envelope or a batch). */
export function envelopesOf(frame: unknown): unknown[] {
  if (!Array.isArray(frame)) return [];
  return typeof frame[0] === 'number' ? [frame] : frame;
}
