/**
 * Message size, as the bus counts it against `maxMessageSize`, and a cheap structured-clone check.
 *
 * size(binary)  = byteLength (ArrayBuffer, typed arrays, DataView, SharedArrayBuffer)
 * size(string)  = length (UTF-16 code units)
 * size(other primitives, Date, RegExp, MessagePort, ...) = 8
 * size(object)      = 8 + the length of each own key + the size of its value
 * size(array, Set)  = 8 + the size of each element; size(Map) = 8 + the size of each key and value
 * A value reached twice (shared or cyclic) counts once, as structured clone sends it once.
 * Functions and symbols cannot be cloned: BusError `BUS_DATA_CLONE`.
 */
import { BusError } from './errors.js';

const SLOT = 8;

/** The size of `value`; stops walking (and returns a number > `limit`) as soon as `limit` is passed. */
export function messageSize(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  switch (typeof value) {
    case 'string':
      return value.length;
    case 'number':
    case 'boolean':
    case 'undefined':
    case 'bigint':
      return SLOT;
    case 'function':
    case 'symbol':
      throw new BusError('BUS_DATA_CLONE', `a ${typeof value} cannot be sent over the bus`);
  }
  if (value === null) return SLOT;
  // The common RPC payloads first: a plain object or array of primitives needs no general walk.
  const proto = Object.getPrototypeOf(value);
  const size =
    proto === Object.prototype
      ? flatObject(value as Record<string, unknown>)
      : proto === Array.prototype
        ? flatArray(value as unknown[])
        : ArrayBuffer.isView(value) || value instanceof ArrayBuffer
          ? (value as ArrayBufferLike | ArrayBufferView).byteLength
          : undefined;
  return size ?? walk(value as object, limit);
}

/** A primitive's size, or -1 for anything else (objects may be shared or cyclic: the walk decides). */
function primitiveSize(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return v.length;
    case 'number':
    case 'boolean':
    case 'undefined':
    case 'bigint':
      return SLOT;
    default:
      return -1;
  }
}

/**
 * A plain object of primitives and at most one binary value: a view, or a short array of distinct
 * views (a stream's data frame, `{ t, s, i, b }`). Anything else, a second binary value included
 * (it may hold the first one's views again), goes to the walk.
 */
function flatObject(value: Record<string, unknown>): number | undefined {
  let total = SLOT;
  let binary = false;
  // for-in over own keys: Object.keys would allocate an array on every message
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const v = value[key];
    let size = primitiveSize(v);
    if (size < 0) {
      if (binary) return undefined;
      binary = true;
      if (ArrayBuffer.isView(v)) size = v.byteLength;
      else if (Array.isArray(v)) {
        size = viewsSize(v);
        if (size < 0) return undefined;
      } else return undefined;
    }
    total += key.length + size;
  }
  return total;
}

/** The size of an array of distinct views, or -1 (anything else, or a view twice: the walk counts it once). */
function viewsSize(views: unknown[]): number {
  if (Object.getPrototypeOf(views) !== Array.prototype || views.length > SHORT_ARRAY) return -1;
  let total = SLOT;
  for (let i = 0; i < views.length; i++) {
    const view = views[i];
    if (!ArrayBuffer.isView(view)) return -1;
    for (let j = 0; j < i; j++) if (views[j] === view) return -1;
    total += view.byteLength;
  }
  return total;
}

/**
 * Arrays longer than this are read by the elements they have (a sparse array clones as its
 * length and its elements, so a few bytes can claim billions of holes), each hole counting a slot.
 */
const SHORT_ARRAY = 64;

function flatArray(value: unknown[]): number | undefined {
  if (value.length > SHORT_ARRAY) return undefined;
  let total = SLOT;
  for (let i = 0; i < value.length; i++) {
    const size = primitiveSize(value[i]);
    if (size < 0) return undefined;
    total += size;
  }
  return total;
}

function walk(root: object, limit: number): number {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  let total = 0;
  while (stack.length > 0) {
    const value = stack.pop();
    switch (typeof value) {
      case 'string':
        total += value.length;
        break;
      case 'function':
      case 'symbol':
        throw new BusError('BUS_DATA_CLONE', `a ${typeof value} cannot be sent over the bus`);
      case 'object': {
        if (value === null) {
          total += SLOT;
          break;
        }
        if (seen.has(value)) break;
        seen.add(value);
        if (ArrayBuffer.isView(value)) total += value.byteLength;
        else if (value instanceof ArrayBuffer) total += value.byteLength;
        else if (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer) {
          total += value.byteLength;
        } else if (Array.isArray(value)) {
          total += SLOT;
          if (value.length <= SHORT_ARRAY) {
            for (let i = 0; i < value.length; i++) stack.push(value[i]);
          } else {
            // only the elements it has (time and memory as the message's own); holes count a slot each
            let present = 0;
            for (const key in value) {
              if (!Object.hasOwn(value, key)) continue;
              present++;
              stack.push(value[key as unknown as number]);
            }
            total += Math.max(0, value.length - present) * SLOT;
          }
        } else if (value instanceof Map) {
          total += SLOT;
          for (const [k, v] of value) stack.push(k, v);
        } else if (value instanceof Set) {
          total += SLOT;
          for (const v of value) stack.push(v);
        } else if (value instanceof Date || value instanceof RegExp) {
          total += SLOT;
        } else if (value instanceof Error) {
          total += SLOT + value.message.length + (value.stack?.length ?? 0);
          if (value.cause !== undefined) stack.push(value.cause);
        } else {
          total += SLOT;
          for (const key in value) {
            if (!Object.hasOwn(value, key)) continue;
            total += key.length;
            stack.push((value as Record<string, unknown>)[key]);
          }
        }
        break;
      }
      default:
        total += SLOT;
    }
    if (total > limit) return total;
  }
  return total;
}
