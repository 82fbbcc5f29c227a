/**
 * A soak of `gitport serve` as a user runs it, in a process of its own: for
 * GITPORT_SOAK_SECONDS (default 20; `GITPORT_SOAK_SECONDS=600 pnpm exec vitest run
 * tests/src/gateway/soak.test.ts` for a long one), real git clones, fetches and pushes (each a
 * process of its own), SSE subscribers in another process (half of them never read), and hostile
 * requests all run at once. The server keeps answering, no answer is a 500, its resident memory
 * levels off, the pushes all land, and every repository stays `git fsck --strict` clean.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { type ServeProcess, startServe } from './serve-process.js';
import { rawRequest } from './server.js';

const seconds = Number(process.env.GITPORT_SOAK_SECONDS ?? 20);
const TOKEN = 'soak-token';
const pkt = (line: string) => `${(Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')}${line}`;

/** Resident memory of a process in bytes (Linux /proc), or undefined elsewhere. */
function residentBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Sends a request and resolves with its status once the whole answer is in (0: no answer). */
function statusOf(
  server: ServeProcess,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Uint8Array | string,
): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: server.host, port: server.port, method, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/** A POST whose client goes away as soon as the request is sent (a clone given up at once). */
function abandoned(server: ServeProcess, path: string, body: string): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest({
      host: server.host,
      port: server.port,
      method: 'POST',
      path,
      headers: { 'content-type': 'application/x-git-upload-pack-request' },
      agent: false,
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end(body, () => setImmediate(() => req.destroy()));
  });
}

