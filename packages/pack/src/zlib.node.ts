/**
 * zlib through node:zlib: the Node fast path selected by the `#zlib` import condition.
 * `inflateSync(..., { info: true })` stops at the end of the zlib stream and reports the input
 * bytes it used, so one call inflates one pack entry followed by anything.
 */
import { constants, Deflate, deflateSync, Inflate, inflateSync, crc32 as nodeCrc32 } from 'node:zlib';
import { PackError } from './errors.js';
import type { StreamInflater } from './inflate-stream.js';
import { SLAB_SIZE, slabAllocator } from './slab.js';
import type { InflateOutcome, InflateRest } from './zlib.js';

// The outcome types are the portable module's (a type import loads nothing from it).
export type { InflateOutcome, InflateRest };

/**
 * The streaming inflater for entries too large to inflate in one call, loaded on the first one:
 * most packs have none, and its module (pako's inflate) is memory every Node process that reads
 * a pack would carry. (The portable module, which runs on pako anyway, hands it over at once.)
 */
export async function loadStreamInflater(): Promise<typeof StreamInflater> {
  return (await import('./inflate-stream.js')).StreamInflater;
}

interface InflateInfo {
  buffer: Buffer;
  engine: { bytesWritten: number };
}

/**
 * A reusable native inflate context. `inflateSync` builds (and tears down) a zlib context per
 * call, which dominates for the many small entries of a pack; driving one context's handle
 * (`writeSync` + `reset`, what `inflateSync` itself does internally) skips that setup. Node
 * does not document the handle, so it is feature-detected and `inflateSync` remains the
 * fallback.
 */
interface NativeHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  reset(): void;
  onerror: (message: string, errno: number) => void;
}

interface NativeContext {
  handle: NativeHandle;
  state: Uint32Array;
  error: { message: string; errno: number } | undefined;
}

/** The context `inflateOne` uses; one handed to an `InflateRest` is replaced from `idle`. */
let native: NativeContext | undefined;
/** Contexts given back by finished `InflateRest`s. */
const idle: NativeContext[] = [];
/** `InflateRest`s holding a context (not yet done, failed or closed). */
let openRests = 0;

/** How many `InflateRest`s hold a context now (what tests check nothing keeps one). */
export function openInflateRests(): number {
  return openRests;
}
let nativeBroken = false;

function nativeInflater(): NativeContext | undefined {
  if (native !== undefined) return native;
  if (nativeBroken) return undefined;
  native = idle.pop() ?? newNativeInflater();
  if (!native) nativeBroken = true;
  return native;
}

function newNativeInflater(): NativeContext | undefined {
  try {
    const engine = new Inflate() as unknown as { _handle?: NativeHandle; _writeState?: Uint32Array };
    const handle = engine._handle;
    const state = engine._writeState;
    if (!handle || typeof handle.writeSync !== 'function' || typeof handle.reset !== 'function' || !state) {
      return undefined;
    }
    const ctx = { handle, state, error: undefined as { message: string; errno: number } | undefined };
    handle.onerror = (message: string, errno: number) => {
      ctx.error = { message, errno };
    };
    // self-test before trusting it
    const probe = deflateSync(Buffer.from('gitport'));
    const out = new Uint8Array(8);
    handle.writeSync(constants.Z_FINISH, probe, 0, probe.length, out, 0, out.length);
    handle.reset();
    if (ctx.error || state[0] !== 1 || state[1] !== 0) return undefined;
    return ctx;
  } catch {
    return undefined;
  }
}

/**
 * Small outputs are carved from shared slabs (slab.ts): one ArrayBuffer per object costs more than
 * the inflate itself for the many small entries of a pack. Stores copy the views they keep (see
 * MemoryObjectStore.writeHashed). Slabs are not zero-filled: inflate overwrites every byte handed
 * out (a short result is an error).
 */
const allocate = slabAllocator((size) => {
  const b = Buffer.allocUnsafeSlow(size);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
});

