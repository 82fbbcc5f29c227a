/**
 * Real git against gitport's servers: stateful over stdio (`git clone "ext::node serve-stdio.ts
 * %s <dir>"`) and stateless over a small node:http server (gitport's smart-HTTP handlers),
 * protocol v0 and v2. git's own view of the result (`for-each-ref`, `rev-list`, `fsck`) is the
 * judge.
 */

import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeCommand } from '@gitport/test-helpers/ts-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCommits,
  loadRepository,
  type MemoryRepository,
  makeSampleRepo,
  startGitportHttp,
  type TestServer,
} from './helpers.js';

let sandbox: GitSandbox;
const servers: TestServer[] = [];

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-protocol-server-');
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await sandbox?.cleanup();
});

type Mode = { name: string; protocol: 0 | 1 | 2; http: boolean };
const modes: Mode[] = [
  { name: 'ext v0', protocol: 0, http: false },
  { name: 'ext v1', protocol: 1, http: false },
  { name: 'ext v2', protocol: 2, http: false },
  { name: 'http v0', protocol: 0, http: true },
  { name: 'http v1', protocol: 1, http: true },
  { name: 'http v2', protocol: 2, http: true },
];

const serveScript = new URL('./serve-stdio.ts', import.meta.url);

interface Served {
  url: string;
  /** The repository the server works on, as git sees it (http: written out on demand). */
  gitDir: () => Promise<string>;
  memory?: MemoryRepository;
  /** HTTP only: `METHOD path` of every request. */
  requests?: string[];
  /** HTTP only: push options received by receive-pack. */
  pushOptions?: string[][];
}

async function serve(mode: Mode, bare: string, options: { denyNonFastForward?: boolean } = {}): Promise<Served> {
  if (!mode.http) {
    // remote-ext does not pass GIT_PROTOCOL on: the command line asks the server for v2
    const env: string[] = [];
    if (mode.protocol > 0) env.push(`GIT_PROTOCOL=version=${mode.protocol}`);
    if (options.denyNonFastForward) env.push('GITPORT_DENY_NON_FF=1');
    const command = [...(env.length > 0 ? ['/usr/bin/env', ...env] : []), ...tsNodeCommand(serveScript), '%s', bare];
    return { url: `ext::${command.join(' ')}`, gitDir: async () => bare };
  }
  const memory = await loadRepository(sandbox, bare);
  const pushOptions: string[][] = [];
  const server = await startGitportHttp(memory, {
    allowNonFastForward: !options.denyNonFastForward,
    onPush: (result) => pushOptions.push(result.pushOptions),
  });
  servers.push(server);
  const out = `${bare}-served-${servers.length}.git`;
  return {
    url: `${server.url}/repo.git`,
    memory,
    requests: server.requests,
    pushOptions,
    gitDir: async () => {
      const { saveRepository } = await import('./helpers.js');
      await sandbox.git(['init', '-q', '--bare', out]);
      await saveRepository(sandbox, memory, out);
      return out;
    },
  };
}

const slugOf = (mode: Mode, what: string) => `${what}-${mode.name.replace(' ', '-')}`;
const v = (mode: Mode) => ['-c', `protocol.version=${mode.protocol}`];
const refs = (gitDir: string, prefix = 'refs/') =>
  sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)', prefix]);

