import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha1Implementation } from '#sha1';
import { zlibImplementation } from '#zlib';
import { parseCommit, serializeCommit } from './commit.js';
import { applyDelta, createDelta, DeltaIndex, DeltaWindow } from './delta.js';
import { indexColumns, indexIds, PackIndex, readIdx, writeIdx } from './idx.js';
import { StreamInflater } from './inflate-stream.js';
import { bytesToHex, hashObject } from './object.js';
import { resolveDelta } from './pack-import.js';
import * as webSha1 from './sha1.js';
import * as nodeSha1 from './sha1.node.js';
import { parseTag, serializeTag } from './tag.js';
import { parseTree, serializeTree } from './tree.js';
import * as webZlib from './zlib.js';
import * as nodeZlib from './zlib.node.js';

const enc = new TextEncoder();

describe('object ids', () => {
  it('hashes like git (empty blob, hello)', async () => {
    expect(await hashObject('blob', new Uint8Array(0))).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
    expect(await hashObject('blob', enc.encode('hello\n'))).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
    expect(await hashObject('tree', new Uint8Array(0))).toBe('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
  });

  it('the JS SHA-1 agrees with node:crypto on random inputs split anywhere', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(3000), (data, cut) => {
        const at = Math.min(cut, data.length);
        const web = webSha1.createSha1().update(data.subarray(0, at)).update(data.subarray(at)).digest();
        expect(bytesToHex(web)).toBe(bytesToHex(nodeSha1.sha1(data)));
        expect(webSha1.sha1Hex(data.subarray(0, at), data.subarray(at))).toBe(nodeSha1.sha1Hex(data));
        expect(nodeSha1.sha1Hex(data.subarray(0, at), data.subarray(at))).toBe(bytesToHex(web));
      }),
    );
  });
});

