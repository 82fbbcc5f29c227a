/**
 * In-browser figures (issue 9), in headless Chromium (/usr/bin/chromium, or GITPORT_CHROMIUM)
 * driven through tests/src/gitport/browser-bench.ts (the bench page tests/browser/bench/):
 *
 * - `browser.emitter.*`: gitport's emitter next to nanoevents, eventemitter3 and mitt on the
 *   page's main thread, the cases and method of emitter.bench.ts (emit with 1 listener, emit with
 *   10, on+off; interleaved rounds; each library's best round recorded, the ratio of medians in
 *   the note);
 * - `browser.transport.*`: @gitport/transport from the page to a Web Worker next to a minimal raw
 *   MessagePort sender with a credit window, the rules of transport.bench.ts (each chunk
 *   allocated, filled and transferred, the receiver reads every byte and answers a checksum that
 *   is checked, the same window on both sides, the two alternating), MB/s of the medians.
 *
 * (The clone between two Web Workers, `browser.clone.*`, is measured in clone.bench.ts beside
 * the Node clone.)
 */
import { bench } from 'vitest';
import { runBrowserPageBench, type TransportCase } from '../tests/src/gitport/browser-bench.js';
import { mbps, median, QUICK, record, sized } from './report.js';

const KiB = 1024;
const MiB = 1024 * 1024;
const OPS = sized(200_000, 2_000);
const ROUNDS = sized(25, 2);
const PEERS = ['nanoevents', 'eventemitter3', 'mitt'] as const;

const cases: (TransportCase & { label: string })[] = [
  {
    id: 'browser.transport.worker.64k',
    label: '64 KiB chunks',
    chunk: 64 * KiB,
    total: sized(64 * MiB, 2 * MiB),
    window: MiB,
    iterations: sized(15, 1),
    warmup: sized(2, 1),
  },
  {
    id: 'browser.transport.worker.1m',
    label: '1 MiB chunks',
    chunk: MiB,
    total: sized(128 * MiB, 4 * MiB),
    window: 4 * MiB,
    iterations: sized(15, 1),
    warmup: sized(2, 1),
  },
];

bench(
  'emitters and transport in headless Chromium',
  async () => {
    const outcome = await runBrowserPageBench({
      emitter: { ops: OPS, rounds: ROUNDS, warmup: sized(5, 1), minMs: sized(20, 2) },
      transport: cases.map(({ label: _label, ...c }) => c),
    });
    const browser = /HeadlessChrome\/[\d.]+/.exec(outcome.userAgent)?.[0] ?? outcome.userAgent;
    const quick = QUICK ? ' (quick)' : '';
    for (const id of ['emit-1', 'emit-10', 'on-off']) {
      const ours = outcome.emitter[`${id}:gitport`];
      if (!ours?.length) throw new Error(`no gitport rounds for ${id}`);
      for (const peer of PEERS) {
        const theirs = outcome.emitter[`${id}:${peer}`];
        if (!theirs?.length) throw new Error(`no ${peer} rounds for ${id}`);
        record({
          id: `browser.emitter.${id}.${peer}`,
          value: Math.max(...ours),
          unit: 'M ops/s',
          peer,
          peerValue: Math.max(...theirs),
          better: 'higher',
          note: `headless Chromium (${browser}), page main thread; best of ${ROUNDS} interleaved rounds (runs of ${OPS} operations repeated for ${sized(20, 2)} ms or more); ratio of medians ${(median(ours) / median(theirs)).toFixed(2)}${quick}`,
        });
      }
    }
    for (const c of cases) {
      const t = outcome.transport[c.id];
      if (!t?.transport.length || !t.raw.length) throw new Error(`no timed transfers for ${c.id}`);
      record({
        id: `${c.id}.mbps`,
        value: mbps(c.total, median(t.transport)),
        unit: 'MB/s',
        peer: 'raw MessagePort + credit window',
        peerValue: mbps(c.total, median(t.raw)),
        better: 'higher',
        note: `headless Chromium (${browser}), page -> Web Worker, ${c.label}, ${c.total / MiB} MiB per transfer, window ${c.window / KiB} KiB, each over its own MessageChannel port; median of ${t.transport.length} alternating transfers${quick}`,
      });
    }
  },
  { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 },
);
