/**
 * A streaming zlib inflater for entries too large to inflate in one call (big blobs): output is
 * handed to `onData` chunk by chunk, so memory stays bounded by the chunk size, not the object.
 * It runs on the inflate `zlib.ts` uses, so a bundle carries it once.
 */
import { PackError } from './errors.js';
import { InflateError, Inflater } from './inflate.js';

export class StreamInflater {
  readonly #inflater = new Inflater();

  constructor(onData: (chunk: Uint8Array) => void, chunkSize = 256 * 1024) {
    // the last 32 KiB of output stay ahead of each chunk: the window later matches copy from
    this.#inflater.reset(new Uint8Array(32768 + chunkSize), Number.MAX_SAFE_INTEGER, 'window');
    this.#inflater.onData = onData;
  }

  get done(): boolean {
    return this.#inflater.done;
  }

  /**
   * Feeds input; returns the number of input bytes used (less than `input.length` once done).
   * Each chunk handed to `onData` is new memory: a full chunk is its buffer's whole length.
   */
  push(input: Uint8Array): number {
    const inflater = this.#inflater;
    if (inflater.done) return 0;
    try {
      if (!inflater.run(input)) return input.length;
    } catch (error) {
      if (error instanceof InflateError) throw new PackError('PACK_CORRUPT_ZLIB', error.message);
      throw error;
    }
    inflater.release();
    return inflater.consumed;
  }
}
