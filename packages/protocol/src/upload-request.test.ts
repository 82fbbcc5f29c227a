import { FLUSH } from '@gitport/pktline';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCommandRequest, readCommandRequest } from './command-request.js';
import { concatBytes } from './connection.js';
import { fuzzParameters } from './test-fuzz.js';
import { expectCoded, mutated, readerOf, uploadRequest } from './test-messages.js';
import {
  decodeFetchArgument,
  decodeFetchArguments,
  decodeUploadHavesLine,
  decodeUploadRequestV0,
  decodeWantListLine,
  encodeFetchArguments,
  encodeUploadHaves,
  encodeUploadRequestV0,
  type UploadRequest,
} from './upload-request.js';

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

/** A v2 `fetch` command carrying `request`, and back. */
async function roundTripV2(request: UploadRequest): Promise<UploadRequest | undefined> {
  const bytes = encodeCommandRequest({
    command: 'fetch',
    capabilities: ['agent=gitport/test', 'object-format=sha1'],
    args: encodeFetchArguments(request),
  });
  const command = await readCommandRequest(readerOf(bytes));
  return command && decodeFetchArguments(command.args);
}

describe('UploadRequest', () => {
  it('v0: encodes the want-list as git does (capabilities on the first want, deepen lines, flush)', () => {
    const bytes = encodeUploadRequestV0({
      wants: [A, B],
      capabilities: ['multi_ack_detailed', 'side-band-64k', 'shallow', 'agent=git/2.39.2'],
      shallow: [C],
      deepen: { depth: 3, not: ['v1'], relative: true },
      haves: [],
      done: false,
    });
    expect(text(bytes)).toBe(
      `007cwant ${A} multi_ack_detailed side-band-64k shallow agent=git/2.39.2 deepen-relative\n` +
        `0032want ${B}\n0035shallow ${C}\n000ddeepen 3\n0012deepen-not v1\n0000`,
    );
  });

  it('v0 stateless: the have-list follows the want-list, ending in done or a flush', () => {
    const request = { wants: [A], capabilities: [], shallow: [], haves: [B, C], done: true };
    expect(text(encodeUploadRequestV0(request))).toBe(`0032want ${A}\n00000032have ${B}\n0032have ${C}\n0009done\n`);
    expect(text(encodeUploadHaves([B], false))).toBe(`0032have ${B}\n0000`);
  });

  it('v2: the fetch arguments in git order', () => {
    const args = encodeFetchArguments({
      wants: [A],
      capabilities: ['thin-pack', 'ofs-delta'],
      shallow: [B],
      deepen: { depth: 2, since: 1_600_000_000.7, not: ['main'], relative: true },
      haves: [C],
      done: true,
    });
    expect(args).toEqual([
      'thin-pack',
      'ofs-delta',
      `want ${A}`,
      `shallow ${B}`,
      'deepen 2',
      'deepen-relative',
      'deepen-since 1600000000',
      'deepen-not main',
      `have ${C}`,
      'done',
    ]);
  });

  it('v0 and v2 round-trip any request (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('UploadRequest round trip', 300);
    await fc.assert(
      fc.asyncProperty(
        uploadRequest(0),
        uploadRequest(2),
        fc.array(fc.nat(), { maxLength: 6 }),
        async (v0, v2, cuts) => {
          expect(await decodeUploadRequestV0(readerOf(encodeUploadRequestV0(v0), cuts))).toEqual(v0);
          expect(await roundTripV2(v2)).toEqual(v2);
        },
      ),
      { seed, numRuns },
    );
  });

  it('an empty v0 request (ls-remote) decodes to nothing', async () => {
    expect(await decodeUploadRequestV0(readerOf(FLUSH))).toBeUndefined();
    expect(await decodeUploadRequestV0(readerOf(new Uint8Array(0)))).toBeUndefined();
  });

  it('repeated wants count once; the last deepen wins; a v0 deepen-relative line is a deepen request', async () => {
    const bytes = concatBytes([
      encodeUploadRequestV0({ wants: [A, B], capabilities: [], shallow: [], haves: [], done: false }).subarray(0, -4),
      new TextEncoder().encode(`0032want ${A}\n000ddeepen 1\n000ddeepen 5\n0014deepen-relative\n0000`),
    ]);
    expect(await decodeUploadRequestV0(readerOf(bytes))).toEqual({
      wants: [A, B],
      capabilities: [],
      shallow: [],
      deepen: { depth: 5, not: [], relative: true },
      haves: [],
      done: false,
    });
  });

  it('bad lines get the codes and messages the server always gave', () => {
    const bad = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return `${(error as { code: string }).code}: ${(error as Error).message}`;
      }
      return 'no error';
    };
    expect(bad(() => decodeWantListLine('want xyz'))).toBe('PROTOCOL_BAD_LINE: invalid want "xyz"');
    expect(bad(() => decodeWantListLine(`shallow ${A}x`))).toBe(`PROTOCOL_BAD_LINE: invalid shallow "${A}x"`);
    expect(bad(() => decodeWantListLine('deepen 0'))).toBe('PROTOCOL_BAD_LINE: invalid deepen 0');
    expect(bad(() => decodeWantListLine('deepen 6', { maxDepth: 5 }))).toBe('PROTOCOL_BAD_LINE: invalid deepen 6');
    expect(bad(() => decodeWantListLine('deepen-since soon'))).toBe('PROTOCOL_BAD_LINE: invalid deepen-since soon');
    expect(bad(() => decodeWantListLine(`have ${A}`))).toBe(
      `PROTOCOL_BAD_LINE: upload-pack: protocol error, unexpected "have ${A}"`,
    );
    expect(bad(() => decodeUploadHavesLine(`want ${A}`))).toBe(
      `PROTOCOL_BAD_LINE: upload-pack: expected have or done, got "want ${A}"`,
    );
    expect(bad(() => decodeUploadHavesLine('have 1'))).toBe('PROTOCOL_BAD_LINE: invalid have "1"');
    expect(bad(() => decodeFetchArgument(`want ${A} thin-pack`))).toBe(
      `PROTOCOL_BAD_LINE: invalid want "${A} thin-pack"`,
    );
    expect(bad(() => decodeFetchArgument('sideband-all'))).toBe(
      'PROTOCOL_BAD_LINE: fetch: unexpected argument "sideband-all"',
    );
    // a filter line is read by both versions; upload-pack judges its spec by its own policy
    expect(decodeFetchArgument('filter blob:none')).toEqual({ kind: 'filter', spec: 'blob:none' });
    expect(decodeWantListLine('filter tree:0')).toEqual({ kind: 'filter', spec: 'tree:0' });
    // v0 reads the id as the 40 characters after `want `, the capabilities after the next one
    expect(decodeWantListLine(`want ${A}`)).toEqual({ kind: 'want', oid: A, capabilities: '' });
  });

  it('the limits hold with the codes the server gives', async () => {
    const wants = Array.from({ length: 6 }, (_, i) => i.toString(16).repeat(40));
    const request = { wants, capabilities: [], shallow: [], haves: [A, A, A], done: true };
    await expect(
      decodeUploadRequestV0(readerOf(encodeUploadRequestV0(request)), { maxWants: 5 }),
    ).rejects.toMatchObject({ code: 'PROTOCOL_LIMIT', message: 'more than 5 wants' });
    await expect(decodeFetchArguments(encodeFetchArguments(request), { maxHaves: 2 })).rejects.toMatchObject({
      code: 'PROTOCOL_LIMIT',
      message: 'more than 2 haves',
    });
    await expect(decodeFetchArguments(['deepen 3'], { maxDepth: 2 })).rejects.toMatchObject({
      code: 'PROTOCOL_BAD_LINE',
    });
  });

  it('the decoders give a request or a coded error for truncated, oversized, repeated and random input (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('UploadRequest decoders', 500);
    const v0 = mutated(uploadRequest(0).map(encodeUploadRequestV0));
    const v2 = mutated(
      uploadRequest(2).map((r) =>
        encodeCommandRequest({ command: 'fetch', capabilities: ['agent=x'], args: encodeFetchArguments(r) }),
      ),
    );
    const outcomes = new Map<string, number>();
    const note = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
    const limits = { maxWants: 50, maxHaves: 200, maxDepth: 1000 };
    await fc.assert(
      fc.asyncProperty(v0, v2, fc.array(fc.nat({ max: 4096 }), { maxLength: 4 }), async (a, b, cuts) => {
        try {
          const request = await decodeUploadRequestV0(readerOf(a, cuts), limits);
          if (request) {
            expect(request.wants.length).toBeLessThanOrEqual(50);
            expect(request.haves.length).toBeLessThanOrEqual(200);
          }
          note('v0 request');
        } catch (error) {
          note(`v0 ${expectCoded(error)}`);
        }
        try {
          const command = await readCommandRequest(readerOf(b, cuts));
          if (command) await decodeFetchArguments(command.args, limits);
          note('v2 request');
        } catch (error) {
          note(`v2 ${expectCoded(error)}`);
        }
      }),
      { seed, numRuns },
    );
    console.log('UploadRequest decoder outcomes:', JSON.stringify(Object.fromEntries([...outcomes].sort())));
    expect(outcomes.get('v0 request') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('v2 request') ?? 0).toBeGreaterThan(0);
  });
});
