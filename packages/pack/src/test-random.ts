/**
 * Seeded generators shared by the package's tests: small, so that a failure prints the seed that
 * reproduces it.
 */

/** xorshift32: unsigned 32-bit integers from `seed`. */
export function randomUint32(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Numbers in [0, 1) from `seed` (xorshift32). */
export function random(seed: number): () => number {
  const next = randomUint32(seed);
  return () => next() / 2 ** 32;
}
