import { encodeText } from '@gitport/pktline';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ACKNOWLEDGMENTS_SECTION,
  decodeAcknowledgment,
  decodeAcknowledgments,
  encodeAcknowledgment,
  encodeAcknowledgments,
} from './acknowledgments.js';
import { requireLine } from './connection.js';
import { fuzzParameters } from './test-fuzz.js';
import { acknowledgment, acknowledgments, expectCoded, mutated, readerOf } from './test-messages.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (s: string) => new TextEncoder().encode(s);

describe('Acknowledgment (v0/v1)', () => {
  it('encodes NAK, a plain ACK and ACK with a status as upload-pack.c writes them', () => {
    expect(text(encodeAcknowledgment({ kind: 'nak' }))).toBe('0008NAK\n');
    expect(text(encodeAcknowledgment({ kind: 'ack', oid: A }))).toBe(`0031ACK ${A}\n`);
    expect(text(encodeAcknowledgment({ kind: 'ack', oid: A, status: 'common' }))).toBe(`0038ACK ${A} common\n`);
    expect(text(encodeAcknowledgment({ kind: 'ack', oid: A, status: 'continue' }))).toBe(`003aACK ${A} continue\n`);
    expect(text(encodeAcknowledgment({ kind: 'ack', oid: A, status: 'ready' }))).toBe(`0037ACK ${A} ready\n`);
  });

  it('round-trips (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('Acknowledgment round trip', 300);
    await fc.assert(
      fc.asyncProperty(acknowledgment, fc.array(fc.nat(), { maxLength: 4 }), async (ack, cuts) => {
        const line = await requireLine(readerOf(encodeAcknowledgment(ack), cuts), 'the line');
        expect(decodeAcknowledgment(line)).toEqual(ack);
      }),
      { seed, numRuns },
    );
  });

  it('anything but NAK or ACK <id> [continue|common|ready] is PROTOCOL_BAD_LINE', () => {
    for (const line of [
      '',
      'ACK',
      `ACK ${A.slice(1)}`,
      `ACK ${'g'.repeat(40)}`,
      `ACK ${A} maybe`,
      `ACK ${A}x`,
      'nak',
    ]) {
      expect(() => decodeAcknowledgment(line), line).toThrow(expect.objectContaining({ code: 'PROTOCOL_BAD_LINE' }));
    }
  });
});

describe('Acknowledgments (v2)', () => {
  it('a section with acks or NAK; ready ends with a delim, not ready with a flush', () => {
    expect(text(encodeAcknowledgments({ acks: [], ready: false }))).toBe('0014acknowledgments\n0008NAK\n0000');
    expect(text(encodeAcknowledgments({ acks: [A, B], ready: true }))).toBe(
      `0014acknowledgments\n0031ACK ${A}\n0031ACK ${B}\n000aready\n0001`,
    );
  });

  it('round-trips (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('Acknowledgments round trip', 300);
    await fc.assert(
      fc.asyncProperty(acknowledgments, fc.array(fc.nat(), { maxLength: 4 }), async (section, cuts) => {
        const reader = readerOf(encodeAcknowledgments(section), cuts);
        expect(await requireLine(reader, 'the section')).toBe(ACKNOWLEDGMENTS_SECTION);
        expect(await decodeAcknowledgments(reader)).toEqual(section);
        expect(await reader.read()).toBeUndefined();
      }),
      { seed, numRuns },
    );
  });

  it('NAK among ACKs is ignored and a repeated id is kept once, as fetch-pack.c reads them', async () => {
    const reader = readerOf(bytes(`0008NAK\n0031ACK ${A}\n0031ACK ${A}\n0008NAK\n0031ACK ${B}\n0000`));
    expect(await decodeAcknowledgments(reader)).toEqual({ acks: [A, B], ready: false });
  });

  it('sections without ready, ready without the pack, bad lines and too many acks are coded errors', async () => {
    const cases: [string, string][] = [
      [`0031ACK ${A}\n0001`, 'PROTOCOL_UNEXPECTED'],
      ['000aready\n0000', 'PROTOCOL_UNEXPECTED'],
      ['000cmaybe\n0000', 'PROTOCOL_BAD_LINE'],
      [`0031ACK ${'G'.repeat(40)}\n0000`, 'PROTOCOL_BAD_LINE'],
      ['0002', 'PROTOCOL_UNEXPECTED'],
      [`0031ACK ${A}\n`, 'PROTOCOL_UNEXPECTED_EOF'],
    ];
    for (const [input, code] of cases) {
      await expect(decodeAcknowledgments(readerOf(bytes(input))), input).rejects.toMatchObject({ code });
    }
    const many = `0031ACK ${A}\n0031ACK ${B}\n0000`;
    await expect(decodeAcknowledgments(readerOf(bytes(many)), { maxAcks: 1 })).rejects.toMatchObject({
      code: 'PROTOCOL_BAD_LINE',
    });
    await expect(decodeAcknowledgments(readerOf(bytes(many)), { maxAcks: 2 })).resolves.toEqual({
      acks: [A, B],
      ready: false,
    });
  });

  it('the decoders give a value or a coded error for truncated, oversized, repeated and random input (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('Acknowledgments decoder', 500);
    const input = mutated(
      fc.oneof(
        acknowledgments.map((section) => encodeAcknowledgments(section)),
        fc.array(acknowledgment, { maxLength: 6 }).map((acks) => {
          const lines = acks.map((a) => text(encodeAcknowledgment(a))).join('');
          return encodeText(lines.length > 0 ? lines : 'NAK\n');
        }),
      ),
    );
    let decoded = 0;
    await fc.assert(
      fc.asyncProperty(input, fc.array(fc.nat({ max: 4096 }), { maxLength: 4 }), async (input, cuts) => {
        try {
          const reader = readerOf(input, cuts);
          const first = await reader.read();
          if (first?.kind === 'data' && text(first.payload) === `${ACKNOWLEDGMENTS_SECTION}\n`) {
            await decodeAcknowledgments(reader, { maxAcks: 16 });
          } else {
            const lines = readerOf(input, cuts);
            for (let line = await lines.read(); line !== undefined; line = await lines.read()) {
              if (line.kind !== 'data') continue;
              decodeAcknowledgment(text(line.payload).replace(/\n$/, ''));
            }
          }
          decoded++;
        } catch (error) {
          expectCoded(error);
        }
      }),
      { seed, numRuns },
    );
    expect(decoded).toBeGreaterThan(0);
  });
});
