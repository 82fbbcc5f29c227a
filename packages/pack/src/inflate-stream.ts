/**
 * A streaming zlib inflater for entries too large to inflate in one call (big blobs): output is
 * handed to `onData` chunk by chunk, so memory stays bounded by the chunk size, not the object.
 * It runs on pako's low-level inflate, the modules `zlib.ts` uses, so a bundle carries them once.
 */
/// <reference path="./pako-lowlevel.d.ts" />
import pakoInflate from 'pako/lib/zlib/inflate.js';
import ZStream from 'pako/lib/zlib/zstream.js';
import { PackError } from './errors.js';

export class StreamInflater {
  readonly #strm = new ZStream();
  readonly #onData: (chunk: Uint8Array) => void;
  readonly #chunkSize: number;
  #out: Uint8Array;
  #done = false;

  constructor(onData: (chunk: Uint8Array) => void, chunkSize = 256 * 1024) {
    if (pakoInflate.inflateInit(this.#strm) !== 0)
      throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: cannot set up inflate');
    this.#onData = onData;
    this.#chunkSize = chunkSize;
    this.#out = new Uint8Array(chunkSize);
    this.#strm.next_out = 0;
  }

  get done(): boolean {
    return this.#done;
  }

  /**
   * Feeds input; returns the number of input bytes used (less than `input.length` once done).
   * Each chunk handed to `onData` is new memory: a full chunk is its buffer's whole length.
   */
  push(input: Uint8Array): number {
    if (this.#done) return 0;
    const strm = this.#strm;
    strm.input = input;
    strm.next_in = 0;
    strm.avail_in = input.length;
    try {
      for (;;) {
        strm.output = this.#out;
        strm.avail_out = this.#out.length - strm.next_out;
        const ret = pakoInflate.inflate(strm, 0);
        if (ret !== 0 && ret !== 1 && ret !== -5) throw new PackError('PACK_CORRUPT_ZLIB', `zlib: ${strm.msg || ret}`);
        if (ret === 1) this.#done = true;
        if (strm.avail_out === 0 || (this.#done && strm.next_out > 0)) {
          const full = strm.avail_out === 0;
          const chunk = full ? this.#out : this.#out.slice(0, strm.next_out);
          this.#out = new Uint8Array(this.#chunkSize);
          strm.next_out = 0;
          this.#onData(chunk);
          if (full && !this.#done) continue;
        }
        if (this.#done) return input.length - strm.avail_in;
        if (strm.avail_in === 0) return input.length;
        if (ret === -5) throw new PackError('PACK_CORRUPT_ZLIB', 'zlib: stream stopped early');
      }
    } finally {
      strm.input = null;
      strm.output = null;
    }
  }
}
