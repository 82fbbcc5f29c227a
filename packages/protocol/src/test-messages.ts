/**
 * Test support for the message codecs: arbitrary requests, shallow boundaries and
 * acknowledgments, readers over bytes cut anywhere, mutations of encoded messages, and the check
 * that an error is one of ours.
 */
import type { ObjectId } from '@gitport/pack';
import { PacketReader } from '@gitport/pktline';
import fc from 'fast-check';
import type { Acknowledgment, Acknowledgments } from './acknowledgments.js';
import type { ShallowInfo } from './shallow-info.js';
import type { DeepenRequest, UploadRequest } from './upload-request.js';

export const STABLE_CODE = /^(?:PROTOCOL|PKTLINE)_[A-Z0-9_]+$/;

/** Rethrows `error` unless it carries a stable code of protocol or pktline. */
export function expectCoded(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !STABLE_CODE.test(code)) throw error;
  return code;
}

export const objectId: fc.Arbitrary<ObjectId> = fc.stringMatching(/^[0-9a-f]{40}$/);

/** A v0 capability word or a v2 single-word argument (never `deepen-relative`). */
const word = fc.stringMatching(/^[a-z][a-z0-9_-]{0,11}(=[!-~]{0,8})?$/).filter((w) => w !== 'deepen-relative');

const deepen = (relative: fc.Arbitrary<boolean>): fc.Arbitrary<DeepenRequest> =>
  fc
    .record({
      depth: fc.option(fc.integer({ min: 1, max: 0x7fffffff }), { nil: undefined }),
      since: fc.option(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), { nil: undefined }),
      not: fc.array(fc.stringMatching(/^[!-~]{1,20}$/), { maxLength: 3 }),
      relative,
    })
    // a deepen request says something of its own (a bare `relative` is a capability in v0)
    .filter((d) => d.depth !== undefined || d.since !== undefined || d.not.length > 0)
    .map((d) => {
      const out: DeepenRequest = { not: d.not, relative: d.relative };
      if (d.depth !== undefined) out.depth = d.depth;
      if (d.since !== undefined) out.since = d.since;
      return out;
    });

/**
 * Requests as a decoder gives them back: distinct wants; v0 capabilities name `deepen-relative`
 * exactly when the deepen request is relative.
 */
export function uploadRequest(version: 0 | 2): fc.Arbitrary<UploadRequest> {
  const capabilities =
    version === 2
      ? fc.uniqueArray(fc.constantFrom('thin-pack', 'ofs-delta', 'include-tag', 'no-progress', 'wait-for-done'))
      : fc.array(word, { maxLength: 8 });
  return fc
    .record({
      wants: fc.uniqueArray(objectId, { minLength: 1, maxLength: 8 }),
      capabilities,
      shallow: fc.array(objectId, { maxLength: 4 }),
      deepen: fc.option(deepen(fc.boolean()), { nil: undefined }),
      filter: fc.option(fc.stringMatching(/^[!-~]{1,40}$/), { nil: undefined }),
      haves: fc.array(objectId, { maxLength: 8 }),
      done: fc.boolean(),
    })
    .map((r) => {
      const request: UploadRequest = {
        wants: r.wants,
        capabilities: r.capabilities,
        shallow: r.shallow,
        haves: r.haves,
        done: r.done,
      };
      if (r.deepen) {
        request.deepen = r.deepen;
        if (version === 0 && r.deepen.relative) request.capabilities = [...r.capabilities, 'deepen-relative'];
      }
      if (r.filter !== undefined) request.filter = r.filter;
      return request;
    });
}

export const shallowInfo: fc.Arbitrary<ShallowInfo> = fc.record({
  shallow: fc.array(objectId, { maxLength: 8 }),
  unshallow: fc.array(objectId, { maxLength: 8 }),
});

