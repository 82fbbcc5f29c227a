import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodePackets,
  encodePacket,
  encodePackets,
  formatTrace,
  isPktLineError,
  MAX_READ_PACKET_DATA,
  type Packet,
  PacketReader,
  type PktLineError,
} from './index.js';
import {
  ascii,
  chunked,
  collect,
  concat,
  concatAsync,
  firstDifference,
  inChunks,
  prng,
  randomBytes,
  readAll,
  summarize,
  text,
} from './test-helpers.js';

const once = async function* (bytes: Uint8Array) {
  yield bytes;
};

async function failure(promise: Promise<unknown>): Promise<PktLineError> {
  try {
    await promise;
  } catch (error) {
    if (isPktLineError(error)) return error;
    throw error;
  }
  throw new Error('expected a PktLineError');
}

describe('vectors from real git', () => {
  let sandbox: GitSandbox;
  let repo: string;
  let advertisement: Uint8Array;
  let advertisementV2: Uint8Array;

  beforeAll(async () => {
    sandbox = await createGitSandbox('gitport-pktline-');
    repo = sandbox.path('repo');
    await sandbox.git(['init', '-q', repo]);
    for (let i = 0; i < 3; i++) {
      await sandbox.exec('sh', ['-c', `echo line ${i} >> file.txt`], { cwd: repo });
      await sandbox.git(['add', 'file.txt'], { cwd: repo });
      await sandbox.git(['commit', '-q', '-m', `commit ${i}`], { cwd: repo });
    }
    await sandbox.git(['branch', 'feature'], { cwd: repo });
    await sandbox.git(['tag', '-a', 'v1', '-m', 'tag v1'], { cwd: repo });
    advertisement = (await sandbox.run(['upload-pack', '--advertise-refs', repo])).stdout;
    advertisementV2 = (
      await sandbox.run(['upload-pack', '--advertise-refs', repo], { env: { GIT_PROTOCOL: 'version=2' } })
    ).stdout;
  });
  afterAll(() => sandbox?.cleanup());

  it('decodes the v0 advertisement and re-encodes it byte for byte', async () => {
    const packets = await collect(once(advertisement));
    expect(packets.at(-1)).toEqual({ kind: 'flush' });
    const lines = packets.filter((p) => p.kind === 'data').map((p) => ascii(p.payload));
    expect(lines[0]).toMatch(/^[0-9a-f]{40} HEAD\0.*side-band-64k/);
    expect(lines.some((l) => l.includes(' refs/tags/v1^{}\n'))).toBe(true);
    expect(encodePackets(packets)).toEqual(advertisement);
  });

  it('decodes the v2 capability advertisement and re-encodes it byte for byte', async () => {
    const packets = await collect(once(advertisementV2));
    expect(ascii((packets[0] as { payload: Uint8Array }).payload)).toBe('version 2\n');
    expect(encodePackets(packets)).toEqual(advertisementV2);
  });

  it('decodes the advertisement split at every byte boundary', async () => {
    const expected = await collect(once(advertisement));
    for (let cut = 0; cut <= advertisement.byteLength; cut++) {
      expect(await collect(chunked(advertisement, [cut]))).toEqual(expected);
    }
    // and one byte at a time
    expect(await collect(inChunks(advertisement, 1))).toEqual(expected);
  });

  it('traces exactly as GIT_TRACE_PACKET does, on both sides of the advertisement', async () => {
    const traceFile = sandbox.path('trace.txt');
    await sandbox.run(['-c', 'protocol.version=0', 'ls-remote', repo], { env: { GIT_TRACE_PACKET: traceFile } });
    const traced = ascii((await sandbox.exec('cat', [traceFile])).stdout).split('\n');
    const pick = (re: RegExp) => traced.map((l) => re.exec(l)?.[1]).filter((l): l is string => l !== undefined);
    const received = pick(/(packet: +ls-remote< .*)$/);
    const sent = pick(/(packet: +upload-pack> .*)$/);
    // what upload-pack writes to a v0 client over a pipe (no --advertise-refs: no `no-done`)
    const live = (await sandbox.run(['upload-pack', repo], { input: '0000' })).stdout;
    const ours: string[] = [];
    const reader = new PacketReader(once(live), { trace: (l) => ours.push(l), traceIdentity: 'ls-remote' });
    const packets = await readAll(reader);
    expect(received.length).toBeGreaterThan(3);
    // git's client stops reading (and tracing) at the flush that ends the advertisement
    expect(ours.slice(0, received.length)).toEqual(received);
    expect(packets.map((p) => formatTrace(p, '>', 'upload-pack'))).toEqual(sent.slice(0, packets.length));
  });
});

