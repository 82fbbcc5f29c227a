/**
 * The pack entry-header codec: vectors from real git (every entry of packs made by
 * `git pack-objects`, with OFS_DELTA and with REF_DELTA bases, against `git verify-pack -v`),
 * seeded round-trips, every truncation, and random bytes.
 *
 * Seeded: the seed is printed, GITPORT_FUZZ_SEED replays it; GITPORT_FUZZ_RUNS=N runs N times longer.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEntryHeader, type EntryHeader, EntryType, encodeEntryHeader, encodeOfsOffset } from './entry-header.js';
import { isPackError } from './errors.js';
import { hexToBytes } from './object.js';

const SEED = process.env.GITPORT_FUZZ_SEED ? Number(process.env.GITPORT_FUZZ_SEED) : (Math.random() * 2 ** 31) >>> 0;
const SCALE = Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
console.log(`entry-header fuzz: seed ${SEED} (GITPORT_FUZZ_SEED=${SEED} replays it), runs x${SCALE}`);
const runs = (n: number) => ({ seed: SEED, numRuns: n * SCALE });

/** The code a decode of `bytes` fails with, or undefined when it does not throw. */
function failure(bytes: Uint8Array, offset: number): string | undefined {
  try {
    decodeEntryHeader(bytes, 0, offset);
    return undefined;
  } catch (error) {
    if (!isPackError(error)) throw error;
    return error.code;
  }
}

const wholeType = fc.constantFrom(EntryType.COMMIT, EntryType.TREE, EntryType.BLOB, EntryType.TAG);
const size = fc.oneof(fc.nat(300), fc.nat(), fc.maxSafeNat());
/** A header with the pack offset of its entry. */
const header: fc.Arbitrary<{ entry: EntryHeader; offset: number; base?: number | Uint8Array }> = fc.oneof(
  fc.record({ type: wholeType, size, offset: fc.integer({ min: 12, max: 2 ** 40 }) }).map(({ type, size, offset }) => ({
    entry: { type, size, length: 0 },
    offset,
  })),
  fc
    .record({ size, baseOffset: fc.integer({ min: 12, max: 2 ** 40 }), distance: fc.integer({ min: 1, max: 2 ** 40 }) })
    .map(({ size, baseOffset, distance }) => ({
      entry: { type: EntryType.OFS_DELTA, size, length: 0, baseOffset },
      offset: baseOffset + distance,
      base: distance,
    })),
  fc
    .record({
      size,
      id: fc.uint8Array({ minLength: 20, maxLength: 20 }),
      offset: fc.integer({ min: 12, max: 2 ** 40 }),
    })
    .map(({ size, id, offset }) => ({
      entry: { type: EntryType.REF_DELTA, size, length: 0, baseOid: Buffer.from(id).toString('hex') },
      offset,
      base: id,
    })),
);

