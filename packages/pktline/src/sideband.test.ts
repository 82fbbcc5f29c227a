import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodePackets,
  demuxSideband,
  encodePackets,
  encodeText,
  FLUSH,
  isPktLineError,
  MAX_PACKET_DATA,
  muxSideband,
  PacketReader,
  type PktLineError,
  SIDEBAND_64K_MAX_DATA,
  SIDEBAND_MAX_DATA,
  SidebandMuxer,
} from './index.js';
import {
  ascii,
  chunked,
  concat,
  concatAsync,
  firstDifference,
  inChunks,
  prng,
  randomBytes,
  text,
} from './test-helpers.js';

async function failure(promise: Promise<unknown>): Promise<PktLineError> {
  try {
    await promise;
  } catch (error) {
    if (isPktLineError(error)) return error;
    throw error;
  }
  throw new Error('expected a PktLineError');
}

const lengthOf = (frame: Uint8Array) => Number.parseInt(ascii(frame.subarray(0, 4)), 16);

describe('side-band mux', () => {
  it('splits a 5 MB payload into frames of at most 65515 data bytes that demux back to it', async () => {
    const payload = randomBytes(prng(5), 5 * 1024 * 1024);
    const frames = muxSideband(1, payload);
    expect(frames.length).toBe(Math.ceil(payload.byteLength / SIDEBAND_64K_MAX_DATA));
    for (const frame of frames) {
      expect(lengthOf(frame)).toBe(frame.byteLength);
      expect(frame.byteLength).toBeLessThanOrEqual(MAX_PACKET_DATA + 4);
      expect(frame[4]).toBe(1);
    }
    expect(frames[0]!.byteLength).toBe(65520);
    const stream = concat([...frames, FLUSH]);
    const back = await concatAsync(demuxSideband(new PacketReader(inChunks(stream, 64 * 1024))));
    expect(back.byteLength).toBe(payload.byteLength);
    expect(firstDifference(back, payload)).toBe(-1);
  });

  it('uses 995-byte frames for plain side-band', () => {
    const frames = muxSideband(2, new Uint8Array(2000).fill(0x2e), { maxData: SIDEBAND_MAX_DATA });
    expect(frames.map((f) => f.byteLength)).toEqual([1000, 1000, 15]);
    expect(frames.map((f) => f[4])).toEqual([2, 2, 2]);
  });

  it('rejects frame sizes git would not read', () => {
    expect(() => muxSideband(1, new Uint8Array(1), { maxData: 65516 })).toThrow(
      expect.objectContaining({ code: 'PKTLINE_TOO_LONG' }),
    );
    expect(() => muxSideband(4 as 1, new Uint8Array(1))).toThrow(
      expect.objectContaining({ code: 'PKTLINE_SIDEBAND_BAD_BAND' }),
    );
    expect(muxSideband(1, new Uint8Array(0))).toEqual([]);
  });

  it('SidebandMuxer writes data, progress, error and the final flush, awaiting each write', async () => {
    const written: Uint8Array[] = [];
    let pending = 0;
    const muxer = new SidebandMuxer(async (bytes, options) => {
      expect(pending).toBe(0);
      expect(options.transfer).toBe(true);
      pending++;
      await new Promise<void>((resolve) => setImmediate(resolve));
      written.push(bytes);
      pending--;
    });
    await muxer.progress('Counting objects: 1\r');
    await muxer.data(new Uint8Array(70_000).fill(7));
    await muxer.error('out of luck\n');
    await muxer.flush();
    // one frame's worth per write: the progress frame and the data that fills the rest, then the
    // rest of the data with the error frame (written out at once), then the flush packet
    expect(written.map((w) => w.byteLength)).toEqual([65520, 70_000 - 65490 + 5 + 5 + 12, 4]);
    expect(ascii(written[0]!.subarray(0, 30))).toBe('0019\x02Counting objects: 1\rffd7\x01');
    const progress: string[] = [];
    const error = await failure(
      concatAsync(demuxSideband(decodePackets(chunked(concat(written), [])), { onProgress: (t) => progress.push(t) })),
    );
    expect(progress).toEqual(['Counting objects: 1\r']);
    expect(error).toMatchObject({ code: 'PKTLINE_REMOTE_ERROR', via: 'sideband', remoteMessage: 'out of luck' });
  });
  it('SidebandMuxer fills frames across calls and gathers them into buffers of its write size', async () => {
    const written: Uint8Array[] = [];
    const writeSize = 3 * 65_520 + 100;
    const muxer = new SidebandMuxer((bytes) => void written.push(bytes), { writeSize });
    const data = randomBytes(prng(5), 500_000);
    for (let at = 0; at < data.length; at += 50_000) {
      await muxer.data(data.subarray(at, at + 50_000));
      if (at === 250_000) await muxer.progress('half\n');
    }
    await muxer.flush();
    expect(written.slice(0, -1).every((w) => w.byteLength <= 3 * 65_520)).toBe(true);
    expect(written.length).toBeLessThanOrEqual(Math.ceil(500_000 / 65_515 / 3) + 2);
    const frames: number[] = [];
    for await (const p of decodePackets(chunked(concat(written), []))) {
      if (p.kind === 'data') frames.push(p.payload.byteLength);
    }
    // frames are filled across calls: at most one short frame per buffer besides the progress one
    expect(Math.max(...frames)).toBe(65_516);
    expect(frames.length).toBeLessThanOrEqual(Math.ceil(500_000 / 65_515) + written.length + 1);
    const progress: string[] = [];
    const back = await concatAsync(
      demuxSideband(decodePackets(chunked(concat(written), [])), { onProgress: (t) => progress.push(t) }),
    );
    expect(firstDifference(back, data)).toBe(-1);
    expect(progress).toEqual(['half\n']);
  });
});