/**
 * Large outputs get a buffer of exactly their size (stores keep it as it is, no copy). One that
 * came back unused because the input was short is kept for the retry of the same entry.
 */
let spare: Uint8Array | undefined;
function allocateExact(n: number): Uint8Array {
  const s = spare;
  if (s !== undefined && s.length === n) {
    spare = undefined;
    return s;
  }
  // not zero-filled: inflate overwrites every byte handed out (a short result is an error)
  const b = Buffer.allocUnsafeSlow(n);
  return new Uint8Array(b.buffer, b.byteOffset, n);
}

/** Output space for the probe after an exactly filled large output. */
const probe = new Uint8Array(1);

/**
 * Inflates the zlib stream at the start of `input` into `expectedSize` bytes. A stream cut short
 * by the end of `input` gives `need-more`, with the inflate so far as `rest` when `resumable`.
 * The data may be placed in `into` (when it holds `expectedSize + 1` bytes) instead of new
 * memory: then it is a view of `into`.
 */
export function inflateOne(
  input: Uint8Array,
  expectedSize: number,
  final: boolean,
  resumable = false,
  into?: Uint8Array,
): InflateOutcome {
  const ctx = nativeInflater();
  if (!ctx) return inflateOneSync(input, expectedSize, final);
  // small outputs get one byte more than declared (a longer stream fills it); a large one gets
  // exactly its size, and a stream that filled it must then have ended: the probe asks for one
  // byte more, which an oversized stream produces (and a short input reports as an error)
  const lent = into !== undefined && into.length > expectedSize;
  const exact = !lent && expectedSize > SLAB_SIZE / 8;
  // a lent buffer is written through its first `expectedSize + 1` bytes without a view of them
  // (one object less per entry): only a resumable stream takes such a view
  const out = lent ? into : exact ? allocateExact(expectedSize) : allocate(expectedSize + 1);
  const outLength = lent ? expectedSize + 1 : out.length;
  if (resumable && !final) {
    const bounded = lent ? into.subarray(0, outLength) : out;
    const r = stepNative(ctx, input, bounded, 0, exact);
    if (!r.ended) {
      // all input used, the stream goes on: the context and the output so far go to the rest,
      // and later calls here take another context
      native = undefined;
      return { kind: 'need-more', rest: new NativeRest(ctx, bounded, r.written, expectedSize, exact) };
    }
    ctx.handle.reset();
    return finished(bounded, r.written, expectedSize, exact, input.length - r.availIn);
  }
  ctx.error = undefined;
  ctx.handle.writeSync(constants.Z_FINISH, input, 0, input.length, out, 0, outLength);
  const availOut = ctx.state[0]!;
  let availIn = ctx.state[1]!;
  let extra = 0;
  if (exact && availOut === 0 && ctx.error === undefined) {
    const from = input.length - availIn;
    ctx.handle.writeSync(constants.Z_FINISH, input, from, availIn, probe, 0, 1);
    extra = 1 - ctx.state[0]!;
    availIn = ctx.state[1]!;
  }
  const error = ctx.error as { message: string; errno: number } | undefined;
  ctx.handle.reset();
  if (error) {
    if (exact) spare = out;
    if (error.errno === constants.Z_BUF_ERROR) {
      if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
      return { kind: 'need-more' };
    }
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${error.message}`);
  }
  return finished(out, outLength - availOut + extra, expectedSize, exact, input.length - availIn);
}

/**
 * One step of a stream that may go on in later input, with Z_NO_FLUSH (node reports Z_FINISH's
 * Z_BUF_ERROR as an error without updating the counts, so the output so far would be unknown).
 * Inflate stops early only at the end of the stream or of the output; when it used all the input,
 * a Z_FINISH call with none tells the two apart (Z_BUF_ERROR: the stream goes on). A full output
 * ends the step (the caller reports the overflow); an exactly sized one is followed by the
 * one-byte probe first. On an error the context is reset and the error thrown.
 */
function stepNative(
  ctx: NativeContext,
  input: Uint8Array,
  out: Uint8Array,
  written: number,
  exact: boolean,
): { ended: boolean; written: number; availIn: number } {
  const handle = ctx.handle;
  const state = ctx.state;
  let availIn = input.length;
  ctx.error = undefined;
  if (written < out.length) {
    handle.writeSync(constants.Z_NO_FLUSH, input, 0, availIn, out, written, out.length - written);
    if (ctx.error === undefined) {
      written = out.length - state[0]!;
      availIn = state[1]!;
    }
  }
  if (ctx.error === undefined && written === out.length && exact) {
    handle.writeSync(constants.Z_NO_FLUSH, input, input.length - availIn, availIn, probe, 0, 1);
    if (ctx.error === undefined) {
      written += 1 - state[0]!;
      availIn = state[1]!;
    }
  }
  if (ctx.error === undefined && availIn === 0 && written <= (exact ? out.length : out.length - 1)) {
    handle.writeSync(constants.Z_FINISH, input, input.length, 0, probe, 0, 1);
    const error = ctx.error as { errno: number } | undefined;
    if (error?.errno === constants.Z_BUF_ERROR) return { ended: false, written, availIn };
    if (ctx.error === undefined) written += 1 - state[0]!;
  }
  const error = ctx.error as { message: string } | undefined;
  if (error) {
    handle.reset();
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${error.message}`);
  }
  return { ended: true, written, availIn };
}