describe('entry headers against real git', () => {
  let dir: string;
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: 'a',
        GIT_AUTHOR_EMAIL: 'a@example.invalid',
        GIT_COMMITTER_NAME: 'a',
        GIT_COMMITTER_EMAIL: 'a@example.invalid',
      },
    });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gitport-entry-header-'));
    git('init', '-q', '-b', 'main', '.');
    // versions of one file, so that the packs hold deltas; one blob of a few hundred KiB for
    // a size varint of several bytes
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} ${'x'.repeat(i % 37)}\n`);
    for (let v = 0; v < 12; v++) {
      lines[v * 7] = `changed in version ${v}\n`;
      writeFileSync(join(dir, 'file.txt'), lines.join(''));
      if (v === 3) writeFileSync(join(dir, 'large.bin'), 'abcdefghij'.repeat(40_000));
      git('add', '.');
      git('commit', '-q', '-m', `version ${v}`);
    }
    git('tag', '-a', '-m', 'a tag', 'v1');
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, flags, deltaType] of [
    ['OFS_DELTA', ['--delta-base-offset'], EntryType.OFS_DELTA],
    ['REF_DELTA', [], EntryType.REF_DELTA],
  ] as const) {
    it(`decodes every entry of a pack with ${name} bases as git verify-pack reads it`, () => {
      const out = join(dir, `out-${name}`);
      mkdirSync(out);
      const objects = git('rev-list', '--objects', '--all');
      execFileSync('git', ['pack-objects', '-q', ...flags, `${out}/p`], { cwd: dir, input: objects });
      const packName = readdirSync(out).find((n) => n.endsWith('.pack'))!;
      const pack = new Uint8Array(readFileSync(join(out, packName)));
      const listing = git('verify-pack', '-v', join(out, packName.replace(/\.pack$/, '.idx')));
      // "<oid> <type> <size> <size in pack> <offset> [<depth> <base oid>]"
      const rows = listing
        .split('\n')
        .map((line) => line.split(/\s+/))
        .filter((f) => /^[0-9a-f]{40}$/.test(f[0]!) && f.length >= 5);
      const offsets = new Map(rows.map((f) => [f[0]!, Number(f[4])]));
      let deltas = 0;
      for (const [oid, type, size, , at, , base] of rows) {
        const offset = Number(at);
        const decoded = decodeEntryHeader(pack, offset, offset);
        expect(decoded, oid).toBeDefined();
        expect(decoded!.size).toBe(Number(size));
        if (base === undefined) {
          expect(decoded!.type).toBe(EntryType[type!.toUpperCase() as 'COMMIT' | 'TREE' | 'BLOB' | 'TAG']);
          continue;
        }
        deltas++;
        expect(decoded!.type).toBe(deltaType);
        if (decoded!.type === EntryType.OFS_DELTA) expect(decoded!.baseOffset).toBe(offsets.get(base));
        if (decoded!.type === EntryType.REF_DELTA) expect(decoded!.baseOid).toBe(base);
        // the encoder writes the same bytes git wrote
        const rebuilt =
          decoded!.type === EntryType.OFS_DELTA
            ? encodeEntryHeader(decoded!.type, decoded!.size, offset - decoded!.baseOffset)
            : encodeEntryHeader(EntryType.REF_DELTA, decoded!.size, hexToBytes(base));
        expect(rebuilt).toEqual(pack.subarray(offset, offset + decoded!.length));
      }
      expect(deltas).toBeGreaterThan(5);
      expect(rows.some((f) => Number(f[2]) > 2 ** 18)).toBe(true);
    });
  }
});

describe('entry header codec', () => {
  it('round-trips any header, wherever it lies in a buffer', () => {
    fc.assert(
      fc.property(header, fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (h, before, after) => {
        const bytes = encodeEntryHeader(h.entry.type, h.entry.size, h.base);
        const buffer = new Uint8Array([...before, ...bytes, ...after]);
        const decoded = decodeEntryHeader(buffer, before.length, h.offset);
        expect(decoded).toEqual({ ...h.entry, length: bytes.length });
        // exactly its own bytes are needed
        expect(decodeEntryHeader(buffer, before.length, h.offset, before.length + bytes.length)).toEqual(decoded);
      }),
      runs(500),
    );
  });

  it('asks for more bytes at every truncation of a valid header, never fails', () => {
    fc.assert(
      fc.property(header, (h) => {
        const bytes = encodeEntryHeader(h.entry.type, h.entry.size, h.base);
        for (let n = 0; n < bytes.length; n++) expect(decodeEntryHeader(bytes, 0, h.offset, n)).toBeUndefined();
      }),
      runs(300),
    );
  });

  it('decodes random bytes to a header within them, asks for more, or fails with a code', () => {
    const codes = new Set(['PACK_BAD_TYPE', 'PACK_BAD_HEADER', 'PACK_BAD_BASE_OFFSET']);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.integer({ min: 12, max: 2 ** 48 }), (bytes, offset) => {
        const code = failure(bytes, offset);
        if (code !== undefined) {
          expect(codes).toContain(code);
          return;
        }
        const decoded = decodeEntryHeader(bytes, 0, offset);
        if (!decoded) return;
        expect(decoded.length).toBeLessThanOrEqual(bytes.length);
        expect(Number.isSafeInteger(decoded.size)).toBe(true);
        if (decoded.type === EntryType.OFS_DELTA) {
          expect(decoded.baseOffset).toBeGreaterThanOrEqual(12);
          expect(decoded.baseOffset).toBeLessThan(offset);
        }
      }),
      runs(2000),
    );
  });

  it('refuses types 0 and 5 (PACK_BAD_TYPE)', () => {
    expect(failure(Uint8Array.of(0x05), 12)).toBe('PACK_BAD_TYPE');
    expect(failure(Uint8Array.of(0x51), 12)).toBe('PACK_BAD_TYPE');
  });

  it('refuses a size varint past 2^53 (PACK_BAD_HEADER), however many bytes follow', () => {
    const tooLong = new Uint8Array(12).fill(0xff);
    tooLong[0] = 0xbf;
    expect(failure(tooLong, 12)).toBe('PACK_BAD_HEADER');
    // the largest accepted size still decodes
    const largest = encodeEntryHeader(EntryType.BLOB, Number.MAX_SAFE_INTEGER);
    expect(decodeEntryHeader(largest, 0, 12)?.size).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses a delta base before the first entry, or not before its delta (PACK_BAD_BASE_OFFSET)', () => {
    const header = (distance: number) => encodeEntryHeader(EntryType.OFS_DELTA, 10, distance);
    expect(decodeEntryHeader(header(88), 0, 100)).toMatchObject({ baseOffset: 12 });
    expect(failure(header(89), 100)).toBe('PACK_BAD_BASE_OFFSET');
    expect(failure(header(2 ** 45), 100)).toBe('PACK_BAD_BASE_OFFSET');
    // a distance of 0 cannot be encoded, but can be written
    expect(failure(Uint8Array.of(0x6a, 0x00), 100)).toBe('PACK_BAD_BASE_OFFSET');
    // an endless varint is refused once past the start of the pack
    expect(failure(Uint8Array.of(0x6a, ...new Array(20).fill(0xff), 0), 100)).toBe('PACK_BAD_BASE_OFFSET');
  });

  it('refuses to encode what no header can say (PACK_BAD_INPUT)', () => {
    const bad = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return isPackError(error) ? error.code : 'not a PackError';
      }
      return 'no error';
    };
    expect(bad(() => encodeEntryHeader(EntryType.BLOB, -1))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeEntryHeader(EntryType.BLOB, 1.5))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeEntryHeader(EntryType.BLOB, 2 ** 60))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeEntryHeader(EntryType.BLOB, 1, 5))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeEntryHeader(EntryType.OFS_DELTA, 1, new Uint8Array(20)))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeEntryHeader(EntryType.REF_DELTA, 1, new Uint8Array(19)))).toBe('PACK_BAD_INPUT');
    expect(bad(() => encodeOfsOffset(0))).toBe('PACK_BAD_INPUT');
  });

  it('encodes base distances at every varint length boundary', () => {
    // each continuation byte adds one: the first distance of n bytes is 2^7 + 2^14 + ... + 2^(7(n-1))
    let first = 0;
    for (let n = 1; n <= 7; n++) {
      expect(encodeOfsOffset(first === 0 ? 1 : first).length).toBe(n);
      if (first > 1) expect(encodeOfsOffset(first - 1).length).toBe(n - 1);
      first += 2 ** (7 * n);
    }
  });
});