describe('side-band demux', () => {
  it('stops at the flush and leaves the reader positioned after it', async () => {
    const stream = concat([...muxSideband(1, text('report')), FLUSH, encodeText('after'), FLUSH]);
    const reader = new PacketReader(chunked(stream, [3, 9]));
    expect(ascii(await concatAsync(demuxSideband(reader)))).toBe('report');
    expect(await reader.readText()).toBe('after');
    expect(await reader.read()).toEqual({ kind: 'flush' });
    expect(await reader.read()).toBeUndefined();
  });

  it('types protocol errors in side-band data', async () => {
    const cases: [Uint8Array, string][] = [
      [concat([text('0005\x04'), FLUSH]), 'PKTLINE_SIDEBAND_BAD_BAND'],
      [concat([text('0004'), FLUSH]), 'PKTLINE_SIDEBAND_BAD_BAND'],
      [concat([text('0006\x01a0001'), FLUSH]), 'PKTLINE_SIDEBAND_UNEXPECTED'],
      [text('0006\x01a'), 'PKTLINE_TRUNCATED'],
      [text('0006\x01a0012ERR no such repo'), 'PKTLINE_REMOTE_ERROR'],
    ];
    for (const [input, code] of cases) {
      const error = await failure(concatAsync(demuxSideband(new PacketReader(chunked(input, [])))));
      expect({ input: ascii(input), code: error.code }).toEqual({ input: ascii(input), code });
    }
  });

  it('ignores keepalive frames', async () => {
    const stream = concat([text('0005\x01'), ...muxSideband(1, text('x')), text('0005\x02'), FLUSH]);
    expect(ascii(await concatAsync(demuxSideband(new PacketReader(chunked(stream, [])))))).toBe('x');
  });
});

describe('side-band demux fuzz (fast-check)', () => {
  it('gives band-1 bytes or a typed error for any frames, never a hang or an untyped throw', async () => {
    const frame = fc.oneof(
      fc
        .tuple(fc.constantFrom(0, 1, 1, 1, 2, 3, 4, 255), fc.uint8Array({ maxLength: 30 }))
        .map(([band, data]) =>
          concat([text((data.byteLength + 5).toString(16).padStart(4, '0')), Uint8Array.of(band), data]),
        ),
      fc.constantFrom(text('0000'), text('0001'), text('0002'), text('0004'), text('0003'), text('zzzz')),
      fc.uint8Array({ maxLength: 8 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { maxLength: 12 }), fc.nat({ max: 400 }), async (frames, cut) => {
        const input = concat(frames);
        try {
          const bytes = await concatAsync(
            demuxSideband(new PacketReader(chunked(input, [cut % (input.byteLength + 1)])), { onProgress: () => {} }),
          );
          expect(bytes.byteLength).toBeLessThanOrEqual(input.byteLength);
        } catch (error) {
          if (!isPktLineError(error)) throw error;
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('side-band from real git', () => {
  let sandbox: GitSandbox;
  let repo: string;
  let head: string;
  beforeAll(async () => {
    sandbox = await createGitSandbox('gitport-sideband-');
    repo = sandbox.path('repo');
    await sandbox.git(['init', '-q', repo]);
    const big = randomBytes(prng(11), 300_000); // larger than any frame: git splits it
    await sandbox.exec('sh', ['-c', 'cat > big.bin'], { cwd: repo, input: big });
    await sandbox.git(['add', 'big.bin'], { cwd: repo });
    await sandbox.git(['commit', '-q', '-m', 'big'], { cwd: repo });
    head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: repo });
  });
  afterAll(() => sandbox?.cleanup());

  it('demuxes the pack git upload-pack sends over side-band-64k, and git indexes it', async () => {
    const request = encodePackets([
      { kind: 'data', payload: text(`want ${head} side-band-64k ofs-delta\n`) },
      { kind: 'flush' },
      { kind: 'data', payload: text('done\n') },
    ]);
    const response = (await sandbox.run(['upload-pack', '--stateless-rpc', repo], { input: request })).stdout;
    for (const size of [1, 7, 65536]) {
      const reader = new PacketReader(inChunks(response, size));
      expect(await reader.readText()).toBe('NAK');
      const progress: string[] = [];
      const pack = await concatAsync(demuxSideband(reader, { onProgress: (t) => progress.push(t) }));
      expect(ascii(pack.subarray(0, 4))).toBe('PACK');
      expect(await reader.read()).toBeUndefined();
      if (size === 65536) {
        const target = sandbox.path('target.git');
        await sandbox.git(['init', '-q', '--bare', target]);
        const indexed = await sandbox.git(['index-pack', '--stdin'], { cwd: target, input: pack });
        expect(indexed).toMatch(/^pack\t[0-9a-f]{40}$/);
        await sandbox.git(['cat-file', '-e', head], { cwd: target });
      }
    }
  });
});
