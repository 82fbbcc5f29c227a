import { describe, expect, it } from 'vitest';
import { isRefListing, lsRefsKey, MAX_CACHED_LS_REFS_REQUEST } from './ref-listing.js';

const encoder = new TextEncoder();
const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
const bytes = (s: string) => encoder.encode(s);
const lsRefs = (args: string[], command = 'command=ls-refs\n') =>
  `${pkt(command)}${pkt('agent=git/2.39.5\n')}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;

describe('lsRefsKey', () => {
  it('keys an ls-refs request by its exact bytes', () => {
    const request = lsRefs(['symrefs', 'ref-prefix refs/heads/']);
    const key = lsRefsKey(bytes(request));
    expect(key).toBeDefined();
    expect(lsRefsKey(bytes(request))).toBe(key);
    expect(lsRefsKey(bytes(lsRefs(['symrefs', 'ref-prefix refs/tags/'])))).not.toBe(key);
    expect(lsRefsKey(bytes(lsRefs([], 'command=ls-refs')))).toBeDefined();
    // a view into a larger buffer is keyed by its own bytes only
    const padded = bytes(`xx${request}yy`);
    expect(lsRefsKey(padded.subarray(2, padded.length - 2))).toBe(key);
  });

  it('leaves out every other request, and one too large', () => {
    expect(lsRefsKey(bytes(lsRefs(['want 0123'], 'command=fetch\n')))).toBeUndefined();
    expect(lsRefsKey(bytes(lsRefs([], 'command=ls-refsx\n')))).toBeUndefined();
    expect(lsRefsKey(bytes(lsRefs([], 'command=ls-refs\r')))).toBeUndefined();
    expect(lsRefsKey(bytes('0000'))).toBeUndefined();
    expect(lsRefsKey(bytes('00'))).toBeUndefined();
    expect(lsRefsKey(bytes('zz14command=ls-refs\n0000'))).toBeUndefined();
    expect(lsRefsKey(bytes('0014command=ls-r'))).toBeUndefined();
    const many = Array.from({ length: 400 }, (_, i) => `ref-prefix refs/heads/topic-${i}/`);
    expect(bytes(lsRefs(many)).byteLength).toBeGreaterThan(MAX_CACHED_LS_REFS_REQUEST);
    expect(lsRefsKey(bytes(lsRefs(many)))).toBeUndefined();
  });
});

describe('isRefListing', () => {
  const oid = '1'.repeat(40);
  it('accepts data lines then one flush, at the very end', () => {
    expect(isRefListing(bytes('0000'))).toBe(true);
    const listing = `${pkt(`${oid} HEAD symref-target:refs/heads/main\n`)}${pkt(`${oid} refs/heads/main\n`)}0000`;
    expect(isRefListing(bytes(listing))).toBe(true);
  });

  it('refuses an ERR packet, a truncated or unterminated listing, and special packets', () => {
    expect(
      isRefListing(bytes(`${pkt(`${oid} refs/heads/main\n`)}${pkt('ERR ls-refs: unexpected argument')}0000`)),
    ).toBe(false);
    expect(isRefListing(bytes(pkt(`${oid} refs/heads/main\n`)))).toBe(false);
    expect(isRefListing(bytes(`${pkt(`${oid} refs/heads/main\n`)}00`))).toBe(false);
    expect(isRefListing(bytes(`${pkt(`${oid} refs/heads/main\n`).slice(0, 20)}`))).toBe(false);
    expect(isRefListing(bytes('00000000'))).toBe(false);
    expect(isRefListing(bytes('00010000'))).toBe(false);
    expect(isRefListing(bytes('0004'))).toBe(false);
    expect(isRefListing(bytes('00g50000'))).toBe(false);
    expect(isRefListing(new Uint8Array(0))).toBe(false);
  });
});
