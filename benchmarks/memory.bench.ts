/**
 * Memory rows of the reference transport report (../shared/reference/004_*.txt):
 *
 * - `memory.heap.*`: a ~5 MB pack (25 commits of 200 KB random blobs, the report's corpus)
 *   moved from one object store to another the way a fetch moves it: `createPack` streamed
 *   through side-band-64k framing (`SidebandMuxer`), read back with `PacketReader` +
 *   `demuxSideband`, and streamed into `importPack`. Sampled on every chunk:
 *   heapUsed + arrayBuffers + external (process.memoryUsage()); reported as the peak over the
 *   gc'd baseline, and what stays after gc (the received objects themselves).
 * - `memory.heap.fetch-*`: the same corpus cloned with the full protocol (`clone` against
 *   `serveUploadPack`) over a transport stream over the bus over a MessageChannel, both ends in
 *   this thread: the reference report's own setting for this row.
 * - `memory.leak.*`: the same create-pack-import cycle repeated into a fresh store each time,
 *   gc'd after each cycle; reported as growth from the first to the last sample (after two
 *   warm-up cycles) and as the least-squares slope per cycle.
 *
 * No peer ran these rows in the report's table, and none runs here (peer null).
 * Workers run with --expose-gc (benchmarks/vitest.config.ts).
 */
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import {
  createPack,
  importPack,
  MemoryObjectStore,
  type ObjectId,
  serializeCommit,
  serializeTree,
} from '@gitport/pack';
import { demuxSideband, PacketReader, SidebandMuxer } from '@gitport/pktline';
import { type Connection, clone, MemoryRefStore, serveUploadPack } from '@gitport/protocol';
import { prng } from '@gitport/tests/history';
import { type DuplexStream, listen, open } from '@gitport/transport';
import { bench, describe } from 'vitest';
import { writeSizeOf } from '../packages/gitport/src/host.js';
import { memoryBytes, QUICK, record, sized } from './report.js';

const COMMITS = sized(25, 3);
const BLOB_SIZE = sized(200 * 1024, 50 * 1024);
const CYCLES = sized(10, 3);
const WARMUP_CYCLES = sized(2, 1);
const MB = 1024 * 1024;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('memory benchmarks need --expose-gc (see benchmarks/vitest.config.ts)');

async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

async function buildCorpus(): Promise<{ store: MemoryObjectStore; head: ObjectId; objects: number }> {
  const store = new MemoryObjectStore();
  const random = prng(2026);
  const entries: { mode: string; name: string; oid: ObjectId; type: 'blob' }[] = [];
  let parent: ObjectId | undefined;
  for (let i = 0; i < COMMITS; i++) {
    const blob = new Uint8Array(BLOB_SIZE);
    for (let j = 0; j < blob.byteLength; j++) blob[j] = (random() * 256) | 0;
    entries.push({
      mode: '100644',
      name: `blob-${String(i).padStart(3, '0')}.bin`,
      oid: await store.write('blob', blob),
      type: 'blob',
    });
    const tree = await store.write('tree', serializeTree(entries));
    const person = {
      name: 'bench',
      email: 'bench@gitport.invalid',
      timestamp: 1_700_000_000 + i * 60,
      timezone: '+0000',
    };
    parent = await store.write(
      'commit',
      serializeCommit({
        tree,
        parents: parent ? [parent] : [],
        author: person,
        committer: person,
        extraHeaders: [],
        message: `commit ${i}\n`,
      }),
    );
  }
  return { store, head: parent!, objects: store.size };
}

/**
 * An in-memory wire with flow control: `write` waits while `capacity` frames are queued (as a
 * transport with a credit window does); `cancel` releases a writer whose reader has stopped.
 */
