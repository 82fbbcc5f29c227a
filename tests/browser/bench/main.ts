/**
 * Browser benchmark page, driven by tests/src/gitport/browser-bench.ts:
 * - `window.runCloneBench(options)`: a host worker and a client worker joined by a MessageChannel,
 *   driven from this page over the bus; answers the clone timings;
 * - `window.runEmitterBench(options)`: the emitters on this page's main thread (emitter.ts);
 * - `window.runTransportBench(cases)`: the transport from this page to a Web Worker (transport.ts).
 */
import { createBus, workerEndpoint } from '@gitport/bus';
import { runEmitterBench } from './emitter.js';
import { runTransportBench } from './transport.js';

interface Options {
  commits: number;
  size: number;
  runs: number;
  warmup: number;
  /** The host's repository packed, as `git repack -adq` leaves the Node clone's (default); false: loose objects. */
  packed?: boolean;
}

async function runCloneBench(options: Options) {
  const hostWorker = new Worker(new URL('./host.worker.ts', import.meta.url), { type: 'module' });
  const clientWorker = new Worker(new URL('./client.worker.ts', import.meta.url), { type: 'module' });
  const main = createBus({ id: 'main' });
  try {
    await main.connect(workerEndpoint(hostWorker));
    await main.connect(workerEndpoint(clientWorker));
    const channel = new MessageChannel();
    hostWorker.postMessage({ type: 'port', port: channel.port1 }, [channel.port1]);
    clientWorker.postMessage({ type: 'port', port: channel.port2 }, [channel.port2]);
    const head = await main.request<string>(
      'host',
      'corpus',
      { commits: options.commits, size: options.size, packed: options.packed ?? true },
      { timeout: 300_000 },
    );
    const out: Record<string, { ms: number; packBytes: number }[]> = {};
    for (const storage of ['memory', 'opfs'] as const) {
      const all = await main.request<{ ms: number; packBytes: number }[]>(
        'client',
        'clones',
        { storage, runs: options.runs + options.warmup, expect: head },
        { timeout: 600_000 },
      );
      out[storage] = all.slice(options.warmup);
    }
    return { userAgent: navigator.userAgent, results: out };
  } finally {
    main.close();
    hostWorker.terminate();
    clientWorker.terminate();
  }
}

Object.assign(window, { runCloneBench, runEmitterBench, runTransportBench });
document.title = 'ready';
