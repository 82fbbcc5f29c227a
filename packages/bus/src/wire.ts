/**
 * The bus's data envelopes on the wire (see bus.ts): arrays indexed by the slots below, with
 * numeric kinds. An array of a few slots clones for less than an object with named fields (no
 * key strings to write and read), and this is the cost every message pays twice (serialise,
 * deserialise). The names exist only in the source: on the wire a slot is its index and a kind
 * its number, so these values never change (peers on older versions read the same bytes).
 *
 * Internal to the package; tests that play a peer by hand build and read envelopes with these names.
 */

/** Where each field sits in an envelope. */
export const Slot = {
  kind: 0,
  /** Sequence number, per link, strictly increasing. */
  sequence: 1,
  /** Event, handler or channel name; the distances of the peers a hub announces as joined. */
  name: 2,
  /** Request id. */
  id: 3,
  /** Payload; the wire error of an error response; the peer ids of an announcement. */
  payload: 4,
  /** Source, target and hops left: only on envelopes routed through a hub. */
  source: 5,
  target: 6,
  hops: 7,
} as const;
export type Slot = (typeof Slot)[keyof typeof Slot];

/** What an envelope is: the value of its `Slot.kind`. */
export const Kind = {
  event: 0,
  request: 1,
  response: 2,
  errorResponse: 3,
  cancel: 4,
  channel: 5,
  /** From a hub: peers it now reaches. */
  peersJoined: 6,
  /** From a hub: peers it no longer reaches. */
  peersLeft: 7,
  ping: 8,
  pong: 9,
  bye: 10,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** Transfer list of an envelope being sent (a symbol key: never cloned). */
declare const TRANSFER_BRAND: unique symbol;
export const TRANSFER: typeof TRANSFER_BRAND = Symbol('transfer') as typeof TRANSFER_BRAND;

/** An envelope as this side builds it; received ones are checked slot by slot. */
export type Envelope = unknown[] & { [TRANSFER]?: Transferable[] };
