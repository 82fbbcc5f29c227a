/**
 * The one error class of `@gitport/bus`. Recognise errors by their stable string `code`
 * (never by `instanceof`, which breaks across realms and duplicate copies of the package).
 *
 * Codes:
 *   BUS_CLOSED                the bus (or the connection being set up) was closed
 *   BUS_UNKNOWN_PEER          no peer with that id is connected (directly or through a hub)
 *   BUS_PEER_LOST             the peer went away (port closed, worker exited, bye, missed heartbeats)
 *   BUS_TOO_MANY_PEERS        `maxPeers` reached
 *   BUS_TOO_MANY_PENDING      `maxPendingRequests` reached
 *   BUS_MESSAGE_TOO_LARGE     a message is larger than `maxMessageSize`
 *   BUS_DATA_CLONE            a payload cannot be structured-cloned (function, symbol, ...)
 *   BUS_TIMEOUT               a request or a handshake took longer than its timeout
 *   BUS_ABORTED               the caller's AbortSignal fired
 *   BUS_NO_HANDLER            the peer has no handler of that name
 *   BUS_HANDSHAKE             the handshake was refused (duplicate id, version mismatch, own id)
 *   BUS_INVALID_ORIGIN        an origin pattern or a window target origin is invalid
 *   BUS_INVALID_ARGUMENT      a bad argument (empty id, non-string name, ...)
 *   BUS_HOP_LIMIT             a hub dropped an envelope that had used up its hops
 *   BUS_REMOTE_ERROR          a handler threw something without a code of its own
 *   BUS_REPORTS_SUPPRESSED    (onError only) more messages were dropped than are reported one by
 *                             one; `data.count` says how many went unreported
 */
export type BusErrorCode =
  | 'BUS_CLOSED'
  | 'BUS_UNKNOWN_PEER'
  | 'BUS_PEER_LOST'
  | 'BUS_TOO_MANY_PEERS'
  | 'BUS_TOO_MANY_PENDING'
  | 'BUS_MESSAGE_TOO_LARGE'
  | 'BUS_DATA_CLONE'
  | 'BUS_TIMEOUT'
  | 'BUS_ABORTED'
  | 'BUS_NO_HANDLER'
  | 'BUS_HANDSHAKE'
  | 'BUS_INVALID_ORIGIN'
  | 'BUS_INVALID_ARGUMENT'
  | 'BUS_HOP_LIMIT'
  | 'BUS_REMOTE_ERROR'
  | 'BUS_REPORTS_SUPPRESSED';

const BRAND = Symbol.for('gitport.bus.error');

export class BusError extends Error {
  override name = 'BusError';
  /** A realm-independent brand, so {@link isBusError} works across copies of the package. */
  readonly [BRAND] = true;
  /** A stable code: one of {@link BusErrorCode} for errors raised by the bus, or the code a remote handler threw. */
  readonly code: string;
  /** Extra data: for a remote error, the enumerable own properties the handler's error carried. */
  readonly data?: Record<string, unknown>;
  /** True when the error was thrown by a handler on another peer and crossed the bus. */
  readonly remote: boolean;

  constructor(
    code: string,
    message: string,
    options: { cause?: unknown; data?: Record<string, unknown>; remote?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.remote = options.remote ?? false;
    if (options.data !== undefined) this.data = options.data;
  }
}

/** True for anything that looks like a BusError (by code and brand, not by prototype). */
export function isBusError(value: unknown, code?: string): value is BusError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [BRAND]?: unknown })[BRAND] === true &&
    typeof (value as { code?: unknown }).code === 'string' &&
    (code === undefined || (value as { code: string }).code === code)
  );
}

/** The wire form of an error: what crosses the bus when a handler throws. */
export interface WireError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
  data?: Record<string, unknown>;
  cause?: WireError | { value: unknown };
  remote?: boolean;
}

const KNOWN_KEYS = new Set(['name', 'message', 'stack', 'cause', 'code', 'data', 'remote']);
const MAX_CAUSE_DEPTH = 8;

function isPlainCloneable(value: unknown, depth = 0): boolean {
  if (value === null) return true;
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'bigint' || t === 'undefined') return true;
  if (t !== 'object' || depth > 16) return false;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date) return true;
  if (Array.isArray(value)) return value.every((v) => isPlainCloneable(v, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value as object).every((v) => isPlainCloneable(v, depth + 1));
}

/** Turns anything thrown into its wire form (a plain, cloneable object). */
export function errorToWire(error: unknown, depth = 0): WireError {
  if (typeof error !== 'object' || error === null || !(error instanceof Error || 'message' in error)) {
    return { name: 'Error', message: String(error), ...(isPlainCloneable(error) ? { data: { value: error } } : {}) };
  }
  const e = error as Error & { code?: unknown; data?: unknown; remote?: unknown };
  const wire: WireError = { name: String(e.name ?? 'Error'), message: String(e.message ?? '') };
  if (typeof e.code === 'string') wire.code = e.code;
  if (typeof e.stack === 'string') wire.stack = e.stack;
  if (e.remote === true) wire.remote = true;
  const data: Record<string, unknown> = {};
  let hasData = false;
  if (typeof e.data === 'object' && e.data !== null && isPlainCloneable(e.data)) {
    Object.assign(data, e.data);
    hasData = true;
  }
  for (const key of Object.keys(e)) {
    if (KNOWN_KEYS.has(key)) continue;
    const value = (e as unknown as Record<string, unknown>)[key];
    if (isPlainCloneable(value)) {
      Object.defineProperty(data, key, { value, enumerable: true, writable: true, configurable: true });
      hasData = true;
    }
  }
  if (hasData) wire.data = data;
  if (e.cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    wire.cause =
      typeof e.cause === 'object' && e.cause !== null
        ? errorToWire(e.cause, depth + 1)
        : { value: isPlainCloneable(e.cause) ? e.cause : String(e.cause) };
  }
  return wire;
}

/** Rebuilds an error from its wire form: a BusError (remote: true) keeping name, message, code, data and cause. */
export function errorFromWire(wire: unknown, depth = 0): BusError {
  const w = (typeof wire === 'object' && wire !== null ? wire : {}) as Partial<WireError>;
  let cause: unknown;
  if (w.cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    cause = 'value' in w.cause && !('message' in w.cause) ? w.cause.value : errorFromWire(w.cause, depth + 1);
  }
  const data = typeof w.data === 'object' && w.data !== null ? w.data : undefined;
  const error = new BusError(
    typeof w.code === 'string' ? w.code : 'BUS_REMOTE_ERROR',
    typeof w.message === 'string' ? w.message : 'remote error',
    { cause, remote: true, ...(data ? { data } : {}) },
  );
  const name = typeof w.name === 'string' ? w.name : 'Error';
  // Keep the remote name (TypeError, PackError, ...) while staying recognisable by code.
  Object.defineProperty(error, 'name', { value: name, enumerable: false, writable: true, configurable: true });
  if (typeof w.stack === 'string') {
    Object.defineProperty(error, 'stack', { value: w.stack, enumerable: false, writable: true, configurable: true });
  }
  return error;
}
