/**
 * SHA-1 through node:crypto: the Node fast path selected by the `#sha1` import condition.
 * `crypto.hash` (one shot, Node >= 20.12) for whole inputs, `createHash` for streaming.
 */
import { createHash, hash } from 'node:crypto';

export interface Sha1 {
  update(data: Uint8Array): Sha1;
  digest(): Uint8Array;
}

class NodeSha1 implements Sha1 {
  #hash = createHash('sha1');
  update(data: Uint8Array): Sha1 {
    this.#hash.update(data);
    return this;
  }
  digest(): Uint8Array {
    const b = this.#hash.digest();
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
}

export function createSha1(): Sha1 {
  return new NodeSha1();
}

let scratch = new Uint8Array(64 * 1024);

/** The parts joined in a scratch buffer when small enough for a one-shot hash. */
function joined(parts: Uint8Array[]): Uint8Array | undefined {
  let input: Uint8Array | undefined = parts.length === 1 ? parts[0] : undefined;
  if (!input) {
    let total = 0;
    for (const p of parts) total += p.length;
    if (total <= 1 << 20) {
      if (scratch.length < total) scratch = new Uint8Array(Math.max(total, scratch.length * 2));
      let o = 0;
      for (const p of parts) {
        scratch.set(p, o);
        o += p.length;
      }
      input = scratch.subarray(0, total);
    }
  }
  return input;
}

/** SHA-1 as 40 lowercase hex digits (node:crypto encodes natively). */
export function sha1Hex(...parts: Uint8Array[]): string {
  const input = joined(parts);
  if (input) return hash('sha1', input, 'hex');
  const h = createHash('sha1');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

export function sha1(...parts: Uint8Array[]): Uint8Array {
  const input = joined(parts);
  if (input) {
    const b = hash('sha1', input, 'buffer');
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  const h = createHash('sha1');
  for (const p of parts) h.update(p);
  const b = h.digest();
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

export const sha1Implementation = 'node:crypto';
