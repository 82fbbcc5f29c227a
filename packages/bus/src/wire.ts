/**
 * The bus's data envelopes on the wire (see bus.ts): arrays indexed by the slots below, with
 * numeric kinds. An array of a few slots clones in about half the time an object with named
 * fields takes, and this is the cost every message pays twice (serialise, deserialise).
 *
 * Internal to the package (tests that play a peer by hand use the readable form of test-wire.ts).
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