/** v0/v1 answer lines: NAK, plain ACK, ACK with each status. */
export const acknowledgment: fc.Arbitrary<Acknowledgment> = fc.oneof(
  fc.constant({ kind: 'nak' as const }),
  objectId.map((oid): Acknowledgment => ({ kind: 'ack', oid })),
  fc
    .tuple(objectId, fc.constantFrom('continue' as const, 'common' as const, 'ready' as const))
    .map(([oid, status]): Acknowledgment => ({ kind: 'ack', oid, status })),
);

/** v2 acknowledgments sections as the decoder gives them back (distinct ids). */
export const acknowledgments: fc.Arbitrary<Acknowledgments> = fc.record({
  acks: fc.uniqueArray(objectId, { maxLength: 8 }),
  ready: fc.boolean(),
});

/** A reader over `bytes` delivered in pieces cut at `cuts`. */
export function readerOf(bytes: Uint8Array, cuts: readonly number[] = []): PacketReader {
  return new PacketReader(
    (async function* () {
      let at = 0;
      for (const cut of [...cuts].sort((a, b) => a - b)) {
        const end = Math.min(cut, bytes.length);
        if (end <= at) continue;
        yield bytes.slice(at, end);
        at = end;
      }
      yield bytes.slice(at);
    })(),
  );
}

const text = new TextEncoder();

/** Lines of the request grammars, with good and bad values, for splicing into messages. */
const grammarLine = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        'want ',
        'have ',
        'shallow ',
        'unshallow ',
        'deepen ',
        'deepen-since ',
        'deepen-not ',
        'command=',
        'ref-prefix ',
        'ACK ',
      ),
      fc.oneof(
        objectId,
        fc.constantFrom('0', '-1', '1e3', 'NaN', '4294967296', '', ' ', 'x'.repeat(40)),
        fc.string({ maxLength: 50 }),
      ),
    )
    .map(([keyword, value]) => `${keyword}${value}`),
  fc.constantFrom(
    'done',
    'deepen-relative',
    'thin-pack',
    'wait-for-done',
    'shallow-info',
    'acknowledgments',
    'NAK',
    'ready',
    `ACK ${'a'.repeat(40)} ready`,
  ),
);

function pktLine(line: string): Uint8Array {
  const payload = text.encode(`${line}\n`);
  const out = new Uint8Array(payload.length + 4);
  out.set(text.encode((payload.length + 4).toString(16).padStart(4, '0')), 0);
  out.set(payload, 4);
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * `bytes` mutated: truncated, a piece repeated many times (oversized), lines of the grammar
 * spliced in (once or many times), special packets inserted, bytes overwritten; or random bytes.
 */
export function mutated(bytes: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
    fc.record({
      kind: fc.constant('repeat' as const),
      at: fc.nat(),
      n: fc.nat({ max: 64 }),
      times: fc.integer({ min: 2, max: 500 }),
    }),
    fc.record({
      kind: fc.constant('line' as const),
      at: fc.nat(),
      line: grammarLine,
      times: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 300 })),
    }),
    fc.record({
      kind: fc.constant('special' as const),
      at: fc.nat(),
      text: fc.constantFrom('0000', '0001', '0002', '0003', '0004', 'fff4', 'zzzz', '0009ERR x'),
    }),
    fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  );
  return fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    {
      weight: 6,
      arbitrary: fc.tuple(bytes, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([base, edits]) => {
        let out = base;
        for (const e of edits) {
          const at = out.length === 0 ? 0 : e.at % (out.length + 1);
          if (e.kind === 'cut') out = out.slice(0, at);
          else if (e.kind === 'repeat') {
            const piece = out.subarray(at, at + e.n);
            out = concat([out.subarray(0, at), ...Array.from({ length: e.times }, () => piece), out.subarray(at)]);
          } else if (e.kind === 'line') {
            const line = pktLine(e.line);
            out = concat([out.subarray(0, at), ...Array.from({ length: e.times }, () => line), out.subarray(at)]);
          } else if (e.kind === 'special') out = concat([out.subarray(0, at), text.encode(e.text), out.subarray(at)]);
          else if (at < out.length) {
            out = out.slice();
            out[at] = e.byte;
          }
        }
        return out;
      }),
    },
  );
}