/** A body trickled one byte at a time until the server gives up on it (or `ms` pass). */
function trickle(server: ServeProcess, path: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(server.port, server.host);
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearInterval(timer);
      socket.destroy();
      resolve();
    };
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${server.host}\r\ncontent-type: application/x-git-upload-pack-request\r\n` +
          'content-length: 100000\r\n\r\n',
      );
      timer = setInterval(() => socket.write('0'), 100);
      setTimeout(done, ms);
    });
    socket.resume();
  });
}

function message<T>(child: ChildProcess, send: object, type: string): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (m: { type: string } & T) => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      resolve(m);
    };
    child.on('message', onMessage);
    child.send(send);
  });
}

describe('soak', () => {
  it('keeps answering, bounded, with every repository clean, under friendly and hostile load at once', {
    timeout: (seconds + 300) * 1000,
  }, async () => {
    await using sandbox = await createGitSandbox('gitport-soak-');
    const root = sandbox.path('repos');
    await mkdir(root);
    const history = await ensureHistory({ commits: 300, seed: 11, tagEvery: 50, mergeEvery: 40 });
    await sandbox.git(['clone', '--quiet', '--bare', '--no-local', history.gitDir, join(root, 'big.git')]);
    const seed = sandbox.path('seed');
    await sandbox.git(['init', '--quiet', seed]);
    await writeFile(join(seed, 'a.txt'), 'a\n');
    await sandbox.git(['-C', seed, 'add', '.']);
    await sandbox.git(['-C', seed, 'commit', '--quiet', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', seed, join(root, 'small.git')]);
    const bigRefs = await sandbox.git(['--git-dir', join(root, 'big.git'), 'for-each-ref']);
    const bigTips = [...new Set(bigRefs.split('\n').map((line) => line.slice(0, 40)))];

    const server = await startServe(['--root', root, '--port', '0', '--token', TOKEN, '--workers', '2']);
    const subscribers = fork(new URL('./soak-subscribers.mjs', import.meta.url), { stdio: 'ignore' });
    const memory: number[] = [];
    const sampler = setInterval(() => {
      const bytes = residentBytes(server.child.pid as number);
      if (bytes !== undefined) memory.push(bytes);
    }, 250);
    try {
      const opened = await message<{ refused: number }>(
        subscribers,
        { type: 'open', url: `${server.url}/events`, readers: 40, idle: 40 },
        'opened',
      );
      expect(opened.refused).toBe(0);

      const deadline = Date.now() + seconds * 1000;
      const running = () => Date.now() < deadline;
      const counts = { clones: 0, fetches: 0, pushes: 0 };
      const statuses = new Map<string, number[]>();
      const record = (kind: string, status: number) => {
        const list = statuses.get(kind) ?? [];
        list.push(status);
        statuses.set(kind, list);
      };
      const pushUrl = `http://u:${TOKEN}@${server.host}:${server.port}/small.git`;

      const cloneLoop = async (i: number) => {
        for (let n = 0; running(); n++) {
          const dir = sandbox.path(`clone-${i}-${n}`);
          const version = n % 2 === 0 ? '2' : '0';
          await sandbox.git([
            '-c',
            `protocol.version=${version}`,
            'clone',
            '--quiet',
            '--bare',
            `${server.url}/big.git`,
            dir,
          ]);
          expect(await sandbox.git(['--git-dir', dir, 'for-each-ref'])).toBe(bigRefs);
          await rm(dir, { recursive: true, force: true });
          counts.clones++;
        }
      };

      const pushLoop = async (i: number) => {
        const work = sandbox.path(`push-${i}`);
        await sandbox.git(['clone', '--quiet', `${server.url}/small.git`, work]);
        for (let n = 0; running(); n++) {
          await writeFile(join(work, `file-${i}.txt`), `${i} ${n}\n${randomBytes(64).toString('hex')}\n`);
          await sandbox.git(['-C', work, 'add', '.']);
          await sandbox.git(['-C', work, 'commit', '--quiet', '-m', `push ${i} ${n}`]);
          if (n % 3 === 2) {
            await sandbox.git([
              '-C',
              work,
              'push',
              '--quiet',
              '--atomic',
              '--force',
              pushUrl,
              `HEAD:refs/heads/soak-${i}`,
              `HEAD:refs/heads/soak-${i}-atomic`,
            ]);
          } else if (n % 5 === 4) {
            // a delete beside an update, so the branch still ends at the work tree's commit
            await sandbox.git([
              '-C',
              work,
              'push',
              '--quiet',
              '--force',
              pushUrl,
              `HEAD:refs/heads/soak-${i}`,
              `:refs/heads/soak-${i}-atomic`,
            ]);
          } else {
            await sandbox.git(['-C', work, 'push', '--quiet', '--force', pushUrl, `HEAD:refs/heads/soak-${i}`]);
          }
          counts.pushes++;
        }
      };

      const fetchLoop = async () => {
        const work = sandbox.path('fetch');
        await sandbox.git(['clone', '--quiet', '--bare', `${server.url}/small.git`, work]);
        for (let n = 0; running(); n++) {
          await sandbox.git([
            '-c',
            `protocol.version=${n % 2 === 0 ? '2' : '0'}`,
            '--git-dir',
            work,
            'fetch',
            '--quiet',
            'origin',
            '+refs/heads/*:refs/remotes/origin/*',
          ]);
          counts.fetches++;
        }
      };

      const cloneRequest =
        bigTips
          .map((oid, i) => pkt(`want ${oid}${i === 0 ? ' multi_ack_detailed side-band-64k ofs-delta' : ''}\n`))
          .join('') +
        '0000' +
        pkt('done\n');
      const unknownWants = `${Array.from({ length: 20_000 }, (_, i) => pkt(`want ${i.toString(16).padStart(40, '0')}\n`)).join('')}0000${pkt('done\n')}`;
      const hostileLoop = async () => {
        for (let n = 0; running(); n++) {
          const rounds: Promise<unknown>[] = [];
          // clones given up as soon as they are sent
          for (let k = 0; k < 8; k++) rounds.push(abandoned(server, '/big.git/git-upload-pack', cloneRequest));
          // bodies trickled byte by byte
          for (let k = 0; k < 8; k++) rounds.push(trickle(server, '/small.git/git-upload-pack', 3_000));
          rounds.push(
            statusOf(
              server,
              'POST',
              '/small.git/git-upload-pack',
              { 'content-type': 'application/x-git-upload-pack-request' },
              randomBytes(4096),
            ).then((s) => record('garbage upload-pack', s)),
          );
          rounds.push(
            statusOf(
              server,
              'POST',
              '/big.git/git-upload-pack',
              { 'content-type': 'application/x-git-upload-pack-request' },
              unknownWants,
            ).then((s) => record('20k unknown wants', s)),
          );
          rounds.push(
            statusOf(
              server,
              'POST',
              '/small.git/git-receive-pack',
              { 'content-type': 'application/x-git-receive-pack-request', authorization: `Bearer ${TOKEN}` },
              Buffer.concat([
                Buffer.from(`${pkt(`${'0'.repeat(40)} ${bigTips[0]} refs/heads/hostile\0report-status\n`)}0000`),
                Buffer.from('PACK\0\0\0\x02\0\0\0\x05'),
                randomBytes(200),
              ]),
            ).then((s) => record('corrupt pack push', s)),
          );
          rounds.push(
            statusOf(
              server,
              'POST',
              '/small.git/git-receive-pack',
              { cookie: `gitport_token=${TOKEN}` },
              `${pkt(`${'0'.repeat(40)} ${bigTips[0]} refs/heads/csrf\0report-status\n`)}0000`,
            ).then((s) => record('cookie-only push', s)),
          );
          for (let k = 0; k < 20; k++) {
            rounds.push(
              statusOf(server, 'GET', `/big.git/info/refs?service=git-upload-pack`, {
                'git-protocol': `version=2:x=${n}-${k}`,
              }).then((s) => record('discovery with distinct Git-Protocol', s)),
            );
          }
          await Promise.all(rounds);
        }
      };

      await Promise.all([cloneLoop(0), cloneLoop(1), pushLoop(0), pushLoop(1), fetchLoop(), hostileLoop()]);

      // still answering: a small fetch and a discovery, once the load is gone
      const after = sandbox.path('after');
      await sandbox.git(['clone', '--quiet', `${server.url}/small.git`, after]);
      expect((await rawRequest(server, 'GET', '/healthz')).status).toBe(200);

      const report = await message<{ events: number; resets: number; errors: number }>(
        subscribers,
        { type: 'report' },
        'report',
      );
      const summary = {
        seconds,
        ...counts,
        sse: report,
        hostile: Object.fromEntries([...statuses].map(([kind, list]) => [kind, [...new Set(list)].sort()])),
        residentMiB:
          memory.length > 0
            ? { first: memory[0]! >> 20, peak: Math.max(...memory) >> 20, last: memory.at(-1)! >> 20 }
            : 'n/a',
      };
      console.log(`soak: ${JSON.stringify(summary)}`);

      expect(counts.clones).toBeGreaterThan(0);
      expect(counts.pushes).toBeGreaterThan(0);
      expect(counts.fetches).toBeGreaterThan(0);
      expect(report.events).toBeGreaterThan(0);
      for (const [kind, list] of statuses) {
        expect({ kind, errors: list.filter((s) => s === 0 || (s >= 500 && s !== 503)) }).toEqual({ kind, errors: [] });
      }
      expect(statuses.get('cookie-only push')?.every((s) => s === 401 || s === 403 || s === 415)).toBe(true);
      // what the corrupt push and the cookie-only push named never appeared
      expect(await refExists(sandbox, root, 'refs/heads/hostile')).toBe(false);
      expect(await refExists(sandbox, root, 'refs/heads/csrf')).toBe(false);
      // every push landed: each loop's branch is at its work tree's commit
      for (const i of [0, 1]) {
        const pushed = await sandbox.git(['-C', sandbox.path(`push-${i}`), 'rev-parse', 'HEAD']);
        expect(await sandbox.git(['--git-dir', join(root, 'small.git'), 'rev-parse', `refs/heads/soak-${i}`])).toBe(
          pushed,
        );
      }
      for (const repo of ['big.git', 'small.git'])
        await sandbox.git(['--git-dir', join(root, repo), 'fsck', '--strict', '--no-dangling']);

      // memory levels off: the second half's peak stays near the first half's
      if (memory.length >= 8) {
        const half = memory.length >> 1;
        const firstPeak = Math.max(...memory.slice(0, half));
        const secondPeak = Math.max(...memory.slice(half));
        expect(secondPeak).toBeLessThan(firstPeak * 1.5 + (64 << 20));
        expect(Math.max(...memory)).toBeLessThan(1.5 * 1024 ** 3);
      }

      // SIGTERM still ends it cleanly after all that
      server.child.kill('SIGTERM');
      const exit = await Promise.race([server.exit, delay(60_000).then(() => 'still running after SIGTERM')]);
      if (exit !== 0) console.log(`gitport serve stderr:\n${server.stderr().slice(-4000)}`);
      expect(exit).toBe(0);
    } finally {
      clearInterval(sampler);
      subscribers.kill();
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
  });
});

async function refExists(sandbox: GitSandbox, root: string, ref: string): Promise<boolean> {
  const result = await sandbox.run(['--git-dir', join(root, 'small.git'), 'show-ref', '--verify', '--quiet', ref], {
    allowFailure: true,
  });
  return result.code === 0;
}
