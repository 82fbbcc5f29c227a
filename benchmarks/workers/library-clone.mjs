/**
 * A library clone between two worker threads of one Node process, as an app does it with the
 * built packages: one worker opens the repository (`openNodeRepository` of `gitport/node`:
 * reachability bitmaps on) and hosts it on the bus (`hostGit`), the other clones it bare into a
 * new directory on disk (`busRemote(...).clone(nodeFs(), ...)`, protocol v2) over a
 * MessageChannel between them:
 *
 *   node library-clone.mjs <git dir> <new dir>
 *
 * for benchmarks/scale.bench.ts's library-clone rows (next to `git clone --bare --no-local`).
 * Exits 0 once the clone is on disk and both workers are gone.
 *
 * The hosting worker gets a small young generation, as `hostGit`'s documentation advises (and
 * as the gateway's worker pool does for its repository workers): what serving allocates lives
 * in typed arrays, and V8 would otherwise grow that worker's young generation to tens of MB.
 * The cloning worker gets the one the remote's documentation (gitport's remote.ts) advises for a
 * thread that clones: a few MB, no smaller than the chunks a fetch has in flight need.
 */
import { MessageChannel, parentPort, Worker, workerData } from 'node:worker_threads';

if (parentPort === null) {
  const [source, dest] = process.argv.slice(2);
  if (!source || !dest) throw new Error('usage: library-clone.mjs <git dir> <new dir>');
  const { port1, port2 } = new MessageChannel();
  const start = (role, port, args, options = {}) => {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { role, port, ...args },
      transferList: [port],
      ...options,
    });
    const done = new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`${role} worker exited ${code}`)));
    });
    return { worker, done };
  };
  const hostWorker = start('host', port1, { source }, { resourceLimits: { maxYoungGenerationSizeMb: 2 } });
  await hostWorker.done;
  const client = start('client', port2, { dest }, { resourceLimits: { maxYoungGenerationSizeMb: 4 } });
  try {
    await client.done;
  } finally {
    await Promise.all([client.worker.terminate(), hostWorker.worker.terminate()]);
  }
} else {
  const { createBus } = await import('@gitport/bus');
  const { nodeEndpoint } = await import('@gitport/bus/node');
  const { busRemote, hostGit, nodeFs, openNodeRepository } = await import('gitport/node');
  const { role, port, source, dest } = workerData;
  const bus = createBus({ id: role });
  // the handshake completes once the other worker connects too
  const connected = bus.connect(nodeEndpoint(port));
  if (role === 'host') {
    const repository = await openNodeRepository(source);
    hostGit(bus, { scale: repository });
    parentPort.postMessage('ready');
    await connected;
  } else {
    await connected;
    await busRemote(bus, 'host', 'scale').clone(nodeFs(), dest);
    parentPort.postMessage('done');
  }
}
