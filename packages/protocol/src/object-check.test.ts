import type { ObjectType } from '@gitport/pack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { concatBytes } from './connection.js';
import { checkObject, compareEntries, isDotGit } from './object-check.js';
import { fuzzParameters } from './test-fuzz.js';

const enc = (s: string) => new TextEncoder().encode(s);
const OID = 'a'.repeat(40);
const ID_BYTES = new Uint8Array(20).fill(0xaa);
const tree = (...entries: [string, string][]) =>
  concatBytes(entries.flatMap(([mode, name]) => [enc(`${mode} ${name}\0`), ID_BYTES]));
const commit = `tree ${OID}\nparent ${OID}\nauthor A U Thor <a@x> 1700000000 +0100\ncommitter C <c@x> 1700000000 -0500\nencoding UTF-8\n\nmessage\n`;
const tag = `object ${OID}\ntype commit\ntag v1.0\ntagger T <t@x> 1700000000 +0000\n\nmessage\n`;

describe('checkObject', () => {
  it('accepts what git writes, at both levels, and lists the links', () => {
    for (const fsck of [false, true]) {
      expect(checkObject('commit', enc(commit), { fsck })).toEqual({
        ok: true,
        links: [
          { oid: OID, type: 'tree' },
          { oid: OID, type: 'commit' },
        ],
      });
      expect(checkObject('tag', enc(tag), { fsck })).toEqual({ ok: true, links: [{ oid: OID, type: 'commit' }] });
      const t = tree(['100644', 'a.c'], ['40000', 'a'], ['160000', 'sub'], ['120000', 'z']);
      expect(checkObject('tree', t, { fsck })).toMatchObject({
        ok: true,
        links: [
          { type: 'blob', name: 'a.c' },
          { type: 'tree', name: 'a' },
          { type: 'gitlink', name: 'sub' },
          { type: 'blob', name: 'z' },
        ],
      });
      expect(checkObject('tree', new Uint8Array(0), { fsck })).toEqual({ ok: true, links: [] });
    }
    // a tag without tagger (before git 0.99) passes, as in git's fsck
    expect(checkObject('tag', enc(`object ${OID}\ntype blob\ntag old\n\nx\n`), { fsck: true }).ok).toBe(true);
  });

  const cases: [ObjectType, string | Uint8Array, string, boolean][] = [
    // [type, data, message id, already refused without fsck]
    ['commit', `parent ${OID}\n\nx`, 'missingTree', true],
    ['commit', `tree ${'A'.repeat(40)}\n\nx`, 'badTreeSha1', true],
    ['commit', `tree ${OID}\nparent xyz\n\nx`, 'badParentSha1', true],
    ['commit', `tree ${OID}`, 'unterminatedHeader', true],
    ['commit', `tree ${OID}\nauthor a <a@x> 1 +0000`, 'unterminatedHeader', false],
    ['commit', `tree ${OID}\ncommitter c <c@x> 1 +0000\n\nx`, 'missingAuthor', false],
    ['commit', `tree ${OID}\nauthor a <a@x> 1 +0000\n\nx`, 'missingCommitter', false],
    ['commit', `tree ${OID}\nauthor <a@x> 1 +0000\ncommitter c <c@x> 1 +0000\n\n`, 'missingNameBeforeEmail', false],
    ['commit', `tree ${OID}\nauthor a > <a@x> 1 +0000\ncommitter c <c@x> 1 +0000\n\n`, 'badName', false],
    ['commit', `tree ${OID}\nauthor a <a@x>1 +0000\ncommitter c <c@x> 1 +0000\n\n`, 'missingSpaceBeforeDate', false],
    ['commit', `tree ${OID}\nauthor a <a@x> x +0000\ncommitter c <c@x> 1 +0000\n\n`, 'badDate', false],
    [
      'commit',
      `tree ${OID}\nauthor a <a@x> 99999999999999999999 +0000\ncommitter c <c@x> 1 +0000\n\n`,
      'badDateOverflow',
      false,
    ],
    ['tag', `type commit\ntag v\n\n`, 'missingObject', true],
    ['tag', `object ${OID}\ntag v\n\n`, 'missingTypeEntry', true],
    ['tag', `object ${OID}\ntype commit\ntagger t <t@x> 1 +0000\n\n`, 'missingTagEntry', false],
    ['tag', `object ${OID}\ntype commit\ntag v\ntagger t <t@x> 1 0000\n\n`, 'badTimezone', false],
    ['tree', enc('100644 a\0short'), 'badTree', true],
    ['tree', concatBytes([enc('10a644 a\0'), ID_BYTES]), 'badTree', true],
    ['tree', concatBytes([enc('100644 \0'), ID_BYTES]), 'emptyName', true],
    ['tree', concatBytes([enc('100644 a\0'), new Uint8Array(20)]), 'nullSha1', false],
  ];
  it.each(cases)('%s %j: %s', (type, data, id, always) => {
    const bytes = typeof data === 'string' ? enc(data) : data;
    expect(checkObject(type, bytes, { fsck: true })).toMatchObject({ ok: false, id });
    expect(checkObject(type, bytes).ok).toBe(!always);
  });

  it('spots .git as git spells it on case-insensitive, HFS+ and NTFS file systems', () => {
    for (const name of [
      '.git',
      '.GIT',
      '.Git',
      'git~1',
      'GIT~1',
      '.git.',
      '.git ',
      '.git. .',
      '.git::$INDEX_ALLOCATION',
      '.gi\u200ct',
      '\ufeff.git',
    ]) {
      expect(isDotGit(enc(name)), name).toBe(true);
    }
    for (const name of ['.gitignore', '.gitmodules', 'git', '.git~1', 'a.git', '.gits', 'git~2']) {
      expect(isDotGit(enc(name)), name).toBe(false);
    }
  });

  it('orders entries as git does: a tree sorts as if its name ended in /', () => {
    expect(compareEntries(enc('a'), true, enc('a.c'), false)).toBeGreaterThan(0);
    expect(compareEntries(enc('a'), false, enc('a.c'), false)).toBeLessThan(0);
    expect(compareEntries(enc('a'), true, enc('a0'), false)).toBeLessThan(0);
  });

  it('gives a verdict for any bytes, never throws (seeded fuzz)', () => {
    const { seed, numRuns } = fuzzParameters('object-check', 3000);
    const valid: [ObjectType, Uint8Array][] = [
      ['commit', enc(commit)],
      ['tag', enc(tag)],
      ['tree', tree(['100644', 'a'], ['40000', 'b'], ['160000', 'c'])],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...valid),
        fc.constantFrom<ObjectType>('commit', 'tree', 'tag', 'blob'),
        fc.oneof(
          // truncated
          fc.record({ kind: fc.constant('cut' as const), at: fc.nat(400) }),
          // bytes flipped
          fc.record({
            kind: fc.constant('flip' as const),
            edits: fc.array(fc.tuple(fc.nat(400), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
          }),
          // random bytes
          fc.record({ kind: fc.constant('random' as const), bytes: fc.uint8Array({ maxLength: 300 }) }),
        ),
        fc.boolean(),
        ([, base], type, mutation, fsck) => {
          let data: Uint8Array;
          if (mutation.kind === 'cut') data = base.subarray(0, mutation.at % (base.length + 1));
          else if (mutation.kind === 'random') data = mutation.bytes;
          else {
            data = base.slice();
            for (const [at, value] of mutation.edits) data[at % data.length] = value;
          }
          const verdict = checkObject(type, data, { fsck });
          if (verdict.ok) {
            for (const link of verdict.links) expect(link.oid).toMatch(/^[0-9a-f]{40}$/);
          } else {
            expect(verdict.id).toMatch(/^[a-z][A-Za-z0-9]+$/);
            expect(typeof verdict.message).toBe('string');
          }
        },
      ),
      { seed, numRuns },
    );
  });
});
