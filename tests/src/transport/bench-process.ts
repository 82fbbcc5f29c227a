/**
 * Child-process entry for benchmarks/transport.bench.ts: one side of the comparison, its main
 * thread and the worker thread it talks to (bench-peer.ts), in a process of its own. The first
 * argument says which side: `transport` (a bus over a MessageChannel, streams of
 * @gitport/transport) or `raw` (the minimal MessagePort sender with a credit window,
 * bench-shared.ts). The bench asks for each run over the IPC channel and gets back how long it
 * took, timed the same way for both: from the first message of the run to its checked answer.
 *
 * Why processes: sharing one made each side's figure depend on the other side and on the runner.
 * - The two senders' chunks came from one C allocator, and each receiver frees the chunks it read
 *   when its own collections run, often after its run is over: memory one side's receiver freed
 *   late went back to the system and was faulted in again by the other side's next run. The
 *   transport's 64 MiB runs took 1,100 to 3,700 page faults on the sending thread when they
 *   alternated with the raw sender's, 120 to 1,050 alone (three runs each way).
 * - Code on the bench runner's own thread runs through the runner's module loader, not as an
 *   application loads it: the transport's reader there (worker thread -> main thread) measured
 *   2.4 to 3.1 GB/s in three runs, and 3.9 to 4.3 GB/s in a process of its own.
 * Each side in a process of its own allocates, frees and collects only what it moved, in a bare
 * Node process as an application would run it.
 */
import { MessageChannel } from 'node:worker_threads';
import { type Bus, createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { startTsWorker } from '@gitport/test-helpers/ts-worker';
import { open } from '@gitport/transport';
import { benchSinkFor, checkAnswer, nodeRawPort, rawSender, readEveryByte, sendToSink } from './bench-shared.js';

/** Which side a bench process runs. */
export type BenchSide = 'transport' | 'raw';

/** One run the bench asks for: `streams` transfers of `total` bytes in `chunk`s at once. */
export interface BenchRun {
  run: number;
  /** The worker thread sends and the main thread reads (else the other way). */
  toMain: boolean;
  total: number;
  chunk: number;
  /** The receive window, the same on both sides. */
  window: number;
  streams: number;
}

/** The answer to a run: its time in milliseconds, or why it failed. */
export type BenchRunResult = { run: number; ms: number } | { run: number; error: string };

/** The bus peer name of the transport's worker thread. */
const PEER = 'bench-peer';
const PEER_ENTRY = new URL('./bench-peer.ts', import.meta.url);

const side = process.argv[2];
if (side !== 'transport' && side !== 'raw') throw new Error('bench-process takes the side to run: transport or raw');
if (process.send === undefined) throw new Error('bench-process runs as a child with an IPC channel');
const send = process.send.bind(process);

const channel = new MessageChannel();
const worker = startTsWorker(PEER_ENTRY, {
  workerData: side === 'transport' ? { id: PEER, busPort: channel.port2 } : { rawPort: channel.port2 },
  transferList: [channel.port2],
});
worker.on('error', (error) => {
  console.error(error);
  process.exit(1);
});

let once: (run: BenchRun) => Promise<void>;
let close: () => void;
if (side === 'transport') {
  const bus = createBus({ id: 'bench-main' });
  await bus.connect(nodeEndpoint(channel.port1));
  once = (run) =>
    run.toMain
      ? receiveTransport(bus, run.total, run.chunk)
      : sendToSink(bus, PEER, benchSinkFor(run.window), run.total, run.chunk);
  close = () => bus.close();
} else {
  const raw = rawSender(nodeRawPort(channel.port1));
  once = (run) =>
    run.toMain ? raw.receive(run.total, run.chunk, run.window) : raw.send(run.total, run.chunk, run.window);
  close = () => channel.port1.close();
}

/** The other way: ask the worker for `total` bytes in `chunk`s and read every byte. */
async function receiveTransport(bus: Bus, total: number, chunk: number): Promise<void> {
  const stream = await open(bus, PEER, 'bench-source');
  await stream.write(new TextEncoder().encode(JSON.stringify({ total, chunk })));
  await stream.end();
  let got = 0;
  let sum = 0;
  for await (const part of stream) {
    sum = (sum + readEveryByte(part)) | 0;
    got += part.byteLength;
  }
  checkAnswer({ total: got, sum }, total, chunk);
}

process.on('message', (run: BenchRun) => {
  const start = performance.now();
  Promise.all(Array.from({ length: run.streams }, () => once(run))).then(
    () => send({ run: run.run, ms: performance.now() - start } satisfies BenchRunResult),
    (error: unknown) => send({ run: run.run, error: String(error) } satisfies BenchRunResult),
  );
});
// The bench going away (its IPC channel closing) ends this process.
process.on('disconnect', () => {
  close();
  void worker.terminate().then(() => process.exit(0));
});
send('ready');
