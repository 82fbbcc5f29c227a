/**
 * A streaming zlib inflater for entries too large to inflate in one call (big blobs): output is
 * handed to `onData` chunk by chunk, so memory stays bounded by the chunk size, not the object.
 */
/// <reference path="./pako-lowlevel.d.ts" />
import pakoInflateApi from 'pako/lib/inflate.js';
import { PackError } from './errors.js';
import type { InflateState } from './zlib.js';

const { Inflate } = pakoInflateApi;

export class StreamInflater {
  readonly #inflator: InstanceType<typeof Inflate>;
  #done = false;

  constructor(onData: (chunk: Uint8Array) => void, chunkSize = 256 * 1024) {
    this.#inflator = new Inflate({ chunkSize });
    this.#inflator.onData = (chunk: Uint8Array) => onData(chunk);
  }

  get done(): boolean {
    return this.#done;
  }

  /** Feeds input; returns the number of input bytes used (less than `input.length` once done). */
  push(input: Uint8Array): number {
    if (this.#done) return 0;
    const inflator = this.#inflator;
    inflator.push(input, false);
    if (inflator.err) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${inflator.msg || inflator.err}`);
    if ((inflator as unknown as InflateState).ended) {
      this.#done = true;
      return input.length - (inflator as unknown as InflateState).strm.avail_in;
    }
    return input.length;
  }
}