function wire(capacity = 8) {
  const queue: Uint8Array[] = [];
  let ended = false;
  let cancelled = false;
  let wakeReader: (() => void) | undefined;
  let wakeWriter: (() => void) | undefined;
  return {
    async write(bytes: Uint8Array): Promise<void> {
      while (queue.length >= capacity && !cancelled) {
        await new Promise<void>((resolve) => {
          wakeWriter = resolve;
        });
      }
      if (cancelled) return;
      queue.push(bytes);
      wakeReader?.();
    },
    end(): void {
      ended = true;
      wakeReader?.();
    },
    cancel(): void {
      cancelled = true;
      queue.length = 0;
      wakeWriter?.();
    },
    readable: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const next = queue.shift();
          if (next) {
            wakeWriter?.();
            yield next;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => {
            wakeReader = resolve;
          });
        }
      },
    } as AsyncIterable<Uint8Array>,
  };
}

/**
 * One fetch-shaped transfer: the sender muxes the pack into side-band frames chunk by chunk, the
 * receiver demuxes and imports it as it arrives.
 */
async function transfer(source: MemoryObjectStore, head: ObjectId, sample?: () => void) {
  const target = new MemoryObjectStore();
  const line = wire();
  let packBytes = 0;
  const muxer = new SidebandMuxer((frame) => line.write(frame));
  const send = (async () => {
    for await (const chunk of createPack(source, { wants: [head] })) {
      packBytes += chunk.byteLength;
      await muxer.data(chunk);
      sample?.();
    }
    await muxer.flush();
    line.end();
  })();
  const reader = new PacketReader(line.readable);
  async function* received() {
    for await (const bytes of demuxSideband(reader)) {
      sample?.();
      yield bytes;
    }
  }
  const result = await importPack(target, received()).finally(() => line.cancel());
  await send;
  if (target.size !== source.size || result.objects.length !== source.size) {
    throw new Error(`transfer incomplete: ${target.size} of ${source.size} objects`);
  }
  return { target, packBytes };
}

/**
 * A protocol Connection over a transport stream, wired as gitport's host wires it
 * (packages/gitport/src/host.ts): writes keep their `transfer` option, so the side-band frame
 * groups upload-pack gives up move to the reader instead of being copied, and the write size is
 * a quarter of the reader's window. `sample` runs on every chunk received.
 */
function connection(stream: DuplexStream, sample?: () => void): Connection {
  const input: AsyncIterable<Uint8Array> = sample
    ? {
        async *[Symbol.asyncIterator]() {
          for await (const chunk of stream) {
            sample();
            yield chunk;
          }
        },
      }
    : stream;
  return {
    input,
    write: (bytes, options) => stream.write(bytes, options),
    end: () => stream.end(),
    writeSize: writeSizeOf(stream),
  };
}

/** A clone of `head` over gitport's whole stack (protocol, pktline, transport, bus), one thread. */
async function fetchOverBus(source: MemoryObjectStore, head: ObjectId, sample: () => void) {
  const channel = new MessageChannel();
  const server = createBus({ id: 'server' });
  const client = createBus({ id: 'client' });
  try {
    await Promise.all([server.connect(nodeEndpoint(channel.port1)), client.connect(nodeEndpoint(channel.port2))]);
    const repo = {
      objects: source,
      refs: new MemoryRefStore({ refs: { 'refs/heads/main': head }, head: 'refs/heads/main' }),
    };
    const served: Promise<void>[] = [];
    const stop = listen(server, 'git-upload-pack', (stream) => {
      served.push(serveUploadPack(repo, connection(stream)));
    });
    const local = { objects: new MemoryObjectStore(), refs: new MemoryRefStore() };
    const timer = setInterval(sample, 1);
    try {
      const stream = await open(client, 'server', 'git-upload-pack');
      await clone(local, { connection: connection(stream, sample) });
      await Promise.all(served);
    } finally {
      clearInterval(timer);
      stop();
    }
    sample();
    if (local.objects.size !== source.size || (await local.refs.resolve('refs/heads/main')) !== head) {
      throw new Error(`clone incomplete: ${local.objects.size} of ${source.size} objects`);
    }
    return local;
  } finally {
    client.close();
    server.close();
    channel.port1.close();
    channel.port2.close();
  }
}