describe('zlib implementations', () => {
  it('the package takes the node:zlib and node:crypto fast paths under the node condition (Node, Bun)', () => {
    expect(zlibImplementation()).toBe('node:zlib (reused native context)');
    expect(sha1Implementation).toBe('node:crypto');
  });

  it('Node uses the reused native inflate context (the fast path the benchmarks measure)', () => {
    expect(nodeZlib.zlibImplementation()).toBe('node:zlib (reused native context)');
  });

  it('the web path inflates with one reused context and reports the input each stream used (the fast path the benchmarks measure)', () => {
    expect(webZlib.zlibImplementation()).toBe("gitport's inflate (reports the input each stream used), fflate deflate");
  });

  it('the web inflate and node:zlib inflate one stream followed by other bytes, and agree on consumed length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5000 }), fc.uint8Array({ maxLength: 50 }), (data, tail) => {
        for (const z of [webZlib, nodeZlib]) {
          const packed = z.deflate(data);
          const input = new Uint8Array(packed.length + tail.length);
          input.set(packed);
          input.set(tail, packed.length);
          const r = (z === webZlib ? nodeZlib : webZlib).inflateOne(input, data.length, true);
          expect(r.kind).toBe('done');
          if (r.kind === 'done') {
            expect(r.consumed).toBe(packed.length);
            expect(bytesToHex(r.data)).toBe(bytesToHex(data));
          }
        }
      }),
      { numRuns: 50 },
    );
  });

  it('a stream cut anywhere goes on in pieces to the same data (web inflate and node:zlib), and ends typed', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 4000 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.integer({ min: 0, max: 1 }),
        (data, cutSeeds, compressible) => {
          const body = compressible ? data.map((b) => b & 3) : data;
          for (const z of [webZlib, nodeZlib]) {
            const packed = z.deflate(body);
            const input = new Uint8Array(packed.length + 5);
            input.set(packed);
            input.set([1, 2, 3, 4, 5], packed.length);
            const cuts = [...new Set(cutSeeds.map((c) => c % (packed.length + 1)))].sort((a, b) => a - b);
            const bounds = [0, ...cuts, input.length];
            let r = z.inflateOne(input.subarray(0, bounds[1]), body.length, false, true);
            let used = r.kind === 'done' ? r.consumed : bounds[1]!;
            const rest = r.kind === 'need-more' ? r.rest : undefined;
            if (r.kind === 'need-more') expect(rest).toBeDefined();
            for (let k = 1; r.kind === 'need-more' && k < bounds.length - 1; k++) {
              const piece = input.subarray(bounds[k], bounds[k + 1]);
              const next = rest!.push(piece, false);
              if (next.kind === 'done') used = bounds[k]! + next.consumed;
              else used = bounds[k + 1]!;
              r = next;
            }
            expect(r.kind).toBe('done');
            if (r.kind === 'done') expect(bytesToHex(r.data)).toBe(bytesToHex(body));
            expect(used).toBe(packed.length);
            // a stream that ends early: truncated once the input is final
            if (packed.length > 2) {
              const cut = z.inflateOne(packed.subarray(0, packed.length - 2), body.length, false, true);
              expect(cut.kind).toBe('need-more');
              if (cut.kind === 'need-more') {
                expect(() => cut.rest!.push(new Uint8Array(0), true)).toThrow(
                  expect.objectContaining({ code: 'PACK_TRUNCATED' }),
                );
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reports need-more on a cut stream and a typed error at the end of input', () => {
    const data = enc.encode('x'.repeat(1000) + 'y'.repeat(1000));
    for (const z of [webZlib, nodeZlib]) {
      const packed = z.deflate(data);
      const cut = packed.subarray(0, packed.length - 3);
      expect(z.inflateOne(cut, data.length, false).kind).toBe('need-more');
      expect(() => z.inflateOne(cut, data.length, true)).toThrow(expect.objectContaining({ code: 'PACK_TRUNCATED' }));
      expect(() => z.inflateOne(packed, data.length - 1, true)).toThrow(
        expect.objectContaining({ code: 'PACK_SIZE_MISMATCH' }),
      );
      expect(() => z.inflateOne(enc.encode('not zlib at all'), 10, true)).toThrow(
        expect.objectContaining({ code: 'PACK_CORRUPT_ZLIB' }),
      );
    }
  });

  it('the web inflate (one reused context) and node:zlib agree on every cut, on wrong declared sizes, and after errors', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3000 }),
        fc.nat(),
        fc.integer({ min: -3, max: 3 }),
        (data, cutSeed, skew) => {
          const packed = nodeZlib.deflate(data);
          const cut = cutSeed % (packed.length + 1);
          const outcome = (z: Pick<typeof webZlib, 'inflateOne'>, input: Uint8Array, size: number, final: boolean) => {
            try {
              const r = z.inflateOne(input, size, final);
              return r.kind === 'done' ? `done ${r.consumed} ${bytesToHex(r.data)}` : r.kind;
            } catch (error) {
              return (error as { code?: string }).code;
            }
          };
          // a corrupt stream first: the reused context must not carry its state over
          outcome(webZlib, enc.encode('garbage that is not zlib'), 10, true);
          for (const final of [false, true]) {
            const size = Math.max(0, data.length + skew);
            expect(outcome(webZlib, packed.subarray(0, cut), size, final)).toBe(
              outcome(nodeZlib, packed.subarray(0, cut), size, final),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('entries over 1 MiB: the web path grows its output, stops at the stream end, and fails typed', () => {
    const data = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => ((i * 7919) % 251) ^ (i >> 12));
    const packed = nodeZlib.deflate(data);
    const input = new Uint8Array(packed.length + 4);
    input.set(packed);
    input.set([9, 9, 9, 9], packed.length);
    const r = webZlib.inflateOne(input, data.length, true);
    expect(r.kind).toBe('done');
    if (r.kind === 'done') {
      expect(r.consumed).toBe(packed.length);
      expect(nodeZlib.crc32(r.data)).toBe(nodeZlib.crc32(data));
    }
    const cut = packed.subarray(0, packed.length >> 1);
    expect(webZlib.inflateOne(cut, data.length, false).kind).toBe('need-more');
    expect(() => webZlib.inflateOne(cut, data.length, true)).toThrow(
      expect.objectContaining({ code: 'PACK_TRUNCATED' }),
    );
    for (const size of [data.length - 1, data.length + 1]) {
      expect(() => webZlib.inflateOne(packed, size, true)).toThrow(
        expect.objectContaining({ code: 'PACK_SIZE_MISMATCH' }),
      );
    }
    expect(() => webZlib.inflateAll(packed, data.length - 1)).toThrow(
      expect.objectContaining({ code: 'PACK_LIMIT_OBJECT_SIZE' }),
    );
    expect(nodeZlib.crc32(webZlib.inflateAll(packed, data.length))).toBe(nodeZlib.crc32(data));
  });

  it('the streaming inflater hands out the data in chunks, fed in pieces, and says how much input it used', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 6000 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 0, max: 9 }),
        (data, cutSeeds, chunkSize, level) => {
          const packed = webZlib.deflate(data, level);
          const input = new Uint8Array(packed.length + 3);
          input.set(packed);
          input.set([1, 2, 3], packed.length);
          const chunks: Uint8Array[] = [];
          const inflater = new StreamInflater((chunk) => chunks.push(chunk), chunkSize);
          const cuts = [...new Set(cutSeeds.map((c) => c % (input.length + 1)))].sort((a, b) => a - b);
          const bounds = [0, ...cuts, input.length];
          let used = 0;
          for (let i = 1; i < bounds.length && !inflater.done; i++) {
            const piece = input.subarray(Math.max(used, bounds[i - 1]!), Math.max(used, bounds[i]!));
            used += inflater.push(piece);
          }
          expect(inflater.done).toBe(true);
          expect(used).toBe(packed.length);
          for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBe(chunkSize);
          const joined = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
          let o = 0;
          for (const c of chunks) {
            joined.set(c, o);
            o += c.length;
          }
          expect(bytesToHex(joined)).toBe(bytesToHex(data));
        },
      ),
      { numRuns: 200 },
    );
    expect(() => new StreamInflater(() => {}).push(enc.encode('not zlib at all'))).toThrow(
      expect.objectContaining({ code: 'PACK_CORRUPT_ZLIB' }),
    );
  });

  it('CRC32 agrees between implementations', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (data) => {
        expect(webZlib.crc32(data)).toBe(nodeZlib.crc32(data));
      }),
    );
    expect(webZlib.crc32(enc.encode('123456789'))).toBe(0xcbf43926);
  });
});

