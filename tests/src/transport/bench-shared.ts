/** What both sides of the transport benchmark share: reading and filling every byte the same way. */

/** Reads every byte of a chunk (four at a time where aligned) into a checksum. */
export function readEveryByte(chunk: Uint8Array): number {
  let sum = 0;
  let i = 0;
  if ((chunk.byteOffset & 3) === 0) {
    const words = new Int32Array(chunk.buffer, chunk.byteOffset, chunk.byteLength >>> 2);
    for (let w = 0; w < words.length; w++) sum = (sum + words[w]!) | 0;
    i = words.length << 2;
  }
  for (; i < chunk.byteLength; i++) sum = (sum + chunk[i]!) | 0;
  return sum;
}

/** The checksum `readEveryByte` gives over `count` chunks of `size` bytes filled with `fillByte(i)`. */
export function fillByte(index: number): number {
  return (index * 7 + 1) & 255;
}
