/**
 * The primitives behind pack import, measured to choose the runtime paths (issue 5): inflating a
 * real pack's entries one by one, and SHA-1 of object-sized inputs.
 *
 * - inflate: the entries of the seeded history's pack (git's own deltas and objects), each a
 *   separate zlib stream: node:zlib `inflateSync` per entry (a fresh zlib context each time),
 *   gitport's Node path (one native context reused), gitport's web path (its own inflate, one
 *   context reset per entry), pako's `Inflate` per entry (an earlier web default), pako's bare
 *   low-level loop with one context reset per entry (the web path before it), and the web path's alternatives: fflate's
 *   `inflateSync` (given the output size; it cannot say where a stream ended, which the pack
 *   reader needs) and the platform's `DecompressionStream` (asynchronous, one stream per entry).
 * - deflate of the same entries' data: gitport's web deflate (fflate's `zlibSync`) against
 *   pako's `deflate` (the former web deflate).
 * - SHA-1 of 200-byte objects: node:crypto `hash()` (one shot, what gitport uses on Node),
 *   `createHash()`, and gitport's JavaScript SHA-1 (the web default).
 */
import { execFileSync } from 'node:child_process';
import { createHash, hash } from 'node:crypto';
import { createRequire } from 'node:module';
import { inflateSync } from 'node:zlib';
import { PackReader } from '@gitport/pack';
import { afterAll, bench, describe } from 'vitest';
import * as webSha1 from '../packages/pack/src/sha1.js';
import * as webZlib from '../packages/pack/src/zlib.js';
import * as nodeZlib from '../packages/pack/src/zlib.node.js';
import { ensureHistory } from '../tests/src/history.js';
import { mbps, median, record, sized } from './report.js';

const packRequire = createRequire(new URL('../packages/pack/package.json', import.meta.url));
const pako = packRequire('pako') as {
  Inflate: new (options: {
    chunkSize: number;
  }) => { push(input: Uint8Array, final: boolean): void; result: Uint8Array };
  deflate(data: Uint8Array, options: { level: number }): Uint8Array;
};
const fflate = packRequire('fflate') as {
  inflateSync(data: Uint8Array, options: { out: Uint8Array }): Uint8Array;
};

const history = await ensureHistory({
  commits: sized(3000, 60),
  seed: 1,
  largeEvery: sized(600, 0),
  largeSize: 2 * 1024 * 1024,
});
const pack = new Uint8Array(
  execFileSync(
    'git',
    ['--git-dir', history.gitDir, 'pack-objects', '--revs', '--all', '--stdout', '-q', '--delta-base-offset'],
    { input: '', maxBuffer: 1 << 30 },
  ),
);
const entries: { input: Uint8Array; size: number }[] = [];
for await (const e of new PackReader([pack]).entries())
  entries.push({ input: pack.subarray(e.dataOffset, e.end), size: e.size });
const inflatedBytes = entries.reduce((n, e) => n + e.size, 0);
const compressedBytes = entries.reduce((n, e) => n + e.input.length, 0);

const options = { iterations: sized(5, 1), warmupIterations: sized(1, 0), time: 0, warmupTime: 0 };
const times = new Map<string, number[]>();
const timed = (name: string, fn: () => void) => () => {
  const start = performance.now();
  fn();
  const list = times.get(name) ?? [];
  list.push(performance.now() - start);
  times.set(name, list);
};
const medianOf = (name: string) => median(times.get(name) ?? [], name);
const check = (got: number) => {
  if (got !== inflatedBytes) throw new Error(`inflated ${got} bytes, expected ${inflatedBytes}`);
};

