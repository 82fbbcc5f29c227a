/**
 * Clone over smart HTTP from the gitport gateway (`gitport serve`, the built bin, one repository
 * worker), with gitport's HTTP remote next to the clients a user would pick instead, in one run,
 * on the clone bench's two corpora (the reference corpus: commits each adding a 50 KB random
 * blob; the seeded realistic history):
 *
 * - Node: `remote(url).clone(nodeFs(), dir)` (bare) in this process, next to `git clone --bare`
 *   and isomorphic-git's `clone` (noCheckout) over `isomorphic-git/http/node`, from the same
 *   gateway. Wall time (median), and the client's CPU-seconds: this process's user + system for
 *   gitport, the command's process tree for git (under bash's `time`), with git's peak RssAnon;
 * - Chromium: a module Web Worker on another origin (CORS) cloning into a MemoryFs and into OPFS,
 *   gitport's remote next to isomorphic-git's `clone` over `isomorphic-git/http/web` into the
 *   same fs (tests/src/http-remote/browser-page.ts);
 * - Node over a network round trip: the same clones through a proxy that holds every request
 *   for RTT_MS (tests/src/http-remote/front-proxy.ts), where the number of round trips a clone
 *   takes in a row shows (gitport: the discovery GET and ls-refs together, then the fetch);
 * - push-to-notify latency: a `git push` of one commit through the gateway until the browser
 *   worker's `watch()` hears it in `onUpdate`, from the spawn of the command to the worker's
 *   clock (the machine's one clock), p50 and p99 over a series of pushes; the peer is the same
 *   push's command alone (spawn to exit).
 */

