/**
 * pkt-line decode and side-band-64k demux of a 100 MiB stream fed in 64 KiB chunks (issue 2:
 * goal >= 1 GB/s), side by side with isomorphic-git's own reader (`GitPktLine.streamReader`,
 * `GitSideBand.demux`), which isomorphic-git uses for every fetch.
 *
 * isomorphic-git does not export those classes, so the peer is its published CommonJS bundle
 * evaluated unmodified in a function scope with its own `require`, and the two classes picked
 * out of that scope. Both sides read the same chunks from the same async iterable and must
 * deliver every payload byte (checked on every run, so a broken decoder fails the bench). Each
 * bench iteration runs both, in alternating order, so the ratio is fair on a shared machine.
 *
 * MB/s is stream bytes (pkt-line headers included) / 10^6 per second; the figure is the median
 * of the timed runs.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  demuxSideband,
  encodeData,
  encodeText,
  FLUSH,
  MAX_PACKET_DATA,
  muxSideband,
  PacketReader,
} from '@gitport/pktline';
import { afterAll, bench, describe } from 'vitest';
import { mbps, median, QUICK, record, sized } from './report.js';

const TOTAL = sized(100 * 1024 * 1024, 4 * 1024 * 1024);
const CHUNK = 64 * 1024;
const benchOptions = { iterations: sized(15, 2), warmupIterations: sized(3, 1), time: 0, warmupTime: 0 };

interface IsoPktLine {
  encode(line: string | Uint8Array): Uint8Array;
  streamReader(stream: AsyncIterable<Uint8Array> & { error?: unknown }): () => Promise<Uint8Array | null | true>;
}
interface IsoSideBand {
  demux(input: AsyncIterable<Uint8Array> & { error?: unknown }): {
    packfile: { next(): Promise<IteratorResult<Uint8Array>>; error?: unknown };
  };
}

/** isomorphic-git's GitPktLine and GitSideBand from its own bundle (see the header). */
function loadIsomorphicGit(): { GitPktLine: IsoPktLine; GitSideBand: IsoSideBand } {
  const require = createRequire(import.meta.url);
  const bundlePath = require.resolve('isomorphic-git');
  const source = readFileSync(bundlePath, 'utf8');
  const module = { exports: {} as Record<string, unknown> };
  const bundleRequire = createRequire(bundlePath);
  const run = new Function(
    'require',
    'module',
    'exports',
    '__filename',
    '__dirname',
    `${source}\n;return { GitPktLine, GitSideBand };`,
  );
  return run(bundleRequire, module, module.exports, bundlePath, bundlePath.replace(/\/[^/]+$/, ''));
}

/** 100 MiB of maximal data packets (a real pack stream's shape) and its 64 KiB chunks. */
function pktlineStream(): { bytes: Uint8Array; payloadBytes: number } {
  const payload = new Uint8Array(MAX_PACKET_DATA);
  for (let i = 0; i < payload.byteLength; i++) payload[i] = (i * 31 + 7) & 0xff;
  const packet = encodeData(payload);
  const count = Math.floor(TOTAL / packet.byteLength);
  const bytes = new Uint8Array(count * packet.byteLength + FLUSH.byteLength);
  for (let i = 0; i < count; i++) bytes.set(packet, i * packet.byteLength);
  bytes.set(FLUSH, count * packet.byteLength);
  return { bytes, payloadBytes: count * MAX_PACKET_DATA };
}

function sidebandStream(): { bytes: Uint8Array; payloadBytes: number } {
  const data = new Uint8Array(TOTAL);
  for (let i = 0; i < data.byteLength; i++) data[i] = (i * 13) & 0xff;
  const frames = muxSideband(1, data);
  const bytes = new Uint8Array(frames.reduce((n, f) => n + f.byteLength, 0) + FLUSH.byteLength);
  let at = 0;
  for (const f of frames) {
    bytes.set(f, at);
    at += f.byteLength;
  }
  bytes.set(FLUSH, at);
  return { bytes, payloadBytes: data.byteLength };
}

function chunksOf(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += CHUNK) chunks.push(bytes.subarray(at, at + CHUNK));
  return chunks;
}

function source(chunks: readonly Uint8Array[]): AsyncIterable<Uint8Array> & { error?: unknown } {
  return {
    async *[Symbol.asyncIterator]() {
      for (const c of chunks) yield c;
    },
  };
}

function check(label: string, got: number, want: number): void {
  if (got !== want) throw new Error(`${label}: delivered ${got} payload bytes, expected ${want}`);
}

const iso = loadIsomorphicGit();
const timings = new Map<string, number[]>();