describe.each(modes)('real git against gitport servers ($name)', (mode) => {
  it('ls-remote --symref, clone, tags and fsck', async () => {
    const { bare } = await makeSampleRepo(sandbox, slugOf(mode, 'clone'));
    const served = await serve(mode, bare);
    const trace = await sandbox.run([...v(mode), 'ls-remote', '--symref', served.url], {
      env: { GIT_TRACE_PACKET: '1' },
    });
    const listed = new TextDecoder().decode(trace.stdout);
    expect(listed).toBe(new TextDecoder().decode((await sandbox.run(['ls-remote', '--symref', bare])).stdout));
    if (mode.protocol === 2) expect(trace.stderr).toContain('version 2');
    else expect(trace.stderr).not.toContain('< version 2');
    if (mode.protocol === 1) expect(trace.stderr).toContain('< version 1');
    // v2 over HTTP: one GET and a single POST (ls-refs)
    if (served.requests) {
      expect(served.requests).toEqual([
        'GET /repo.git/info/refs',
        ...(mode.protocol === 2 ? ['POST /repo.git/git-upload-pack'] : []),
      ]);
    }

    const dest = sandbox.path(`${slugOf(mode, 'clone')}-dest`);
    await sandbox.git([...v(mode), 'clone', '-q', '--bare', served.url, dest]);
    await sandbox.git(['--git-dir', dest, 'fsck', '--full', '--strict']);
    expect(await refs(dest)).toBe(await refs(bare));
    expect(await sandbox.git(['--git-dir', dest, 'symbolic-ref', 'HEAD'])).toBe('refs/heads/main');
    // an annotated tag followed on a narrow fetch
    const narrow = sandbox.path(`${slugOf(mode, 'clone')}-narrow`);
    await sandbox.git(['init', '-q', narrow]);
    await sandbox.git([...v(mode), 'fetch', '-q', '--depth', '1', served.url, 'refs/tags/v1:refs/tags/v1'], {
      cwd: narrow,
    });
    expect(await sandbox.git(['rev-parse', 'v1'], { cwd: narrow })).toBe(
      await sandbox.git(['--git-dir', bare, 'rev-parse', 'v1']),
    );
    await sandbox.git(['fsck', '--full'], { cwd: narrow });
  });

  it('shallow clone, deepen, shallow-since, shallow-exclude, unshallow', async () => {
    const slug = slugOf(mode, 'shallow');
    const { bare } = await makeSampleRepo(sandbox, slug);
    const served = await serve(mode, bare);
    const dest = sandbox.path(`${slug}-dest`);
    const url = mode.http ? served.url : served.url;
    await sandbox.git([...v(mode), 'clone', '-q', '--depth', '1', url, dest]);
    expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: dest })).toBe('1');
    await sandbox.git(['fsck', '--full'], { cwd: dest });
    await sandbox.git([...v(mode), 'fetch', '-q', '--deepen=2'], { cwd: dest });
    expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: dest })).toBe('3');
    await sandbox.git(['fsck', '--full'], { cwd: dest });
    await sandbox.git([...v(mode), 'fetch', '-q', '--unshallow'], { cwd: dest });
    expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: dest })).toBe('4');
    expect(await sandbox.git(['rev-parse', '--is-shallow-repository'], { cwd: dest })).toBe('false');
    await sandbox.git(['fsck', '--full'], { cwd: dest });

    const since = sandbox.path(`${slug}-since`);
    // commits are dated 1600001000 + i*1000: since 1600002500 keeps commits 3 and 4
    await sandbox.git([...v(mode), 'clone', '-q', '--shallow-since=1600002500', url, since]);
    expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: since })).toBe('2');
    await sandbox.git(['fsck', '--full'], { cwd: since });

    const exclude = sandbox.path(`${slug}-exclude`);
    await sandbox.git([...v(mode), 'clone', '-q', '--shallow-exclude=v1', url, exclude]);
    expect(await sandbox.git(['rev-list', '--count', 'HEAD'], { cwd: exclude })).toBe('2');
    await sandbox.git(['fsck', '--full'], { cwd: exclude });
  });

  it('incremental fetch sends a small pack', async () => {
    const slug = slugOf(mode, 'incr');
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const dest = sandbox.path(`${slug}-dest`);
    let served = await serve(mode, bare);
    await sandbox.git([...v(mode), 'clone', '-q', served.url, dest]);
    await addCommits(sandbox, work, 5);
    await sandbox.git(['push', '-q', bare, 'main'], { cwd: work });
    served = await serve(mode, bare);
    await sandbox.git(['remote', 'set-url', 'origin', served.url], { cwd: dest });
    const loose = async () =>
      Number(/^count: (\d+)$/m.exec(await sandbox.git(['count-objects', '-v'], { cwd: dest }))?.[1]);
    const looseBefore = await loose();
    const fetched = await sandbox.run([...v(mode), 'fetch', '--progress', 'origin'], { cwd: dest });
    expect(fetched.code, fetched.stderr).toBe(0);
    // side-band progress from the server
    expect(fetched.stderr).toMatch(/remote: Total \d+/);
    expect(await sandbox.git(['rev-parse', 'origin/main'], { cwd: dest })).toBe(
      await sandbox.git(['--git-dir', bare, 'rev-parse', 'main']),
    );
    await sandbox.git(['fsck', '--full'], { cwd: dest });
    // fewer than fetch.unpackLimit objects arrive as loose objects: count them
    const objects = (await loose()) - looseBefore;
    // 5 commits, 5 trees, 5 blobs at most: nothing of the old history
    expect(objects).toBeGreaterThan(0);
    expect(objects).toBeLessThanOrEqual(15);
  });

  it('git fetch with 500 commits the server lacks negotiates over several rounds', async () => {
    const slug = slugOf(mode, 'multi');
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const dest = sandbox.path(`${slug}-dest`);
    let served = await serve(mode, bare);
    await sandbox.git([...v(mode), 'clone', '-q', served.url, dest]);
    // 500 local-only commits (fast-import: one process), and 3 new commits on the server
    const tip = await sandbox.git(['rev-parse', 'HEAD'], { cwd: dest });
    const stream = Array.from(
      { length: 500 },
      (_, i) =>
        `commit refs/heads/local\ncommitter l <l@x> ${1_900_000_000 + i} +0000\ndata 3\nl${String(i % 100).padStart(2, '0')}\n${i === 0 ? `from ${tip}\n` : ''}M 644 inline local.txt\ndata 4\n${String(i).padStart(3, '0')}\n\n`,
    ).join('');
    await sandbox.git(['fast-import', '--quiet'], { cwd: dest, input: stream });
    await addCommits(sandbox, work, 3, 'server');
    await sandbox.git(['push', '-q', bare, 'main'], { cwd: work });
    served = await serve(mode, bare);
    await sandbox.git(['remote', 'set-url', 'origin', served.url], { cwd: dest });
    const fetched = await sandbox.run([...v(mode), 'fetch', 'origin'], { cwd: dest, env: { GIT_TRACE_PACKET: '1' } });
    expect(fetched.code, fetched.stderr.slice(-2000)).toBe(0);
    expect(await sandbox.git(['rev-parse', 'origin/main'], { cwd: dest })).toBe(
      await sandbox.git(['--git-dir', bare, 'rev-parse', 'main']),
    );
    await sandbox.git(['fsck', '--full'], { cwd: dest });
    const haves = (fetched.stderr.match(/> have /g) ?? []).length;
    expect(haves).toBeGreaterThan(500);
  });

  it('fetches 2,000 tags', async () => {
    const slug = slugOf(mode, 'tags');
    const { work, bare } = await makeSampleRepo(sandbox, slug);
    const lines = Array.from(
      { length: 2000 },
      (_, i) => `create refs/tags/t${String(i).padStart(4, '0')} HEAD~${i % 4}`,
    );
    await sandbox.git(['update-ref', '--stdin'], { cwd: work, input: `${lines.join('\n')}\n` });
    await sandbox.git(['push', '-q', bare, '--tags'], { cwd: work });
    const served = await serve(mode, bare);
    const dest = sandbox.path(`${slug}-dest`);
    await sandbox.git([...v(mode), 'clone', '-q', '--bare', served.url, dest]);
    expect(await refs(dest, 'refs/tags/')).toBe(await refs(bare, 'refs/tags/'));
    expect((await refs(dest, 'refs/tags/')).split('\n').length).toBe(2002);
  });

  it('clones a 5 MiB random blob, NUL and CRLF files byte for byte', async () => {
    const slug = slugOf(mode, 'big');
    const work = sandbox.path(slug);
    await sandbox.git(['init', '-q', work]);
    await sandbox.exec(
      'sh',
      ['-c', "head -c 5242880 /dev/urandom > big.bin && printf 'a\\0b\\r\\nc\\r\\n' > nul-crlf.txt"],
      { cwd: work },
    );
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-q', '-m', 'big'], { cwd: work });
    const bare = sandbox.path(`${slug}.git`);
    await sandbox.git(['clone', '-q', '--bare', work, bare]);
    const served = await serve(mode, bare);
    const dest = sandbox.path(`${slug}-dest`);
    await sandbox.git([...v(mode), 'clone', '-q', served.url, dest]);
    await sandbox.git(['fsck', '--full'], { cwd: dest });
    for (const file of ['big.bin', 'nul-crlf.txt']) {
      expect(await sandbox.git(['hash-object', file], { cwd: dest })).toBe(
        await sandbox.git(['hash-object', file], { cwd: work }),
      );
    }
  });

  it('clones an empty repository', async () => {
    const slug = slugOf(mode, 'empty');
    const bare = sandbox.path(`${slug}.git`);
    await sandbox.git(['init', '-q', '--bare', bare]);
    const served = await serve(mode, bare);
    const dest = sandbox.path(`${slug}-dest`);
    const result = await sandbox.run([...v(mode), 'clone', served.url, dest]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('empty repository');
    expect(await sandbox.git(['symbolic-ref', 'HEAD'], { cwd: dest })).toBe('refs/heads/main');
  });
});