import * as nodeFsModule from 'node:fs';
import { rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import { downloadClonePack } from '@gitport/test-helpers/clone-download';
import type { GitSandbox } from '@gitport/test-helpers/git';
import { remote } from 'gitport';
import { nodeFs } from 'gitport/node';
import git from 'isomorphic-git';
import isoHttp from 'isomorphic-git/http/node';
import { afterAll, bench, describe } from 'vitest';
import { type ServeProcess, startServe } from '../tests/src/gateway/serve-process.js';
import { type HttpRemotePage, openHttpRemotePage } from '../tests/src/http-remote/browser-page.js';
import { type FrontProxy, startFrontProxy } from '../tests/src/http-remote/front-proxy.js';
import { cloneCorpora, packBytes } from './corpora.js';
import { runCommand } from './process-tree.js';
import { mbps, median, QUICK, record, sized } from './report.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
const MB = 1e6;
const RUNS = sized(5, 1);
const ISO_RUNS = sized(2, 1);
const PUSHES = sized(100, 5);
/** The round trip the proxy adds to every request. */
const RTT_MS = 20;
const quick = QUICK ? ' (quick)' : '';
const corpora = [
  { name: 'reference', label: `${sized(40, 10)} commits of 50 KB random blobs` },
  { name: 'history', label: `ensureHistory({ commits: ${sized(1500, 100)}, seed: 1 })` },
] as const;

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

describe('clone over HTTP from the gateway', () => {
  let sandbox: GitSandbox;
  let page: HttpRemotePage;
  let serve: ServeProcess;
  let ready: Promise<void> | undefined;
  let n = 0;
  const fresh = (label: string) => sandbox.path('clones', `${label}-${n++}`);
  const url = (name: string) => `${serve.url}/${name}.git`;
  const headOf = (name: string) => sandbox.git(['--git-dir', sandbox.path('root', `${name}.git`), 'rev-parse', 'HEAD']);

  const setup = () =>
    (ready ??= (async () => {
      let root: string;
      ({ sandbox, root } = await cloneCorpora('gitport-bench-http-remote-'));
      await sandbox.git(['init', '-q', '--bare', `${root}/live.git`]);
      page = await openHttpRemotePage();
      serve = await startServe(
        ['--root', root, '--port', '0', '--workers', '1', '--allow-anonymous-push', '--cors', page.origin],
        true,
      );
    })());

  let slow: FrontProxy | undefined;

  afterAll(async () => {
    await slow?.close();
    await page?.close();
    serve?.child.kill('SIGTERM');
    await serve?.exit;
    await sandbox?.cleanup();
  });

  bench(
    'in Node: gitport remote(url) vs git clone vs isomorphic-git',
    async () => {
      await setup();
      for (const corpus of corpora) {
        const head = await headOf(corpus.name);
        const ours: { ms: number; cpuMs: number }[] = [];
        const gits: { ms: number; cpuMs: number; peakBytes: number }[] = [];
        let bytes = 0;
        for (let i = 0; i < RUNS + 1; i++) {
          const dir = fresh(`gitport-${corpus.name}`);
          const cpu = process.cpuUsage();
          const start = performance.now();
          const repo = await remote(url(corpus.name)).clone(nodeFs(), dir);
          const ms = performance.now() - start;
          const used = process.cpuUsage(cpu);
          if ((await repo.refs.resolve('HEAD')) !== head) throw new Error('gitport: clone incomplete');
          bytes = await packBytes(dir);
          await rm(dir, { recursive: true, force: true });
          const theirDir = fresh(`git-${corpus.name}`);
          const cost = await runCommand(['git', 'clone', '--bare', '-q', url(corpus.name), theirDir]);
          if ((await sandbox.git(['--git-dir', theirDir, 'rev-parse', 'HEAD'])) !== head)
            throw new Error('git: clone incomplete');
          await rm(theirDir, { recursive: true, force: true });
          if (i === 0) continue; // warm-up of both
          ours.push({ ms, cpuMs: (used.user + used.system) / 1000 });
          gits.push({ ms: cost.wallMs, cpuMs: cost.cpuMs, peakBytes: cost.peakBytes });
        }
        const downloads: number[] = [];
        for (let i = 0; i < RUNS + 1; i++) {
          const start = performance.now();
          await downloadClonePack(url(corpus.name), head);
          if (i > 0) downloads.push(performance.now() - start);
        }
        const iso: number[] = [];
        for (let i = 0; i < ISO_RUNS + 1; i++) {
          const dir = fresh(`iso-${corpus.name}`);
          const start = performance.now();
          await git.clone({ fs: nodeFsModule, http: isoHttp, dir, url: url(corpus.name), noCheckout: true });
          if (i > 0) iso.push(performance.now() - start); // the first is a warm-up, as for the others
          if ((await git.resolveRef({ fs: nodeFsModule, dir, ref: 'HEAD' })) !== head) {
            throw new Error('isomorphic-git: clone incomplete');
          }
          await rm(dir, { recursive: true, force: true });
        }
        const oursMs = median(ours.map((c) => c.ms));
        const note = `${corpus.label}, ${(bytes / MB).toFixed(2)} MB pack, bare clone from gitport serve (one repository worker) on this machine (${cpus().length} cores); median of ${RUNS} after a warm-up (isomorphic-git: ${ISO_RUNS} after its own warm-up); git and isomorphic-git timed around the command/call${quick}`;
        record({
          id: `clone.http.${corpus.name}.ms`,
          value: oursMs,
          unit: 'ms',
          peer: 'git clone --bare over HTTP (same gateway)',
          peerValue: median(gits.map((c) => c.ms)),
          better: 'lower',
          goal: { max: 1.5, on: 'ratio', source: 'issue 29' },
          note,
        });
        record({
          id: `clone.http.${corpus.name}.vs-isomorphic-git.ms`,
          value: oursMs,
          unit: 'ms',
          peer: 'isomorphic-git clone (isomorphic-git/http/node)',
          peerValue: median(iso),
          better: 'lower',
          note,
        });
        record({
          id: `clone.http.${corpus.name}.vs-download.ms`,
          value: oursMs,
          unit: 'ms',
          peer: 'the same pack downloaded alone (fetch, read to the end, dropped)',
          peerValue: median(downloads),
          better: 'lower',
          note: `what the clone adds to the server's response time (its v2 fetch of HEAD's commit, no haves, with global fetch); ${note}`,
        });
        record({
          id: `clone.http.${corpus.name}.cpu-s`,
          value: median(ours.map((c) => c.cpuMs)) / 1000,
          unit: 'CPU-s',
          peer: 'git clone --bare over HTTP (same gateway)',
          peerValue: median(gits.map((c) => c.cpuMs)) / 1000,
          better: 'lower',
          note: `client CPU-seconds (user + system): this process for gitport, git's process tree (clone, index-pack, remote-http) for git; the gateway's not counted; ${note}`,
        });
        record({
          id: `clone.http.${corpus.name}.git-peak-mb`,
          value: Math.max(...gits.map((c) => c.peakBytes)) / MB,
          unit: 'MB',
          peer: null,
          peerValue: null,
          better: 'lower',
          note: `git clone's peak RssAnon (process tree), for scale: gitport's clone runs inside this benchmark process; ${note}`,
        });
      }
    },
    once,
  );

  bench(
    `in Node over a ${RTT_MS} ms round trip: gitport remote(url) vs git clone vs isomorphic-git`,
    async () => {
      await setup();
      slow = await startFrontProxy(serve.url, { delayMs: RTT_MS });
      const corpus = corpora[0];
      const target = `${slow.url}/${corpus.name}.git`;
      const head = await headOf(corpus.name);
      const ours: number[] = [];
      const gits: number[] = [];
      const iso: number[] = [];
      for (let i = 0; i < RUNS + 1; i++) {
        const dir = fresh(`rtt-gitport-${corpus.name}`);
        let start = performance.now();
        const repo = await remote(target).clone(nodeFs(), dir);
        const ms = performance.now() - start;
        if ((await repo.refs.resolve('HEAD')) !== head) throw new Error('gitport: clone incomplete');
        await rm(dir, { recursive: true, force: true });
        const theirDir = fresh(`rtt-git-${corpus.name}`);
        const cost = await runCommand(['git', 'clone', '--bare', '-q', target, theirDir]);
        await rm(theirDir, { recursive: true, force: true });
        const isoDir = fresh(`rtt-iso-${corpus.name}`);
        start = performance.now();
        await git.clone({ fs: nodeFsModule, http: isoHttp, dir: isoDir, url: target, noCheckout: true });
        const isoMs = performance.now() - start;
        if ((await git.resolveRef({ fs: nodeFsModule, dir: isoDir, ref: 'HEAD' })) !== head) {
          throw new Error('isomorphic-git: clone incomplete');
        }
        await rm(isoDir, { recursive: true, force: true });
        if (i === 0) continue; // warm-up of all three
        ours.push(ms);
        gits.push(cost.wallMs);
        iso.push(isoMs);
      }
      const note = `${corpus.label}, bare clone from gitport serve through a proxy that holds every request ${RTT_MS} ms (one network round trip each, keep-alive connections), on this machine (${cpus().length} cores); median of ${RUNS} after a warm-up${quick}`;
      record({
        id: `clone.http.${corpus.name}.rtt${RTT_MS}.ms`,
        value: median(ours),
        unit: 'ms',
        peer: `git clone --bare over HTTP (same proxy)`,
        peerValue: median(gits),
        better: 'lower',
        note,
      });
      record({
        id: `clone.http.${corpus.name}.rtt${RTT_MS}.vs-isomorphic-git.ms`,
        value: median(ours),
        unit: 'ms',
        peer: 'isomorphic-git clone (isomorphic-git/http/node, same proxy)',
        peerValue: median(iso),
        better: 'lower',
        note,
      });
    },
    once,
  );

  bench(
    'in Chromium: gitport remote(url) vs isomorphic-git/http/web, MemoryFs and OPFS',
    async () => {
      await setup();
      const storages = ['memory', 'opfs'] as const;
      for (const corpus of corpora) {
        const head = await headOf(corpus.name);
        for (const storage of storages) {
          type Clone = { ms: number; packBytes: number };
          const ours = await page.call<Clone[]>('timedClones', {
            url: url(corpus.name),
            storage,
            runs: RUNS + 1,
            tool: 'gitport',
            head,
          });
          const iso = await page.call<Clone[]>('timedClones', {
            url: url(corpus.name),
            storage,
            runs: ISO_RUNS + 1,
            tool: 'isomorphic-git',
            head,
          });
          iso.shift(); // warm-up, as gitport's first run is
          const bytes = ours[0]!.packBytes;
          if (storage === 'memory') {
            const downloads = await page.call<{ ms: number }[]>('timedDownloads', {
              url: url(corpus.name),
              want: head,
              runs: RUNS + 1,
            });
            record({
              id: `browser.clone.http.${corpus.name}.vs-download.ms`,
              value: median(ours.slice(1).map((c) => c.ms)),
              unit: 'ms',
              peer: 'the same pack downloaded alone in the worker (fetch, read, dropped)',
              peerValue: median(downloads.slice(1).map((d) => d.ms)),
              better: 'lower',
              note: `headless Chromium worker, gitport's clone into a MemoryFs next to the server's response alone (the clone's v2 fetch of HEAD's commit, no haves); ${corpus.label}; median of ${RUNS} after a warm-up${quick}`,
            });
          }
          record({
            id: `browser.clone.http.${corpus.name}.${storage}.mbps`,
            value: mbps(bytes, median(ours.slice(1).map((c) => c.ms))),
            unit: 'MB/s',
            peer: 'isomorphic-git clone (isomorphic-git/http/web)',
            peerValue: mbps(bytes, median(iso.map((c) => c.ms))),
            better: 'higher',
            goal: { min: 5, on: 'ratio', source: 'issue 29' },
            note: `headless Chromium, a module Web Worker on another origin than the gateway (CORS) cloning bare into ${storage === 'opfs' ? 'OPFS' : 'a MemoryFs'}; ${corpus.label}, ${(bytes / MB).toFixed(2)} MB pack stored by gitport (isomorphic-git's: ${(iso[0]!.packBytes / MB).toFixed(2)} MB); MB/s = gitport's pack size / clone time for both; median of ${RUNS} after a warm-up (isomorphic-git: ${ISO_RUNS} after its own warm-up)${quick}`,
          });
        }
      }
    },
    once,
  );

  bench(
    'push-to-notify: git push through the gateway to a browser worker watch()',
    async () => {
      await setup();
      const work = fresh('live-work');
      await sandbox.git(['init', '-q', '-b', 'main', work]);
      await sandbox.git(['-C', work, 'commit', '-q', '--allow-empty', '-m', 'start']);
      await sandbox.git(['-C', work, 'push', '-q', url('live'), 'HEAD:refs/heads/main']);
      await page.call('watch', { url: url('live') });
      const base = (await page.arrivals()).length;
      const latencies: number[] = [];
      const pushes: number[] = [];
      for (let i = 0; i < PUSHES + 2; i++) {
        await sandbox.git(['-C', work, 'commit', '-q', '--allow-empty', '-m', `push ${i}`]);
        const start = performance.timeOrigin + performance.now();
        await sandbox.git(['-C', work, 'push', '-q', url('live'), 'HEAD:refs/heads/main']);
        const pushed = performance.timeOrigin + performance.now() - start;
        const heard = base + i + 1;
        await page.page.waitForFunction(
          (count) => (window as unknown as { arrivals: number[] }).arrivals.length >= count,
          heard,
          { timeout: 60_000, polling: 5 },
        );
        const at = (await page.arrivals())[heard - 1]!;
        if (i < 2) continue; // warm-up
        latencies.push(at - start);
        pushes.push(pushed);
      }
      await page.call('unwatch', {});
      const note = `one empty commit pushed with the git CLI (git push over HTTP, a new process each time) to gitport serve, heard by watch(url) in a Chromium module worker on another origin (EventSource over CORS); from the spawn of git push to onUpdate on the machine's one clock; ${PUSHES} pushes after 2 warm-ups; peer: the same pushes' git push alone, spawn to exit${quick}`;
      for (const p of [50, 99]) {
        record({
          id: `sse.push-to-notify.p${p}.ms`,
          value: percentile(latencies, p),
          unit: 'ms',
          peer: 'git push alone (spawn to exit)',
          peerValue: percentile(pushes, p),
          better: 'lower',
          note,
        });
      }
    },
    once,
  );
});