/**
 * Each bench iteration runs gitport and the peer back to back, in alternating order, and times
 * each: both see the same JIT state and the same load from the rest of the machine (two shared
 * cores), so the ratio stays fair even when the absolute figures move.
 */
function alternate(name: string, ours: () => Promise<void>, peer: () => Promise<void>): () => Promise<void> {
  let round = 0;
  const time = async (key: string, fn: () => Promise<void>) => {
    const start = performance.now();
    await fn();
    const list = timings.get(key) ?? [];
    list.push(performance.now() - start);
    timings.set(key, list);
  };
  return async () => {
    if (round++ % 2 === 0) {
      await time(`${name}:gitport`, ours);
      await time(`${name}:iso`, peer);
    } else {
      await time(`${name}:iso`, peer);
      await time(`${name}:gitport`, ours);
    }
  };
}

/** Times each bench iteration itself, so the MB/s figure comes from the very same runs. */
function timed(name: string, fn: () => Promise<void>): () => Promise<void> {
  return async () => {
    const start = performance.now();
    await fn();
    const list = timings.get(name) ?? [];
    list.push(performance.now() - start);
    timings.set(name, list);
  };
}

function medianOf(name: string): number {
  // the last `iterations` runs: tinybench calls the function for the warmup runs too
  return median((timings.get(name) ?? []).slice(-benchOptions.iterations), name);
}

/** Short text lines (a ref advertisement's shape): per-packet overhead dominates. */
function smallLinesStream(): { bytes: Uint8Array; payloadBytes: number } {
  const total = sized(16 * 1024 * 1024, 256 * 1024);
  const parts: Uint8Array[] = [];
  let size = 0;
  let payloadBytes = 0;
  for (let i = 0; size < total; i++) {
    const line = encodeData(`${(i * 2654435761).toString(16).padStart(40, '0').slice(0, 40)} refs/heads/branch-${i}\n`);
    parts.push(line);
    size += line.byteLength;
    payloadBytes += line.byteLength - 4;
  }
  parts.push(FLUSH);
  const bytes = new Uint8Array(size + FLUSH.byteLength);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return { bytes, payloadBytes };
}

const decodeInput = pktlineStream();
const decodeChunks = chunksOf(decodeInput.bytes);
const demuxInput = sidebandStream();
const smallInput = smallLinesStream();
const smallChunks = chunksOf(smallInput.bytes);
const demuxChunks = chunksOf(demuxInput.bytes);

async function gitportDecode(chunks: readonly Uint8Array[], want: number): Promise<void> {
  const reader = new PacketReader(source(chunks));
  let bytes = 0;
  for (;;) {
    const packet = await reader.read();
    if (packet === undefined) break;
    if (packet.kind === 'data') bytes += packet.payload.byteLength;
  }
  check('gitport decode', bytes, want);
}

async function isoDecode(chunks: readonly Uint8Array[], want: number): Promise<void> {
  const input = source(chunks);
  const read = iso.GitPktLine.streamReader(input);
  let bytes = 0;
  for (;;) {
    const line = await read();
    if (line === true) break;
    if (line !== null) bytes += line.byteLength;
  }
  if (input.error) throw input.error;
  check('isomorphic-git decode', bytes, want);
}

describe(`pkt-line decode, ${(decodeInput.bytes.byteLength / 2 ** 20).toFixed(0)} MiB in 64 KiB chunks`, () => {
  bench(
    'gitport PacketReader | isomorphic-git GitPktLine.streamReader, alternating',
    alternate(
      'decode',
      () => gitportDecode(decodeChunks, decodeInput.payloadBytes),
      () => isoDecode(decodeChunks, decodeInput.payloadBytes),
    ),
    benchOptions,
  );
});

describe(`pkt-line decode of short lines, ${(smallInput.bytes.byteLength / 2 ** 20).toFixed(0)} MiB`, () => {
  bench(
    'gitport PacketReader | isomorphic-git GitPktLine.streamReader, alternating',
    alternate(
      'small',
      () => gitportDecode(smallChunks, smallInput.payloadBytes),
      () => isoDecode(smallChunks, smallInput.payloadBytes),
    ),
    benchOptions,
  );
});

describe(`side-band-64k demux, ${(demuxInput.bytes.byteLength / 2 ** 20).toFixed(0)} MiB in 64 KiB chunks`, () => {
  bench(
    'gitport demuxSideband | isomorphic-git GitSideBand.demux, alternating',
    alternate(
      'demux',
      async () => {
        let bytes = 0;
        for await (const data of demuxSideband(new PacketReader(source(demuxChunks)))) bytes += data.byteLength;
        check('gitport demux', bytes, demuxInput.payloadBytes);
      },
      async () => {
        const input = source(demuxChunks);
        const { packfile } = iso.GitSideBand.demux(input);
        let bytes = 0;
        for (;;) {
          const next = await packfile.next();
          if (next.done) break;
          bytes += next.value.byteLength;
        }
        if (packfile.error) throw packfile.error;
        check('isomorphic-git demux', bytes, demuxInput.payloadBytes);
      },
    ),
    benchOptions,
  );
});

