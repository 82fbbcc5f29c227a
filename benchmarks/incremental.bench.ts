/**
 * Incremental packs (issue 5), side by side with `git pack-objects --thin` on the same revisions:
 *
 * - 5 new commits out of 20 (each commit adds a random blob: the reference report's shape, where
 *   the incremental pack was 25% of the full one): the pack for `HEAD ^HEAD~5` as a share of the
 *   pack for `HEAD`, and the time to write it;
 * - a small edit to a large random file: the thin pack for `HEAD ^HEAD~1`, whose blob should be a
 *   small delta against the receiver's copy (goal: a few KB, not the file).
 *
 * Ours reads the fixture repository through FsObjectStore. Every thin pack is completed by
 * `git index-pack --fix-thin` in a repository holding the receiver's objects, and must pass.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bitmapServing, createPack, FsObjectStore } from '@gitport/pack';
import { afterAll, bench, describe } from 'vitest';
import { largeFileEdit, randomBlobHistory } from '../tests/src/pack/fixtures.js';
import { median, record, sized } from './report.js';

function git(args: string[], input?: Uint8Array): Promise<{ stdout: Uint8Array; ms: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn('git', args, {
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`git ${args.join(' ')} exited ${code}: ${err}`));
      const b = Buffer.concat(out);
      resolve({ stdout: new Uint8Array(b.buffer, b.byteOffset, b.length), ms: performance.now() - start });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? new Uint8Array(0));
  });
}

const rev = async (gitDir: string, name: string) =>
  new TextDecoder().decode((await git(['--git-dir', gitDir, 'rev-parse', name])).stdout).trim();

async function ours(gitDir: string, wants: string[], haves: string[]): Promise<{ pack: Uint8Array; ms: number }> {
  const store = new FsObjectStore(fs, gitDir, { bitmaps: bitmapServing });
  const start = performance.now();
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of createPack(store, { wants, haves }, { thin: true })) {
    parts.push(c);
    n += c.length;
  }
  const ms = performance.now() - start;
  await store.close();
  const pack = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    pack.set(p, o);
    o += p.length;
  }
  return { pack, ms };
}

const theirs = (gitDir: string, revs: string) =>
  git(
    ['--git-dir', gitDir, 'pack-objects', '--revs', '--thin', '--stdout', '-q', '--delta-base-offset'],
    new TextEncoder().encode(revs),
  );

const scratch = await mkdtemp(join(tmpdir(), 'gitport-bench-incr-'));

/** git completes the thin pack in a repository holding `base` (and what it reaches). */
async function checkThin(gitDir: string, base: string, pack: Uint8Array, label: string): Promise<void> {
  const repo = join(scratch, `${label}.git`);
  await git(['init', '-q', '--bare', repo]);
  const seed = await git(
    ['--git-dir', gitDir, 'pack-objects', '--revs', '--stdout', '-q'],
    new TextEncoder().encode(`${base}\n`),
  );
  await git(['--git-dir', repo, 'index-pack', '--stdin'], seed.stdout);
  await git(['--git-dir', repo, 'index-pack', '--stdin', '--fix-thin', '--strict'], pack);
}

const blobSize = sized(100_000, 10_000);
const history = await randomBlobHistory({ commits: 20, blobSize, seed: 2 });
const largeSize = sized(4 * 1024 * 1024, 256 * 1024);
const large = await largeFileEdit({ size: largeSize, editBytes: 32, seed: 3 });
const options = { iterations: sized(5, 1), warmupIterations: sized(1, 0), time: 0, warmupTime: 0 };

const results: Record<string, { bytes: number; ms: number[] }> = {};
const keep = (key: string, bytes: number, ms: number) => {
  const r = results[key] ?? { bytes, ms: [] };
  r.bytes = bytes;
  r.ms.push(ms);
  results[key] = r;
};
const medianOf = (key: string) => median(results[key]?.ms ?? [], key);

const head = await rev(history, 'HEAD');
const base5 = await rev(history, 'HEAD~5');
const largeHead = await rev(large, 'HEAD');
const largeBase = await rev(large, 'HEAD~1');

describe('incremental: 5 new commits of 20', () => {
  bench(
    'gitport createPack HEAD (full)',
    async () => {
      const r = await ours(history, [head], []);
      keep('full ours', r.pack.length, r.ms);
    },
    options,
  );
  bench(
    'gitport createPack HEAD ^HEAD~5 (thin)',
    async () => {
      const r = await ours(history, [head], [base5]);
      keep('incr ours', r.pack.length, r.ms);
    },
    options,
  );
  bench(
    'git pack-objects HEAD (full)',
    async () => {
      const r = await theirs(history, `${head}\n`);
      keep('full git', r.stdout.length, r.ms);
    },
    options,
  );
  bench(
    'git pack-objects --thin HEAD ^HEAD~5',
    async () => {
      const r = await theirs(history, `${head}\n^${base5}\n`);
      keep('incr git', r.stdout.length, r.ms);
    },
    options,
  );
});

describe('incremental: small edit to a large file', () => {
  bench(
    'gitport createPack --thin HEAD ^HEAD~1',
    async () => {
      const r = await ours(large, [largeHead], [largeBase]);
      keep('edit ours', r.pack.length, r.ms);
    },
    options,
  );
  bench(
    'git pack-objects --thin HEAD ^HEAD~1',
    async () => {
      const r = await theirs(large, `${largeHead}\n^${largeBase}\n`);
      keep('edit git', r.stdout.length, r.ms);
    },
    options,
  );
});

// registered first so that it runs last (after hooks run in stack order)
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

afterAll(async () => {
  await checkThin(history, base5, (await ours(history, [head], [base5])).pack, 'five');
  await checkThin(large, largeBase, (await ours(large, [largeHead], [largeBase])).pack, 'edit');
  const note = `20 commits, each adding a ${blobSize / 1000} KB random blob`;
  record({
    id: 'incremental.5of20.share',
    value: (100 * results['incr ours']!.bytes) / results['full ours']!.bytes,
    unit: '%',
    peer: 'git pack-objects --thin',
    peerValue: (100 * results['incr git']!.bytes) / results['full git']!.bytes,
    better: 'lower',
    goal: { max: 50, source: 'reference report 004' },
    note: `pack of HEAD ^HEAD~5 as a share of the pack of HEAD; ${note}`,
  });
  record({
    id: 'incremental.5of20.ms',
    value: medianOf('incr ours'),
    unit: 'ms',
    peer: 'git pack-objects --thin',
    peerValue: medianOf('incr git'),
    better: 'lower',
    note: `wall, git's includes starting the process; ${note}`,
  });
  record({
    id: 'incremental.large-edit.thin.kb',
    value: results['edit ours']!.bytes / 1000,
    unit: 'KB',
    peer: 'git pack-objects --thin',
    peerValue: results['edit git']!.bytes / 1000,
    better: 'lower',
    note: `thin pack for a 32-byte edit in a ${largeSize / 1024 / 1024} MiB random file`,
  });
  record({
    id: 'incremental.large-edit.thin.ms',
    value: medianOf('edit ours'),
    unit: 'ms',
    peer: 'git pack-objects --thin',
    peerValue: medianOf('edit git'),
    better: 'lower',
    note: `wall, git's includes starting the process; ${largeSize / 1024 / 1024} MiB file`,
  });
});
