/**
 * zlib through node:zlib: the Node fast path selected by the `#zlib` import condition.
 * `inflateSync(..., { info: true })` stops at the end of the zlib stream and reports the input
 * bytes it used, so one call inflates one pack entry followed by anything.
 */
import { deflateSync, inflateSync, crc32 as nodeCrc32 } from 'node:zlib';
import { PackError } from './errors.js';

export type InflateOutcome = { kind: 'done'; data: Uint8Array; consumed: number } | { kind: 'need-more' };

interface InflateInfo {
  buffer: Buffer;
  engine: { bytesWritten: number };
}

export function inflateOne(input: Uint8Array, expectedSize: number, final: boolean): InflateOutcome {
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

export function deflate(data: Uint8Array, level = 6): Uint8Array {
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

export const zlibImplementation = 'node:zlib';
