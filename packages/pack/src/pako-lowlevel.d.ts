/** pako's low-level inflate (zlib's inflate.c ported), which its typings do not cover. */
declare module 'pako/lib/zlib/zstream.js' {
  export default class ZStream {
    input: Uint8Array | null;
    next_in: number;
    avail_in: number;
    output: Uint8Array | null;
    next_out: number;
    avail_out: number;
    msg: string;
  }
}

declare module 'pako/lib/zlib/inflate.js' {
  import type ZStream from 'pako/lib/zlib/zstream.js';

  const inflate: {
    inflateInit(strm: ZStream): number;
    inflateReset(strm: ZStream): number;
    inflate(strm: ZStream, flush: number): number;
  };
  export default inflate;
}