describe.each(modes.filter((m) => m.protocol !== 2))('real git pushes to gitport ($name)', (mode) => {
  it('push fast-forward, refused non-fast-forward, force, delete, new branch without objects', async () => {
    const slug = slugOf(mode, 'push');
    const { bare } = await makeSampleRepo(sandbox, slug);
    const served = await serve(mode, bare);
    const work = sandbox.path(`${slug}-work`);
    await sandbox.git(['clone', '-q', served.url, work]);
    await addCommits(sandbox, work, 2, 'pushed');
    const ff = await sandbox.run(['push', 'origin', 'main'], { cwd: work });
    expect(ff.code, ff.stderr).toBe(0);
    let gitDir = await served.gitDir();
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--full', '--strict']);
    expect(await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'main'])).toBe(
      await sandbox.git(['rev-parse', 'main'], { cwd: work }),
    );

    await sandbox.git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: work });
    await addCommits(sandbox, work, 1, 'diverged');
    const refused = await sandbox.run(['push', 'origin', 'main'], { cwd: work, allowFailure: true });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/non-fast-forward|fetch first|rejected/);
    const forced = await sandbox.run(['push', '--force', 'origin', 'main'], { cwd: work });
    expect(forced.code, forced.stderr).toBe(0);
    const copy = await sandbox.run(['push', 'origin', 'HEAD:refs/heads/copy', 'v1'], { cwd: work });
    expect(copy.code, copy.stderr).toBe(0);
    // a lease on a stale value is refused and moves nothing
    const stale = await sandbox.git(['rev-parse', 'HEAD~1'], { cwd: work });
    await sandbox.git(['commit', '-q', '--amend', '-m', 'amended'], { cwd: work });
    const lease = await sandbox.run(
      ['push', `--force-with-lease=refs/heads/main:${stale}`, 'origin', 'HEAD:refs/heads/main'],
      {
        cwd: work,
        allowFailure: true,
      },
    );
    expect(lease.code).not.toBe(0);
    expect(lease.stderr).toMatch(/stale info/);
    await sandbox.git(['reset', '-q', '--hard', 'origin/main'], { cwd: work });
    // push options travel with the push
    const withOptions = await sandbox.run(
      ['push', '-o', 'ci.skip', '-o', 'note=a b', 'origin', 'HEAD:refs/heads/opts'],
      {
        cwd: work,
      },
    );
    expect(withOptions.code, withOptions.stderr).toBe(0);
    if (served.pushOptions) expect(served.pushOptions.at(-1)).toEqual(['ci.skip', 'note=a b']);
    // like git's receive.denyDeleteCurrent: the branch HEAD points to cannot be deleted
    const deleteCurrent = await sandbox.run(['push', 'origin', '--delete', 'main'], { cwd: work, allowFailure: true });
    expect(deleteCurrent.code).not.toBe(0);
    expect(deleteCurrent.stderr).toContain('deletion of the current branch prohibited');
    const del = await sandbox.run(['push', 'origin', '--delete', 'feature'], { cwd: work });
    expect(del.code, del.stderr).toBe(0);
    gitDir = await served.gitDir();
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--full', '--strict']);
    const after = await refs(gitDir);
    const main = await sandbox.git(['rev-parse', 'main'], { cwd: work });
    expect(after).toContain(`${main} refs/heads/main`);
    expect(after).toContain(`${main} refs/heads/copy`);
    expect(after).not.toContain('refs/heads/feature');
  });

  it('a thin push after editing a big file is completed and checked', async () => {
    const slug = slugOf(mode, 'thin');
    const { bare } = await makeSampleRepo(sandbox, slug);
    const served = await serve(mode, bare);
    const work = sandbox.path(`${slug}-work`);
    await sandbox.git(['clone', '-q', served.url, work]);
    await sandbox.exec('sh', ['-c', 'seq 1 200000 > big.txt'], { cwd: work });
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-q', '-m', 'big file'], { cwd: work });
    const first = await sandbox.run(['push', 'origin', 'main'], { cwd: work });
    expect(first.code, first.stderr).toBe(0);
    await sandbox.git(['fetch', '-q', 'origin'], { cwd: work });
    await sandbox.exec('sh', ['-c', 'echo one more line >> big.txt'], { cwd: work });
    await sandbox.git(['commit', '-q', '-am', 'edit'], { cwd: work });
    // git sends a thin pack: the new blob as a delta against the one the remote has
    const thin = await sandbox.run(['push', 'origin', 'main'], { cwd: work, env: { GIT_TRACE_PACKET: '1' } });
    expect(thin.code, thin.stderr.slice(-1000)).toBe(0);
    const gitDir = await served.gitDir();
    await sandbox.git(['--git-dir', gitDir, 'fsck', '--full', '--strict']);
    expect(await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'main:big.txt'])).toBe(
      await sandbox.git(['rev-parse', 'HEAD:big.txt'], { cwd: work }),
    );
  });

  it('atomic push with one bad ref moves nothing; push --all into an empty repository', async () => {
    const slug = slugOf(mode, 'atomic');
    const { bare } = await makeSampleRepo(sandbox, slug);
    const served = await serve(mode, bare);
    const work = sandbox.path(`${slug}-work`);
    await sandbox.git(['clone', '-q', served.url, work]);
    await addCommits(sandbox, work, 1, 'atomic');
    await sandbox.git(['branch', '-f', 'feature', 'HEAD~4'], { cwd: work }); // behind the remote's feature
    const strict = await serve(mode, bare, { denyNonFastForward: true });
    const before = await refs(await strict.gitDir());
    // the server refuses the forced non-fast-forward of feature, so main must not move either
    const atomic = await sandbox.run(['push', '--atomic', '--force', strict.url, 'main', 'feature'], {
      cwd: work,
      allowFailure: true,
    });
    expect(atomic.code).not.toBe(0);
    expect(atomic.stderr).toMatch(/non-fast-forward/);
    expect(atomic.stderr).toMatch(/atomic/);
    expect(await refs(await strict.gitDir())).toBe(before);

    const emptyBare = sandbox.path(`${slug}-empty.git`);
    await sandbox.git(['init', '-q', '--bare', emptyBare]);
    const emptyServed = await serve(mode, emptyBare);
    const all = await sandbox.run(['push', emptyServed.url, '--all'], { cwd: work });
    expect(all.code, all.stderr).toBe(0);
    const tags = await sandbox.run(['push', emptyServed.url, '--tags'], { cwd: work });
    expect(tags.code, tags.stderr).toBe(0);
    const out = await emptyServed.gitDir();
    await sandbox.git(['--git-dir', out, 'fsck', '--full', '--strict']);
    expect(await sandbox.git(['--git-dir', out, 'rev-parse', 'main'])).toBe(
      await sandbox.git(['rev-parse', 'main'], { cwd: work }),
    );
    expect(await sandbox.git(['--git-dir', out, 'rev-parse', 'v1'])).toBe(
      await sandbox.git(['rev-parse', 'v1'], { cwd: work }),
    );
  });
});