const corpus = await buildCorpus();

describe(`memory: ${COMMITS} commits of ${BLOB_SIZE / 1024} KB random blobs${QUICK ? ' (quick)' : ''}`, () => {
  bench(
    'transfer: peak heapUsed + arrayBuffers + external over the baseline',
    async () => {
      await settle();
      const baseline = memoryBytes();
      let peak = baseline;
      const sample = () => {
        const now = memoryBytes();
        if (now > peak) peak = now;
      };
      const { target, packBytes } = await transfer(corpus.store, corpus.head, sample);
      sample();
      await settle();
      const retained = memoryBytes() - baseline;
      record({
        id: 'memory.heap.transfer-peak.mb',
        value: (peak - baseline) / MB,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        goal: { max: 50, source: 'reference report 004' },
        note: `peak over the gc'd baseline while moving a ${(packBytes / MB).toFixed(2)} MiB pack (${corpus.objects} objects) through side-band framing into a second store`,
      });
      record({
        id: 'memory.heap.transfer-retained.mb',
        value: retained / MB,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `after gc, with the receiving store (${target.size} objects, ${((COMMITS * BLOB_SIZE) / MB).toFixed(1)} MiB of blobs) still alive`,
      });
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );

  bench(
    'fetch over MessagePort, full protocol: peak over the baseline',
    async () => {
      await settle();
      const baseline = memoryBytes();
      let peak = baseline;
      const local = await fetchOverBus(corpus.store, corpus.head, () => {
        const now = memoryBytes();
        if (now > peak) peak = now;
      });
      await settle();
      const retained = memoryBytes() - baseline;
      record({
        id: 'memory.heap.fetch-peak.mb',
        value: (peak - baseline) / MB,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        goal: { max: 50, source: 'reference report 004' },
        note: `clone of ${corpus.objects} objects (${((COMMITS * BLOB_SIZE) / MB).toFixed(1)} MiB of random blobs) through protocol, transport and bus over a MessageChannel in one thread; sampled on every chunk the client receives, every millisecond, and after`,
      });
      record({
        id: 'memory.heap.fetch-retained.mb',
        value: retained / MB,
        unit: 'MB',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `after gc, with the clone (${local.objects.size} objects) still alive`,
      });
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );

  bench(
    `leak check: ${CYCLES} create-pack-import cycles`,
    async () => {
      const samples: number[] = [];
      for (let i = 0; i < WARMUP_CYCLES + CYCLES; i++) {
        await transfer(corpus.store, corpus.head);
        await settle();
        if (i >= WARMUP_CYCLES) samples.push(memoryBytes());
      }
      const first = samples[0]!;
      const last = samples.at(-1)!;
      const n = samples.length;
      const meanX = (n - 1) / 2;
      const meanY = samples.reduce((a, b) => a + b, 0) / n;
      let num = 0;
      let den = 0;
      samples.forEach((y, x) => {
        num += (x - meanX) * (y - meanY);
        den += (x - meanX) ** 2;
      });
      const slope = den === 0 ? 0 : num / den;
      const spread = ((Math.max(...samples) - Math.min(...samples)) / meanY) * 100;
      const trace = samples.map((s) => (s / MB).toFixed(1)).join(' → ');
      record({
        id: 'memory.leak.growth.pct',
        value: ((last - first) / first) * 100,
        unit: '%',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `first to last of ${n} gc'd samples (MiB: ${trace}); spread ${spread.toFixed(1)}%; the reference report saw 3.5% variance over 5 cycles`,
      });
      record({
        id: 'memory.leak.slope.kb-per-cycle',
        value: slope / 1024,
        unit: 'KB/cycle',
        peer: null,
        peerValue: null,
        better: 'lower',
        note: `least-squares slope over ${n} cycles`,
      });
    },
    { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
  );
});