describe('pack entries: inflate one by one', () => {
  bench(
    'node:zlib inflateSync per entry',
    timed('inflateSync', () => {
      let n = 0;
      for (const e of entries) n += inflateSync(e.input, { maxOutputLength: Math.max(1, e.size) }).length;
      check(n);
    }),
    options,
  );
  bench(
    'gitport Node path (reused native context)',
    timed('reused', () => {
      let n = 0;
      for (const e of entries) {
        const r = nodeZlib.inflateOne(e.input, e.size, true);
        if (r.kind === 'done') n += r.data.length;
      }
      check(n);
    }),
    options,
  );
  bench(
    'gitport web path (own inflate, one context reset per entry)',
    timed('web', () => {
      let n = 0;
      for (const e of entries) {
        const r = webZlib.inflateOne(e.input, e.size, true);
        if (r.kind === 'done') n += r.data.length;
      }
      check(n);
    }),
    options,
  );
  bench(
    'pako Inflate per entry (an earlier web default)',
    timed('pako', () => {
      let n = 0;
      for (const e of entries) {
        const inflator = new pako.Inflate({ chunkSize: Math.max(1024, Math.min(e.size + 1, 1 << 20)) });
        inflator.push(e.input, false);
        n += inflator.result.length;
      }
      check(n);
    }),
    options,
  );
  bench(
    'fflate inflateSync per entry (output size given)',
    timed('fflate', () => {
      let n = 0;
      // a raw deflate stream after the two-byte zlib header; fflate stops at its last block
      for (const e of entries) n += fflate.inflateSync(e.input.subarray(2), { out: new Uint8Array(e.size) }).length;
      check(n);
    }),
    options,
  );
  bench(
    'DecompressionStream per entry',
    async () => {
      const start = performance.now();
      let n = 0;
      for (const e of entries) {
        const stream = new Blob([e.input as Uint8Array<ArrayBuffer>])
          .stream()
          .pipeThrough(new DecompressionStream('deflate'));
        n += (await new Response(stream).arrayBuffer()).byteLength;
      }
      check(n);
      const list = times.get('decompression-stream') ?? [];
      list.push(performance.now() - start);
      times.set('decompression-stream', list);
    },
    // an order of magnitude slower than the others: fewer rounds keep the file within its time
    { ...options, iterations: sized(2, 1), warmupIterations: 0 },
  );
});

/** The inflated data of the same entries (deltas as they are), what a pack writer deflates. */
const raw = entries.map((e) => {
  const r = webZlib.inflateOne(e.input, e.size, true);
  if (r.kind !== 'done') throw new Error('entry did not inflate');
  return r.data.slice();
});

describe('pack entries: deflate one by one (level 6)', () => {
  bench(
    'gitport web deflate (fflate zlibSync)',
    timed('deflate-web', () => {
      for (const data of raw) webZlib.deflate(data);
    }),
    options,
  );
  bench(
    'pako deflate (former web deflate)',
    timed('deflate-pako', () => {
      for (const data of raw) pako.deflate(data, { level: 6 });
    }),
    options,
  );
});

/** pako's low-level inflate (one context, reset per entry): the web path before gitport's own inflate. */
interface PakoStream {
  input: Uint8Array;
  next_in: number;
  avail_in: number;
  output: Uint8Array;
  next_out: number;
  avail_out: number;
}
const pakoRequire = createRequire(new URL('../packages/pack/package.json', import.meta.url));
const pakoInflate = pakoRequire('pako/lib/zlib/inflate.js') as {
  inflateInit(s: PakoStream): number;
  inflateReset(s: PakoStream): number;
  inflate(s: PakoStream, flush: number): number;
};
const PakoZStream = pakoRequire('pako/lib/zlib/zstream.js') as new () => PakoStream;

describe('pack entries: pako with one reused context', () => {
  bench(
    'pako low-level inflate, context reset per entry',
    timed('pako-reused', () => {
      const strm = new PakoZStream();
      pakoInflate.inflateInit(strm);
      let n = 0;
      for (const e of entries) {
        pakoInflate.inflateReset(strm);
        const out = new Uint8Array(e.size + 1);
        strm.input = e.input;
        strm.next_in = 0;
        strm.avail_in = e.input.length;
        strm.output = out;
        strm.next_out = 0;
        strm.avail_out = out.length;
        if (pakoInflate.inflate(strm, 4) !== 1) throw new Error('pako: stream did not end');
        n += strm.next_out;
      }
      check(n);
    }),
    options,
  );
});

const objects = Array.from({ length: sized(200_000, 5_000) }, (_, i) => {
  const b = new Uint8Array(200);
  b[0] = i & 255;
  b[1] = i >> 8;
  return b;
});
describe('SHA-1 of 200-byte objects', () => {
  bench(
    'node:crypto hash() one shot',
    timed('hash', () => {
      for (const o of objects) hash('sha1', o, 'buffer');
    }),
    options,
  );
  bench(
    'node:crypto createHash()',
    timed('createHash', () => {
      for (const o of objects) createHash('sha1').update(o).digest();
    }),
    options,
  );
  bench(
    'gitport JavaScript SHA-1 (web default)',
    timed('js', () => {
      for (const o of objects) webSha1.sha1(o);
    }),
    options,
  );
});