/** The short lines again, as text: what a server writes for a ref advertisement. */
const lineTexts = (() => {
  const texts: string[] = [];
  for (let i = 0, size = 0; size < smallInput.bytes.byteLength; i++) {
    const text = `${(i * 2654435761).toString(16).padStart(40, '0').slice(0, 40)} refs/heads/branch-${i}\n`;
    texts.push(text);
    size += text.length + 4;
  }
  return texts;
})();
const lineBytes = lineTexts.reduce((n, t) => n + t.length + 4, 0);

describe(`pkt-line encode of ${lineTexts.length.toLocaleString('en')} short text lines`, () => {
  bench(
    'gitport encodeText | isomorphic-git GitPktLine.encode, alternating',
    alternate(
      'encode',
      async () => {
        let bytes = 0;
        for (const text of lineTexts) bytes += encodeText(text).byteLength;
        check('gitport encode', bytes, lineBytes);
      },
      async () => {
        let bytes = 0;
        for (const text of lineTexts) bytes += iso.GitPktLine.encode(text).byteLength;
        check('isomorphic-git encode', bytes, lineBytes);
      },
    ),
    benchOptions,
  );
});

describe(`side-band-64k mux of ${(TOTAL / 2 ** 20).toFixed(0)} MiB`, () => {
  const data = new Uint8Array(TOTAL).fill(0x5a);
  bench(
    'gitport muxSideband',
    timed('mux:gitport', async () => {
      let bytes = 0;
      for (let at = 0; at < data.byteLength; at += CHUNK) {
        for (const frame of muxSideband(1, data.subarray(at, at + CHUNK))) bytes += frame.byteLength - 5;
      }
      check('gitport mux', bytes, data.byteLength);
    }),
    benchOptions,
  );
});

afterAll(() => {
  const note = `${(TOTAL / 2 ** 20).toFixed(0)} MiB stream in 64 KiB chunks${QUICK ? ' (quick)' : ''}; median of the bench runs`;
  record({
    id: 'pktline.decode.mbps',
    value: mbps(decodeInput.bytes.byteLength, medianOf('decode:gitport')),
    unit: 'MB/s',
    peer: 'isomorphic-git GitPktLine',
    peerValue: mbps(decodeInput.bytes.byteLength, medianOf('decode:iso')),
    better: 'higher',
    goal: { min: 1000, source: 'issue 2' },
    note: `65520-byte packets; ${note}`,
  });
  const lines = Math.round(smallInput.bytes.byteLength / 70);
  record({
    id: 'pktline.decode-lines.mbps',
    value: mbps(smallInput.bytes.byteLength, medianOf('small:gitport')),
    unit: 'MB/s',
    peer: 'isomorphic-git GitPktLine',
    peerValue: mbps(smallInput.bytes.byteLength, medianOf('small:iso')),
    better: 'higher',
    note: `~${lines.toLocaleString('en')} ref-advertisement-like lines of about 70 bytes; 64 KiB chunks${QUICK ? ' (quick)' : ''}`,
  });
  record({
    id: 'pktline.encode-lines.mbps',
    value: mbps(lineBytes, medianOf('encode:gitport')),
    unit: 'MB/s',
    peer: 'isomorphic-git GitPktLine',
    peerValue: mbps(lineBytes, medianOf('encode:iso')),
    better: 'higher',
    note: `${lineTexts.length.toLocaleString('en')} ref-advertisement-like text lines, one packet each${QUICK ? ' (quick)' : ''}`,
  });
  record({
    id: 'pktline.sideband-mux.mbps',
    value: mbps(TOTAL, medianOf('mux:gitport')),
    unit: 'MB/s',
    peer: null,
    peerValue: null,
    better: 'higher',
    note: `${(TOTAL / 2 ** 20).toFixed(0)} MiB of band-1 data given in 64 KiB pieces, framed into new arrays; isomorphic-git has no muxer (its GitSideBand.mux is commented out)`,
  });
  record({
    id: 'pktline.sideband-demux.mbps',
    value: mbps(demuxInput.bytes.byteLength, medianOf('demux:gitport')),
    unit: 'MB/s',
    peer: 'isomorphic-git GitSideBand',
    peerValue: mbps(demuxInput.bytes.byteLength, medianOf('demux:iso')),
    better: 'higher',
    goal: { min: 1000, source: 'issue 2' },
    note: `65515-byte band-1 frames; ${note}`,
  });
});