describe('decoding', () => {
  it('yields the tagged union for every packet kind, and undefined at a clean end', async () => {
    const reader = new PacketReader(once(text('0006a\n000100020000000c0123456\n0004')));
    expect(await reader.read()).toEqual({ kind: 'data', payload: text('a\n') });
    expect(await reader.read()).toEqual({ kind: 'delim' });
    expect(await reader.read()).toEqual({ kind: 'response-end' });
    expect(await reader.read()).toEqual({ kind: 'flush' });
    expect(await reader.readText()).toBe('0123456');
    expect(await reader.read()).toEqual({ kind: 'data', payload: new Uint8Array(0) });
    expect(await reader.read()).toBeUndefined();
    expect(await reader.read()).toBeUndefined();
  });

  it('reads a WHATWG ReadableStream through its reader, and cancels it', async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(text('0006a\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    // only getReader(), as in browsers without async iteration of streams
    const readerOnly = { getReader: () => stream.getReader() } as unknown as ReadableStream<Uint8Array>;
    const reader = new PacketReader(readerOnly);
    expect(await reader.readText()).toBe('a');
    expect(await reader.readText()).toBe('a');
    await reader.cancel();
    expect(cancelled).toBe(true);
  });

  it('rejects a second read() while one is pending', async () => {
    let release: () => void = () => {};
    async function* slow() {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      yield text('0006a\n');
    }
    const reader = new PacketReader(slow());
    const first = reader.read();
    expect((await failure(reader.read())).code).toBe('PKTLINE_CONCURRENT_READ');
    release();
    expect(await first).toEqual({ kind: 'data', payload: text('a\n') });
  });

  it('reads upper-case hex lengths as git does', async () => {
    expect(await collect(once(text('000Ahello\n')))).toEqual([{ kind: 'data', payload: text('hello\n') }]);
  });

  it('accepts payloads up to 65519 bytes (git reads leniently) and rejects longer ones with the offset', async () => {
    const lenient = new Uint8Array(MAX_READ_PACKET_DATA + 4).fill(0x61);
    lenient.set(text('fff3'));
    const [packet] = await collect(once(lenient));
    expect(packet?.kind === 'data' && packet.payload.byteLength).toBe(65519);
    const tooLong = concat([text('0005x'), text('fff4'), new Uint8Array(65520)]);
    const error = await failure(collect(once(tooLong)));
    expect(error.code).toBe('PKTLINE_BAD_LENGTH');
    expect(error.offset).toBe(5);
  });

  it('types bad input with its byte offset', async () => {
    const cases: [string, string, number][] = [
      ['0006a\n0003', 'PKTLINE_BAD_LENGTH', 6],
      ['0006a\n00g1', 'PKTLINE_BAD_HEX', 6],
      ['PACK\0\0\0\x02', 'PKTLINE_BAD_HEX', 0],
      ['0006a\n000', 'PKTLINE_TRUNCATED', 6],
      ['0006a\n0009abc', 'PKTLINE_TRUNCATED', 6],
      ['0000-001', 'PKTLINE_BAD_HEX', 4],
    ];
    for (const [input, code, offset] of cases) {
      for (let cut = 0; cut <= input.length; cut++) {
        const error = await failure(collect(chunked(text(input), [cut])));
        expect({ input, code: error.code, offset: error.offset }).toEqual({ input, code, offset });
      }
    }
  });

  it('surfaces ERR packets as a typed remote error', async () => {
    const reader = new PacketReader(once(text('0006a\n0016ERR access denied\n')));
    await reader.read();
    const error = await failure(reader.read());
    expect(error.code).toBe('PKTLINE_REMOTE_ERROR');
    expect(error).toMatchObject({ remoteMessage: 'access denied', via: 'err-packet', offset: 6 });
  });

  it('returns views into the input chunk when a packet lies inside it, copies across chunks', async () => {
    const input = text('0007abc0007def');
    const reader = new PacketReader(chunked(input, [12]));
    const first = (await reader.read()) as { payload: Uint8Array };
    const second = (await reader.read()) as { payload: Uint8Array };
    expect(ascii(first.payload)).toBe('abc');
    expect(ascii(second.payload)).toBe('def');
    expect(first.payload.byteLength).toBe(3);
    // 'abc' lies in the first chunk: a view of its 12-byte buffer; 'def' crosses: its own buffer
    expect(first.payload.buffer.byteLength).toBe(12);
    expect(second.payload.buffer.byteLength).toBe(3);
  });

  it('hands the rest of the stream over as raw bytes after the pkt-lines (receive-pack)', async () => {
    const commands = encodePackets([
      { kind: 'data', payload: text('old new refs/heads/main\0report-status\n') },
      { kind: 'flush' },
    ]);
    const pack = randomBytes(prng(7), 10_000);
    const stream = concat([commands, pack]);
    for (const cut of [0, 3, commands.byteLength - 2, commands.byteLength, commands.byteLength + 1, 5000]) {
      const reader = new PacketReader(chunked(stream, cut === 0 ? [] : [cut]));
      expect((await reader.read())?.kind).toBe('data');
      expect(await reader.read()).toEqual({ kind: 'flush' });
      expect(reader.position).toBe(commands.byteLength);
      const rest = await concatAsync(reader.rest());
      expect(firstDifference(rest, pack)).toBe(-1);
      expect((await failure(reader.read())).code).toBe('PKTLINE_HANDED_OFF');
    }
  });

  it('stops on abort with PKTLINE_ABORTED and releases the source', async () => {
    const controller = new AbortController();
    let released = false;
    let pulls = 0;
    async function* endless() {
      try {
        yield text('0006a\n');
        for (;;) {
          pulls++;
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (pulls === 3) controller.abort(new Error('stop'));
          yield text('00');
        }
      } finally {
        released = true;
      }
    }
    const reader = new PacketReader(endless(), { signal: controller.signal });
    expect(await reader.readText()).toBe('a');
    const error = await failure(readAll(reader));
    expect(error.code).toBe('PKTLINE_ABORTED');
    expect((error.cause as Error).message).toBe('stop');
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(released).toBe(true);
  });

  it('round-trips seeded random packet streams under random chunking', async () => {
    const seed = Number(process.env.PKTLINE_SEED ?? Date.now() % 1_000_000);
    console.log(`pktline round-trip seed: ${seed} (rerun with PKTLINE_SEED=${seed})`);
    const random = prng(seed);
    for (let round = 0; round < 40; round++) {
      const packets: Packet[] = [];
      const count = 1 + Math.floor(random() * 30);
      for (let i = 0; i < count; i++) {
        const r = random();
        if (r < 0.1) packets.push({ kind: 'flush' });
        else if (r < 0.15) packets.push({ kind: 'delim' });
        else if (r < 0.2) packets.push({ kind: 'response-end' });
        else {
          const size = r < 0.25 ? 65516 - Math.floor(random() * 3) : 1 + Math.floor(random() * (r < 0.5 ? 40 : 3000));
          const payload = randomBytes(random, size);
          if (payload[0] === 0x45) payload[0] = 0x46; // not an ERR packet
          packets.push({ kind: 'data', payload });
        }
      }
      const bytes = encodePackets(packets);
      const cuts: number[] = [];
      for (let at = 0; at < bytes.byteLength; at += 1 + Math.floor(random() * 70_000)) if (at > 0) cuts.push(at);
      const decoded = await collect(chunked(bytes, cuts));
      expect({ seed, round, packets: summarize(decoded) }).toEqual({ seed, round, packets: summarize(packets) });
      expect(firstDifference(encodePackets(decoded.map((p) => encodePacket(p))), bytes)).toBe(-1);
    }
  });
});

describe('fuzz (fast-check): malformed input gives valid packets or a typed error', () => {
  const hexish = fc.constantFrom(...'0123456789abcdefABCDEFxg-\n\0'.split(''));
  const token = fc.oneof(
    fc.stringMatching(/^[0-9a-f]{4}$/),
    fc.constantFrom('0000', '0001', '0002', '0003', '0004', '0005', 'fff0', 'fff3', 'fff4', 'ffff', 'ERR x'),
    fc.array(hexish, { maxLength: 6 }).map((a) => a.join('')),
    fc.uint8Array({ maxLength: 40 }).map((b) => String.fromCharCode(...b)),
  );

  it('never hangs, never throws anything untyped', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(token, { maxLength: 20 }),
        fc.array(fc.nat({ max: 200 }), { maxLength: 5 }),
        async (tokens, rawCuts) => {
          const input = Uint8Array.from(tokens.join(''), (c) => c.charCodeAt(0) & 0xff);
          const cuts = [...new Set(rawCuts.map((c) => c % (input.byteLength + 1)))].sort((a, b) => a - b);
          let total = 0;
          try {
            for await (const packet of decodePackets(chunked(input, cuts))) {
              if (packet.kind === 'data') total += packet.payload.byteLength + 4;
              else total += 4;
              expect(total).toBeLessThanOrEqual(input.byteLength);
            }
            expect(total).toBe(input.byteLength);
          } catch (error) {
            if (!isPktLineError(error)) throw error;
            if (error.code !== 'PKTLINE_REMOTE_ERROR') expect(error.offset).toBeLessThanOrEqual(input.byteLength);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
