/**
 * Protocol v2 `ls-refs` through the worker pool: the listing is the worker's the first time,
 * then answered on the gateway's thread from its cache while the refs on disk stay as they were,
 * byte for byte what `git upload-pack` answers; refs changed by real git straight on disk, or by
 * a push through the gateway, show at once; an `ERR` answer is not kept.
 */
import { execFileSync } from 'node:child_process';
import { readdir, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkerPoolBackend } from '@gitport/gateway/node';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it } from 'vitest';
import { rawRequest, startServer, text } from './server.js';

const TOKEN = 'listing';
const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;

/** An ls-refs request as git sends it, with these arguments. */
const lsRefsRequest = (args: string[]) =>
  `${pkt('command=ls-refs\n')}${pkt('agent=git/2.39.5\n')}${pkt('object-format=sha1\n')}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;

/** Moves the refs' file times a minute into the past, as if the repository had not changed for a while. */
async function backdateRefs(dir: string): Promise<void> {
  const past = Date.now() / 1000 - 60;
  await utimes(join(dir, 'HEAD'), past, past);
  await utimes(join(dir, 'packed-refs'), past, past).catch(() => {});
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) if (e.isDirectory()) await walk(join(d, e.name));
    await utimes(d, past, past);
  };
  await walk(join(dir, 'refs'));
}

describe('ls-refs through the worker pool', () => {
  it('answers from a cache checked against the refs on disk, as git upload-pack does', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), token: TOKEN, backend: 'worker-pool' });
    const pool = server.gateway.backend as WorkerPoolBackend;
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', '-b', 'main', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'one']);
    await sandbox.git(['-C', work, 'tag', '-a', '-m', 'v1', 'v1']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'two']);
    const dir = join(server.root, 'listed.git');
    await sandbox.git(['clone', '--quiet', '--bare', work, dir]);
    await backdateRefs(dir);
    const index = pool.workerOf('listed');
    const request = lsRefsRequest([
      'symrefs',
      'peel',
      'unborn',
      'ref-prefix HEAD',
      'ref-prefix refs/heads/',
      'ref-prefix refs/tags/',
    ]);
    const list = (body: string) =>
      rawRequest(server, 'POST', '/listed.git/git-upload-pack', {
        headers: { 'content-type': 'application/x-git-upload-pack-request', 'git-protocol': 'version=2' },
        body,
      });
    /** What git's own upload-pack answers to the same request on the same repository. */
    const gitAnswer = (body: string) =>
      execFileSync('git', ['upload-pack', '--stateless-rpc', dir], {
        input: body,
        env: { ...process.env, GIT_PROTOCOL: 'version=2' },
      }).toString('latin1');

    const first = await list(request);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/x-git-upload-pack-result');
    expect(Buffer.from(first.body).toString('latin1')).toBe(gitAnswer(request));
    const sent = pool.work(index).sent;
    const again = await list(request);
    expect(text(again.body)).toBe(text(first.body));
    expect(pool.work(index).sent).toBe(sent);

    // real git moves a ref straight on disk: the next listing shows it, from the worker
    await sandbox.git(['--git-dir', dir, 'update-ref', 'refs/heads/moved', 'HEAD~1']);
    const moved = await list(request);
    expect(Buffer.from(moved.body).toString('latin1')).toBe(gitAnswer(request));
    expect(text(moved.body)).toContain(' refs/heads/moved\n');
    expect(pool.work(index).sent).toBe(sent + 1);

    // a push through the gateway drops the cached listing at once
    await sandbox.git([
      '-C',
      work,
      'push',
      '--quiet',
      `http://u:${TOKEN}@${server.host}:${server.port}/listed.git`,
      'HEAD:refs/heads/pushed',
    ]);
    const pushed = await list(request);
    expect(text(pushed.body)).toContain(' refs/heads/pushed\n');
    expect(Buffer.from(pushed.body).toString('latin1')).toBe(gitAnswer(request));

    // another request's arguments are a listing of their own
    const heads = lsRefsRequest(['ref-prefix refs/heads/']);
    expect(Buffer.from((await list(heads)).body).toString('latin1')).toBe(gitAnswer(heads));

    // an ERR answer is the worker's each time, never kept
    const bad = lsRefsRequest(['bogus']);
    const refused = await list(bad);
    expect(text(refused.body)).toContain('ERR ');
    const before = pool.work(index).sent;
    await list(bad);
    expect(pool.work(index).sent).toBe(before + 1);
  });
});