/** The data of a finished stream, once its size checks out. */
function finished(out: Uint8Array, written: number, size: number, exact: boolean, consumed: number): InflateOutcome {
  if (written !== size) {
    throw new PackError(
      'PACK_SIZE_MISMATCH',
      written > size ? `inflated data exceeds declared ${size}` : `inflated ${written} bytes, header declared ${size}`,
    );
  }
  return { kind: 'done', data: exact ? out : out.subarray(0, size), consumed };
}

/** A stream continued across input pieces on its own native context (`stepNative` per piece). */
class NativeRest implements InflateRest {
  #ctx: NativeContext | undefined;
  readonly #out: Uint8Array;
  #written: number;
  readonly #size: number;
  readonly #exact: boolean;

  constructor(ctx: NativeContext, out: Uint8Array, written: number, size: number, exact: boolean) {
    this.#ctx = ctx;
    this.#out = out;
    this.#written = written;
    this.#size = size;
    this.#exact = exact;
    openRests++;
  }

  push(input: Uint8Array, final: boolean): InflateOutcome {
    const ctx = this.#ctx;
    if (!ctx) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: stream already finished');
    let r: { ended: boolean; written: number; availIn: number };
    try {
      r = stepNative(ctx, input, this.#out, this.#written, this.#exact);
    } catch (error) {
      this.close();
      throw error;
    }
    this.#written = r.written;
    if (!r.ended) {
      if (!final) return { kind: 'need-more' };
      this.close();
      throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream');
    }
    this.close();
    return finished(this.#out, r.written, this.#size, this.#exact, input.length - r.availIn);
  }

  close(): void {
    const ctx = this.#ctx;
    if (!ctx) return;
    this.#ctx = undefined;
    openRests--;
    ctx.handle.reset();
    ctx.error = undefined;
    if (idle.length < 4) idle.push(ctx);
  }
}

function inflateOneSync(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
  let result: InflateInfo;
  try {
    result = inflateSync(input, {
      info: true,
      maxOutputLength: Math.max(1, expectedSize),
    } as never) as unknown as InflateInfo;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'Z_BUF_ERROR') {
      if (final) throw new PackError('PACK_TRUNCATED', 'pack ends inside a zlib stream', { cause: error });
      return { kind: 'need-more' };
    }
    if (code === 'ERR_BUFFER_TOO_LARGE') {
      throw new PackError('PACK_SIZE_MISMATCH', `inflated data exceeds declared ${expectedSize}`, { cause: error });
    }
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${(error as Error).message}`, { cause: error });
  }
  const b = result.buffer;
  if (b.length !== expectedSize) {
    throw new PackError('PACK_SIZE_MISMATCH', `inflated ${b.length} bytes, header declared ${expectedSize}`);
  }
  return {
    kind: 'done',
    data: new Uint8Array(b.buffer, b.byteOffset, b.byteLength),
    consumed: result.engine.bytesWritten,
  };
}

const deflaters = new Map<number, { handle: NativeHandle; state: Uint32Array; error?: { message: string } } | null>();

/** A reused native deflate context per level (same reasoning as inflate); `deflateSync` as fallback. */
function nativeDeflater(level: number) {
  const known = deflaters.get(level);
  if (known !== undefined) return known;
  let ctx: { handle: NativeHandle; state: Uint32Array; error?: { message: string } } | null = null;
  try {
    const engine = new Deflate({ level }) as unknown as { _handle?: NativeHandle; _writeState?: Uint32Array };
    const handle = engine._handle;
    const state = engine._writeState;
    if (handle && typeof handle.writeSync === 'function' && typeof handle.reset === 'function' && state) {
      const c: { handle: NativeHandle; state: Uint32Array; error?: { message: string } } = { handle, state };
      handle.onerror = (message: string) => {
        c.error = { message };
      };
      ctx = c;
      // self-test: our output must inflate back
      const probe = new TextEncoder().encode('gitport deflate self-test');
      const out = deflateWith(c, probe);
      if (!out || inflateSync(out).toString() !== 'gitport deflate self-test') ctx = null;
    }
  } catch {
    ctx = null;
  }
  deflaters.set(level, ctx);
  return ctx;
}

function deflateWith(
  ctx: { handle: NativeHandle; state: Uint32Array; error?: { message: string } },
  data: Uint8Array,
): Uint8Array | undefined {
  const n = data.length;
  // zlib's deflateBound for the default memLevel/windowBits, plus the zlib wrapper
  const bound = n + (n >>> 12) + (n >>> 14) + (n >>> 25) + 13 + 6 + 64;
  const out = new Uint8Array(bound);
  ctx.error = undefined;
  ctx.handle.writeSync(constants.Z_FINISH, data, 0, n, out, 0, bound);
  const availOut = ctx.state[0]!;
  const availIn = ctx.state[1]!;
  ctx.handle.reset();
  if (ctx.error || availIn !== 0 || availOut === 0) return undefined;
  return out.subarray(0, bound - availOut);
}

/** `deflate` for the entries of a pack being written (the web path deflates them through CompressionStream). */
export function deflateEntry(data: Uint8Array, level = 6): Uint8Array {
  return deflate(data, level);
}

/** `deflate` for callers that can wait (the web path deflates these through CompressionStream). */
export async function deflateAsync(data: Uint8Array, level = 6): Promise<Uint8Array> {
  return deflate(data, level);
}

export function deflate(data: Uint8Array, level = 6): Uint8Array {
  const ctx = nativeDeflater(level);
  const out = ctx ? deflateWith(ctx, data) : undefined;
  if (out) return out;
  const b = deflateSync(data, { level });
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

export function inflateAll(input: Uint8Array, maxSize: number): Uint8Array {
  try {
    const b = inflateSync(input, { maxOutputLength: Math.max(1, maxSize) });
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') {
      throw new PackError('PACK_LIMIT_OBJECT_SIZE', `inflated data exceeds ${maxSize} bytes`, { cause: error });
    }
    throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${(error as Error).message}`, { cause: error });
  }
}

export function crc32(data: Uint8Array, crc = 0): number {
  return nodeCrc32(data, crc);
}

/** Which inflate path is in use (reported by tests and benchmarks). */
export function zlibImplementation(): string {
  return nativeInflater() ? 'node:zlib (reused native context)' : 'node:zlib (inflateSync)';
}
