/**
 * Request ids: 53 random bits (the most a number holds exactly), from a pooled buffer of
 * crypto.getRandomValues (a global in browsers and Node >= 19). A number clones and hashes for less
 * than a string of the same randomness, on both sides of every call; an id nobody can guess is what
 * lets a response settle only the request it answers.
 */

/** A request id: ours are numbers (see randomId); a peer's may be a short string too. */
export type RequestId = number | string;

const pool = new Uint32Array(2 * 1024);
let poolAt = pool.length;

export function randomId(): number {
  if (poolAt === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const high = pool[poolAt]! & 0x1fffff;
  const low = pool[poolAt + 1]!;
  poolAt += 2;
  return high * 0x1_0000_0000 + low;
}

/** A request id as received: the requester's opaque token, echoed back as it came. */
export function validId(id: unknown): id is RequestId {
  return typeof id === 'number' ? Number.isSafeInteger(id) : typeof id === 'string' && id.length <= 64;
}
