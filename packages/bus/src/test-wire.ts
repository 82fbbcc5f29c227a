/**
 * The bus's envelopes (wire.ts) in a readable object form, for tests that play a peer by hand:
 * `toWire` / `fromWire` convert between the two; `envelopesOf` splits a data frame.
 */
import { CH, E, H, I, K, P, PJ, PL, Q, RE, S, T } from './wire.js';

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
