/**
 * Seeded fuzzing of what a peer's bytes meet first: the streaming pkt-line reader (lengths,
 * special packets, ERR, chunk boundaries) and side-band demultiplexing, from real git traffic
 * (test-corpus.ts) mutated byte by byte and packet by packet. Every input gives packets or a
 * PktLineError with a stable code, the same whatever the chunking; never another exception, a
 * hang, or a packet longer than git reads. `GITPORT_FUZZ_RUNS=N` runs N times longer,
 * `GITPORT_FUZZ_SEED` replays one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodePackets,
  demuxSideband,
  encodePacket,
  isPktLineError,
  MAX_READ_PACKET_DATA,
  type Packet,
  PacketReader,
  packetText,
} from './index.js';
import { GIT_TRAFFIC, traffic } from './test-corpus.js';
import { chunked, concat } from './test-helpers.js';

const CODES = new Set([
  'PKTLINE_BAD_HEX',
  'PKTLINE_BAD_LENGTH',
  'PKTLINE_TRUNCATED',
  'PKTLINE_REMOTE_ERROR',
  'PKTLINE_SIDEBAND_BAD_BAND',
  'PKTLINE_SIDEBAND_UNEXPECTED',
]);

function parameters(name: string, runs: number): { seed: number; numRuns: number } {
  const seed = Number(process.env.GITPORT_FUZZ_SEED ?? Date.now() % 2_147_483_647);
  const numRuns = runs * Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
  console.log(`${name}: fast-check seed ${seed}, ${numRuns} runs (replay with GITPORT_FUZZ_SEED=${seed})`);
  return { seed, numRuns };
}

const captures = Object.keys(GIT_TRAFFIC).map(traffic);

/** A capture, mutated: bytes overwritten, inserted, removed, or the stream cut short. */
const mutated = fc
  .tuple(
    fc.constantFrom(...captures),
    fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
        fc.record({
          kind: fc.constant('hex' as const),
          at: fc.nat(),
          byte: fc.constantFrom(...'0123456789abcdefF\n'.split('').map((c) => c.charCodeAt(0))),
        }),
        fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 8 }) }),
        fc.record({
          kind: fc.constant('special' as const),
          at: fc.nat(),
          text: fc.constantFrom('0000', '0001', '0002', '0003', '0004', '0005\x01', 'fff4', 'ffff', '0009ERR x'),
        }),
        fc.record({ kind: fc.constant('remove' as const), at: fc.nat(), n: fc.nat({ max: 16 }) }),
        fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
      ),
      { maxLength: 4 },
    ),
  )
  .map(([base, edits]) => {
    let bytes: Uint8Array = base.slice();
    for (const edit of edits) {
      const at = bytes.length === 0 ? 0 : edit.at % (bytes.length + 1);
      if (edit.kind === 'set' || edit.kind === 'hex') {
        if (at < bytes.length) bytes[at] = edit.byte;
      } else if (edit.kind === 'insert') bytes = concat([bytes.subarray(0, at), edit.bytes, bytes.subarray(at)]);
      else if (edit.kind === 'special') {
        bytes = concat([bytes.subarray(0, at), Uint8Array.from(edit.text, (c) => c.charCodeAt(0)), bytes.subarray(at)]);
      } else if (edit.kind === 'remove') bytes = concat([bytes.subarray(0, at), bytes.subarray(at + edit.n)]);
      else bytes = bytes.slice(0, at);
    }
    return bytes;
  });

const cuts = fc.array(fc.nat(), { maxLength: 6 });

function cutPoints(raw: readonly number[], length: number): number[] {
  return [...new Set(raw.map((c) => c % (length + 1)))].sort((a, b) => a - b);
}

type Outcome = { packets: string[]; error?: string };

