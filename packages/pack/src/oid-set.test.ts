import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from './object.js';
import { OidSet } from './oid-set.js';

describe('OidSet', () => {
  it('agrees with a Set of hex ids through growth, in place and by hex', () => {
    const set = new OidSet(4);
    const reference = new Set<string>();
    let x = 12345;
    const next = () => {
      x = (x * 1103515245 + 12345) >>> 0;
      return x & 0xff;
    };
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const bytes = new Uint8Array(20);
      // shared prefixes too: the hash is the first four bytes, so collisions must be resolved by the rest
      for (let k = 0; k < 20; k++) bytes[k] = k < 4 && i % 3 === 0 ? 7 : next();
      ids.push(bytesToHex(bytes));
    }
    for (const [i, id] of ids.entries()) {
      const buf = new Uint8Array(25);
      hexToBytes(id, buf, 5);
      const added = i % 2 === 0 ? set.addBytes(buf, 5) : set.add(id);
      expect(added).toBe(!reference.has(id));
      reference.add(id);
      expect(set.addBytes(buf, 5)).toBe(false);
    }
    expect(set.size).toBe(reference.size);
    const copy = set.clone();
    for (const id of ids) {
      expect(set.has(id)).toBe(true);
      expect(copy.hasBytes(hexToBytes(id))).toBe(true);
    }
    const other = `${'0'.repeat(39)}1`;
    expect(set.has(other)).toBe(reference.has(other));
    copy.add(other);
    expect(copy.has(other)).toBe(true);
    expect(set.has(other)).toBe(false);
  });
});
