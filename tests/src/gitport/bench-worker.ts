/**
 * A worker thread for the clone benchmarks: it joins the bus over the MessagePort it is given
 * (`workerData.port`) and obeys `{ id, command, args }` from its parent:
 *
 *   host { root }                    host every bare repository under root
 *   clone { peer, name, dir, sampleMemory? }  one bare gitport clone; answers { ms, packBytes,
 *                                    peakBytes, baseBytes } (with sampleMemory: heapUsed +
 *                                    arrayBuffers + external of this thread, sampled every
 *                                    millisecond and at every progress event)
 *   cycles { peer, name, dir, count } `count` clones in a row, each deleted and gc'd after;
 *                                    answers the memory after each cycle
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { host, remote } from 'gitport';
import { nodeFs, nodeRepositories } from 'gitport/node';

const { port, id } = workerData as { port: MessagePort; id: string };
const bus = createBus({ id });
const ready = bus.connect(nodeEndpoint(port));
const gc = (globalThis as { gc?: () => void }).gc;

const memory = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers + m.external;
};

async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

async function packBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(`${dir}/objects/pack`)) {
    if (name.endsWith('.pack')) total += (await stat(`${dir}/objects/pack/${name}`)).size;
  }
  return total;
}

async function cloneOnce(peer: string, name: string, dir: string, sampleMemory: boolean) {
  await settle();
  const baseBytes = memory();
  let peakBytes = baseBytes;
  const sample = () => {
    const now = memory();
    if (now > peakBytes) peakBytes = now;
  };
  // Sampling costs time: only the memory runs sample (every millisecond and at every progress event).
  const timer = sampleMemory ? setInterval(sample, 1) : undefined;
  const start = performance.now();
  try {
    await remote(bus, peer, name).clone(nodeFs(), dir, sampleMemory ? { onProgress: sample } : {});
  } finally {
    clearInterval(timer);
  }
  const ms = performance.now() - start;
  sample();
  return { ms, packBytes: await packBytes(dir), peakBytes, baseBytes };
}

const commands: Record<string, (args: Record<string, unknown>) => Promise<unknown>> = {
  async host(args) {
    host(bus, nodeRepositories(args.root as string));
    return true;
  },
  async clone(args) {
    return cloneOnce(args.peer as string, args.name as string, args.dir as string, args.sampleMemory === true);
  },
  async cycles(args) {
    const samples: number[] = [];
    for (let i = 0; i < (args.count as number); i++) {
      const dir = `${args.dir as string}-${i}`;
      await remote(bus, args.peer as string, args.name as string).clone(nodeFs(), dir);
      await rm(dir, { recursive: true, force: true });
      await settle();
      samples.push(memory());
    }
    return samples;
  },
};

parentPort!.on('message', async (message: { id: number; command: string; args: Record<string, unknown> }) => {
  try {
    await ready;
    const handler = commands[message.command];
    if (!handler) throw new Error(`unknown command ${message.command}`);
    parentPort!.postMessage({ id: message.id, result: await handler(message.args) });
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: String((error as Error).stack ?? error) });
  }
});