afterAll(() => {
  const note = `${entries.length} entries of the seeded history's pack, ${(compressedBytes / 1e6).toFixed(1)} MB compressed, ${(inflatedBytes / 1e6).toFixed(1)} MB inflated`;
  record({
    id: 'pack.import.inflate.node.mbps',
    value: mbps(inflatedBytes, medianOf('reused')),
    unit: 'MB/s',
    peer: 'node:zlib inflateSync per entry',
    peerValue: mbps(inflatedBytes, medianOf('inflateSync')),
    better: 'higher',
    note: `inflated MB/s, gitport's reused native context; ${note}`,
  });
  record({
    id: 'pack.import.inflate.web.mbps',
    value: mbps(inflatedBytes, medianOf('web')),
    unit: 'MB/s',
    peer: 'node:zlib inflateSync per entry',
    peerValue: mbps(inflatedBytes, medianOf('inflateSync')),
    better: 'higher',
    note: `inflated MB/s, gitport's web path (its own inflate, one context reset per entry); ${note}`,
  });
  record({
    id: 'pack.import.inflate.web-reused.mbps',
    value: mbps(inflatedBytes, medianOf('web')),
    unit: 'MB/s',
    peer: 'pako Inflate per entry',
    peerValue: mbps(inflatedBytes, medianOf('pako')),
    better: 'higher',
    note: `inflated MB/s, gitport's web path (its own inflate, one context reset per entry) vs a new pako Inflate per entry (an earlier web default); ${note}`,
  });
  record({
    id: 'pack.import.inflate.web-vs-pako-lowlevel.mbps',
    value: mbps(inflatedBytes, medianOf('web')),
    unit: 'MB/s',
    peer: 'pako low-level inflate, one context reset per entry',
    peerValue: mbps(inflatedBytes, medianOf('pako-reused')),
    better: 'higher',
    note: `inflated MB/s, gitport's web path (its own inflate, which reports the input each stream used) vs pako's bare low-level loop (the web path before it, larger in a bundle); ${note}`,
  });
  record({
    id: 'pack.import.inflate.web-vs-fflate.mbps',
    value: mbps(inflatedBytes, medianOf('web')),
    unit: 'MB/s',
    peer: 'fflate inflateSync per entry',
    peerValue: mbps(inflatedBytes, medianOf('fflate')),
    better: 'higher',
    note: `inflated MB/s, gitport's web path (its own inflate, reports the input each stream used) vs fflate given each output size (cannot say where a stream ended); ${note}`,
  });
  record({
    id: 'pack.import.inflate.web-vs-decompression-stream.mbps',
    value: mbps(inflatedBytes, medianOf('web')),
    unit: 'MB/s',
    peer: 'DecompressionStream per entry (Node)',
    peerValue: mbps(inflatedBytes, medianOf('decompression-stream')),
    better: 'higher',
    note: `inflated MB/s, gitport's web path vs the platform's asynchronous DecompressionStream('deflate'), one per entry; ${note}`,
  });
  const rawBytes = raw.reduce((n, data) => n + data.length, 0);
  record({
    id: 'pack.create.deflate.web.mbps',
    value: mbps(rawBytes, medianOf('deflate-web')),
    unit: 'MB/s',
    peer: 'pako deflate per entry',
    peerValue: mbps(rawBytes, medianOf('deflate-pako')),
    better: 'higher',
    note: `input MB/s at level 6, gitport's web deflate (fflate zlibSync) vs pako's deflate (the former web deflate); ${note}`,
  });
  const perSecond = (name: string) => objects.length / (medianOf(name) / 1000);
  record({
    id: 'pack.import.sha1.node.objects-per-s',
    value: perSecond('hash'),
    unit: 'objects/s',
    peer: 'node:crypto createHash',
    peerValue: perSecond('createHash'),
    better: 'higher',
    note: 'SHA-1 of 200-byte inputs, crypto.hash one shot (gitport on Node)',
  });
  record({
    id: 'pack.import.sha1.web.objects-per-s',
    value: perSecond('js'),
    unit: 'objects/s',
    peer: 'node:crypto createHash',
    peerValue: perSecond('createHash'),
    better: 'higher',
    note: 'SHA-1 of 200-byte inputs, gitport JavaScript SHA-1 (the web default)',
  });
});