/** What decoding gives: a summary of every packet, then the error code if it stopped on one. */
async function decode(source: AsyncIterable<Uint8Array>, length: number): Promise<Outcome> {
  const packets: string[] = [];
  let consumed = 0;
  try {
    for await (const p of decodePackets(source)) {
      if (p.kind === 'data') {
        expect(p.payload.byteLength).toBeLessThanOrEqual(MAX_READ_PACKET_DATA);
        consumed += p.payload.byteLength + 4;
        packets.push(`data ${Array.from(p.payload).join(',')}`);
      } else {
        consumed += 4;
        packets.push(p.kind);
      }
      expect(consumed).toBeLessThanOrEqual(length);
    }
    expect(consumed).toBe(length);
    return { packets };
  } catch (error) {
    if (!isPktLineError(error) || !CODES.has(error.code)) throw error;
    if (error.offset !== undefined) expect(error.offset).toBeLessThanOrEqual(length);
    return { packets, error: error.code };
  }
}

async function* whole(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

describe('fuzz: pkt-line reader over mutated git traffic', () => {
  it('the captures decode and encode back byte for byte', async () => {
    for (const [name, text] of Object.entries(GIT_TRAFFIC)) {
      const bytes = traffic(name);
      const packets: Packet[] = [];
      for await (const p of decodePackets(whole(bytes))) {
        packets.push(p.kind === 'data' ? { kind: 'data', payload: p.payload.slice() } : p);
      }
      expect(concat(packets.map(encodePacket)), name).toEqual(bytes);
      expect(text.length).toBeGreaterThan(0);
    }
  });

  it('gives packets or a typed error, the same whatever the chunking', async () => {
    const { seed, numRuns } = parameters('pkt-line reader', 300);
    await fc.assert(
      fc.asyncProperty(mutated, cuts, async (bytes, raw) => {
        const once = await decode(whole(bytes), bytes.length);
        const split = await decode(chunked(bytes, cutPoints(raw, bytes.length)), bytes.length);
        expect(split).toEqual(once);
      }),
      { seed, numRuns },
    );
  });

  it('a byte at a time gives what one chunk gives', async () => {
    const { seed, numRuns } = parameters('pkt-line reader, one byte per chunk', 40);
    await fc.assert(
      fc.asyncProperty(mutated, async (bytes) => {
        const once = await decode(whole(bytes), bytes.length);
        const all = Array.from({ length: bytes.length }, (_, i) => i);
        expect(await decode(chunked(bytes, all), bytes.length)).toEqual(once);
      }),
      { seed, numRuns },
    );
  });
});

describe('fuzz: side-band demultiplexing over mutated upload-pack answers', () => {
  it('gives band-1 bytes or a typed error, never more bytes than came in', async () => {
    const answers = ['v0-clone.resp', 'v2-fetch.resp', 'v0-shallow.resp'].map(traffic);
    const { seed, numRuns } = parameters('side-band demux', 300);
    const input = fc
      .tuple(fc.constantFrom(...answers), mutated, fc.boolean())
      .map(([answer, noise, mix]) =>
        mix ? concat([answer.subarray(0, Math.floor(answer.length / 2)), noise]) : answer,
      );
    await fc.assert(
      fc.asyncProperty(fc.oneof(input, mutated), cuts, async (bytes, raw) => {
        const reader = new PacketReader(chunked(bytes, cutPoints(raw, bytes.length)));
        let total = 0;
        try {
          // the text lines before the pack (NAK, ACK, acknowledgments, packfile ...), then frames
          for (;;) {
            const p = await reader.read();
            if (!p) return;
            const text = packetText(p);
            if (text === 'NAK' || text === 'packfile' || text?.startsWith('ACK ')) {
              if (text !== 'packfile' && text !== 'NAK') continue;
              break;
            }
          }
          for await (const data of demuxSideband(reader, { onProgress: () => {} })) total += data.byteLength;
          expect(total).toBeLessThanOrEqual(bytes.length);
        } catch (error) {
          if (!isPktLineError(error) || !CODES.has(error.code)) throw error;
        }
      }),
      { seed, numRuns },
    );
  });
});