describe('deltas', () => {
  it('round-trip: applyDelta(base, createDelta(base, target)) = target (seeded edits)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 4000 }),
        fc.array(fc.tuple(fc.nat(4000), fc.nat(200), fc.uint8Array({ maxLength: 100 })), { maxLength: 8 }),
        (base, edits) => {
          let target = base;
          for (const [at, del, ins] of edits) {
            const p = Math.min(at, target.length);
            const next = new Uint8Array(target.length - Math.min(del, target.length - p) + ins.length);
            next.set(target.subarray(0, p));
            next.set(ins, p);
            next.set(target.subarray(p + Math.min(del, target.length - p)), p + ins.length);
            target = next;
          }
          const delta = createDelta(base, target)!;
          expect(bytesToHex(applyDelta(base, delta))).toBe(bytesToHex(target));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("import's resolveDelta agrees with applyDelta, results and error codes, on valid and damaged deltas", () => {
    const outcome = (fn: () => Uint8Array) => {
      try {
        return bytesToHex(fn());
      } catch (error) {
        return `error ${(error as { code?: string }).code}`;
      }
    };
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 3000 }),
        fc.uint8Array({ minLength: 0, maxLength: 3000 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(40),
        fc.integer({ min: 0, max: 4000 }),
        (base, target, damage, cut, maxResult) => {
          const delta = createDelta(base, target)!.slice();
          for (const [at, value] of damage) if (delta.length > 0) delta[at % delta.length] = value;
          const input = cut > 0 && cut < delta.length ? delta.subarray(0, delta.length - cut) : delta;
          expect(outcome(() => resolveDelta(base, input, maxResult))).toBe(
            outcome(() => applyDelta(base, input, maxResult)),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('bases and targets at any byte offset of their buffers give the delta their copies give', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 3000 }),
        fc.array(fc.tuple(fc.nat(3000), fc.uint8Array({ minLength: 1, maxLength: 40 })), { maxLength: 6 }),
        fc.nat(7),
        fc.nat(7),
        (base, edits, baseAt, targetAt) => {
          const target = base.slice();
          for (const [at, bytes] of edits)
            target.set(bytes.subarray(0, Math.max(0, target.length - at)), Math.min(at, target.length));
          const view = (bytes: Uint8Array, at: number) => {
            const buffer = new Uint8Array(bytes.length + at + 5).fill(0xa5);
            buffer.set(bytes, at);
            return buffer.subarray(at, at + bytes.length);
          };
          const delta = createDelta(view(base, baseAt), view(target, targetAt))!;
          expect(bytesToHex(delta)).toBe(bytesToHex(createDelta(base.slice(), target.slice())!));
          expect(bytesToHex(applyDelta(base, delta))).toBe(bytesToHex(target));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a delta window over objects of varied sizes (tables and target words reused) gives deltas that apply', () => {
    const rand = (seed: number, n: number) => {
      const out = new Uint8Array(n);
      let s = seed;
      for (let i = 0; i < n; i++) {
        s = (Math.imul(s, 1103515245) + 12345) >>> 0;
        out[i] = 97 + ((s >>> 24) % 8);
      }
      return out;
    };
    interface Obj {
      type: string;
      size: number;
      depth: number;
      data: Uint8Array;
      index?: DeltaIndex;
    }
    const window = new DeltaWindow<Obj>(4, 10);
    let prev = rand(1, 200_000);
    let found = 0;
    for (let i = 0; i < 60; i++) {
      // large objects, then small ones, then large again: pooled tables and target buffers change size
      const size = i < 20 ? 200_000 - i * 1000 : i < 40 ? 300 + i * 7 : 60_000 + i;
      const data = new Uint8Array(size);
      data.set(prev.subarray(0, size));
      if (size > prev.length) data.set(rand(i, size - prev.length), prev.length);
      data.set(rand(1000 + i, 12), (i * 37) % (size - 12));
      const o: Obj = { type: 'blob', size, depth: 0, data };
      for (const b of window.unindexed(o, size)) window.provide(b, b.data);
      const r = window.search(o, data);
      if (r) {
        found++;
        expect(bytesToHex(applyDelta(r.base.data, r.delta))).toBe(bytesToHex(data));
      }
      window.push(o, data, r?.base);
      prev = data;
    }
    window.clear();
    expect(found).toBeGreaterThan(40);
  });

  it('finds copies: a small edit to a large buffer gives a small delta', () => {
    const base = new Uint8Array(1 << 20);
    let s = 7;
    for (let i = 0; i < base.length; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      base[i] = s >>> 24;
    }
    const target = base.slice();
    target.set(enc.encode('a small edit'), 500_000);
    const delta = new DeltaIndex(base).createDelta(target)!;
    expect(delta.length).toBeLessThan(200);
    expect(bytesToHex(applyDelta(base, delta))).toBe(bytesToHex(target));
  });

  it('respects maxSize', () => {
    const a = enc.encode('a'.repeat(100));
    const b = enc.encode('b'.repeat(100));
    expect(createDelta(a, b, 20)).toBeUndefined();
  });

  it('rejects malformed deltas with PACK_BAD_DELTA, never a crash', () => {
    const base = enc.encode('0123456789abcdef0123456789abcdef');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (delta) => {
        try {
          applyDelta(base, delta, 1 << 16);
        } catch (error) {
          expect(['PACK_BAD_DELTA', 'PACK_LIMIT_DELTA_SIZE']).toContain((error as { code?: string }).code);
        }
      }),
      { numRuns: 2000 },
    );
    expect(() => applyDelta(base, Uint8Array.of(32, 5, 0))).toThrow(
      expect.objectContaining({ code: 'PACK_BAD_DELTA' }),
    );
  });
});

describe('.idx v2', () => {
  it('round-trips, including 64-bit offsets', () => {
    const entries = [
      { oid: 'ff'.repeat(20), offset: 12, crc32: 1 },
      { oid: '00'.repeat(20), offset: 0x80000000 + 5, crc32: 0xffffffff },
      { oid: `12${'ab'.repeat(19)}`, offset: 2 ** 40 + 3, crc32: 42 },
      { oid: `12${'aa'.repeat(19)}`, offset: 77, crc32: 7 },
    ];
    const idx = writeIdx(entries, '3'.repeat(40));
    const back = readIdx(idx);
    expect(back).toEqual([...entries].sort((a, b) => (a.oid < b.oid ? -1 : 1)));
    const index = new PackIndex(idx);
    expect(index.packHash).toBe('3'.repeat(40));
    expect(index.find(`12${'aa'.repeat(19)}`)).toBe(1);
    expect(index.find('11'.repeat(20))).toBe(-1);
    expect(index.offsetAt(index.find(`12${'ab'.repeat(19)}`))).toBe(2 ** 40 + 3);
  });

  it('sorts ids as git does: shared 32-bit prefixes, repeated ids (each entry kept, in pack order), any order', () => {
    const hex = fc.stringMatching(/^[0-9a-f]{32}$/);
    const prefix = fc.constantFrom('00000000', '0000000f', 'ffffffff', '12345678', '12345679');
    const entry = fc.record({ prefix, rest: hex, offset: fc.integer({ min: 12, max: 2 ** 40 }) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 10 }), (list, dups) => {
        const entries = list.map((e, i) => ({ oid: e.prefix + e.rest, offset: e.offset, crc32: i }));
        // duplicated ids later in the pack, with their own offsets
        for (const d of dups) {
          if (entries.length > 0) entries.push({ ...entries[d % entries.length]!, offset: 1, crc32: 999 });
        }
        // every entry, as many as the pack has (git refuses an index whose count is not the
        // pack's); a repeated id's entries in pack order (a stable sort)
        const expected = [...entries].sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
        const idx = writeIdx(entries, '3'.repeat(40));
        expect(readIdx(idx)).toEqual(expected);
        expect(new PackIndex(idx).count).toBe(entries.length);
        // the same entries as columns give the same bytes; strict refuses a repeated id in both
        const columns = indexColumns(entries);
        expect(columns.count).toBe(entries.length);
        expect([...indexIds(columns)]).toEqual(entries.map((e) => e.oid));
        expect(bytesToHex(writeIdx(columns, '3'.repeat(40)))).toBe(bytesToHex(idx));
        const repeated = new Set(entries.map((e) => e.oid)).size < entries.length;
        for (const form of [entries, columns]) {
          if (repeated) {
            expect(() => writeIdx(form, '3'.repeat(40), { strict: true })).toThrow(
              expect.objectContaining({ code: 'PACK_DUPLICATE_OBJECT' }),
            );
          } else expect(writeIdx(form, '3'.repeat(40), { strict: true })).toEqual(idx);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('rejects damaged indexes with stable codes', () => {
    const idx = writeIdx([{ oid: 'ab'.repeat(20), offset: 12, crc32: 0 }], '0'.repeat(40));
    expect(() => new PackIndex(idx.subarray(0, 100))).toThrow(expect.objectContaining({ code: 'IDX_TRUNCATED' }));
    const bad = idx.slice();
    bad[0] = 0;
    expect(() => new PackIndex(bad)).toThrow(expect.objectContaining({ code: 'IDX_BAD_SIGNATURE' }));
    const flipped = idx.slice();
    flipped[8 + 1024]! ^= 1;
    expect(() => readIdx(flipped)).toThrow(expect.objectContaining({ code: 'IDX_BAD_CHECKSUM' }));
  });
});

describe('commit, tree, tag', () => {
  it('round-trip byte for byte', () => {
    const commit = enc.encode(
      'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n' +
        'parent ce013625030ba8dba906f756967f9e9ca394464a\n' +
        'author A U Thor <a@example.com> 1700000000 +0100\n' +
        'committer C O Mitter <c@example.com> 1700000001 -0000\n' +
        'gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n' +
        '\nmessage\n\nbody\n',
    );
    const parsed = parseCommit(commit);
    expect(parsed.parents).toEqual(['ce013625030ba8dba906f756967f9e9ca394464a']);
    expect(parsed.committer.timezone).toBe('-0000');
    expect(parsed.extraHeaders[0]?.[0]).toBe('gpgsig');
    expect(new TextDecoder().decode(serializeCommit(parsed))).toBe(new TextDecoder().decode(commit));

    const tag = enc.encode(
      'object ce013625030ba8dba906f756967f9e9ca394464a\ntype blob\ntag v1\ntagger T <t@x> 1 +0000\n\nhi\n',
    );
    expect(serializeTag(parseTag(tag))).toEqual(tag);

    const tree = serializeTree([
      { mode: '100644', name: 'b', oid: 'ce013625030ba8dba906f756967f9e9ca394464a', type: 'blob' },
      { mode: '40000', name: 'a', oid: '4b825dc642cb6eb9a060e54bf8d69288fbee4904', type: 'tree' },
      { mode: '100644', name: 'a.txt', oid: 'ce013625030ba8dba906f756967f9e9ca394464a', type: 'blob' },
    ]);
    expect(parseTree(tree).map((e) => e.name)).toEqual(['a.txt', 'a', 'b']);
    expect(serializeTree(parseTree(tree))).toEqual(tree);
  });

  it('typed errors for malformed objects', () => {
    expect(() => parseCommit(enc.encode('nonsense'))).toThrow(expect.objectContaining({ code: 'PARSE_COMMIT' }));
    expect(() => parseTree(enc.encode('100644 name'))).toThrow(expect.objectContaining({ code: 'PARSE_TREE' }));
    expect(() => parseTag(enc.encode('object x\n\n'))).toThrow(expect.objectContaining({ code: 'PARSE_TAG' }));
  });
});
