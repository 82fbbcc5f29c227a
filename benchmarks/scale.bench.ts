/**
 * gitport at scale, side by side with git in the same run, on a history the size and shape of a
 * long-lived source repository (`HISTORY_PRESETS` of tests/src/history.ts: `large` is the size
 * of git's own history; `pnpm bench --quick` uses `small`), served as a server holds it between
 * two repacks (the packed history and one commit pushed since):
 *
 * - clone through the gateway: `git clone --bare` from `gitport serve` (the worker pool, as a user
 *   runs it: the built command in a child process) next to `git http-backend` (behind the
 *   node:http CGI bridge of tests/src/gateway, in a child process too); wall, the server's
 *   CPU-seconds (the process and the processes it started) and the server's private memory (peak
 *   RssAnon of its process tree over the idle figure before the clone), bytes on the wire;
 * - the same with four clones at once;
 * - partial clones (`--filter=blob:none` and `tree:0`) through both (git with
 *   `uploadpack.allowFilter`): bytes on the wire, wall, server CPU and memory;
 * - an incremental fetch of the last N first-parent commits of main into a clone that has the
 *   rest: wall, bytes the server sent, server CPU and memory;
 * - a library clone between two worker threads of one Node process (benchmarks/workers/
 *   library-clone.mjs: one worker hosts the repository opened with `openNodeRepository`, bitmaps
 *   on, the other clones it bare to disk with `busRemote(...).clone`) next to
 *   `git clone --bare --no-local` of the same repository: wall, CPU, peak RssAnon;
 * - `gitport index-pack --stdin` next to `git index-pack --stdin` on the repository's pack;
 * - `gitport pack-objects --all` next to `git pack-objects --revs --all` (reusing stored deltas,
 *   what a server does on a clone), the same on a copy of the repository without its `.bitmap`
 *   (both sides walk every object, as on a repository that took pushes since its last repack),
 *   the object walk alone (`enumerateObjects`) next to `git rev-list --objects --all` on that
 *   copy, and createPack({ reuse: false }) next to
 *   `git pack-objects --no-reuse-object` on the last commits (computing every delta: on the whole
 *   history that would take minutes);
 *
 * each command's wall, CPU (user + system) and peak RssAnon (benchmarks/process-tree.ts). The
 * two sides alternate, and every timed run starts once the writes of the runs before it are on
 * disk.
 *
 * Environment: GITPORT_BENCH_LARGE=0 skips the file in a full run (building `large` the first
 * time takes minutes: `node --import tsx tests/src/build-history.ts large` does it ahead);
 * GITPORT_BENCH_SCALE=<preset> picks another preset (`medium`: a quarter of `large`);
 * GITPORT_BENCH_SCALE_RUNS=<n> sets the runs of each operation (default 3, 1 for `large`);
 * GITPORT_BENCH_CPU_PROF=<dir> runs every gitport process with `node --cpu-prof` into <dir>
 * (then `node benchmarks/profile-top.mjs <dir>/*.cpuprofile` lists the top self times).
 * The gitport side runs the built packages (`pnpm build`, which `pnpm bench` runs first).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { ensureHistory, HISTORY_PRESETS, type HistoryPreset } from '@gitport/tests/history';
import { afterAll, bench, describe } from 'vitest';
import { type ByteCountingProxy, startByteCountingProxy } from './byte-counting-proxy.js';
import { type CommandCost, type Cost, measureServer, runCommand } from './process-tree.js';
import { type Goal, median, QUICK, record } from './report.js';

const once = { iterations: 1, warmupIterations: 0, time: 0, warmupTime: 0 };
const MB = 1e6;
const preset = (QUICK ? 'small' : (process.env.GITPORT_BENCH_SCALE ?? 'large')) as HistoryPreset;
if (!(preset in HISTORY_PRESETS)) throw new Error(`GITPORT_BENCH_SCALE=${preset}: no such preset`);
const skipped = !QUICK && process.env.GITPORT_BENCH_LARGE === '0';
/** Runs of each timed operation (medians); the full-size corpus gets one. */
const RUNS = Number(process.env.GITPORT_BENCH_SCALE_RUNS ?? (QUICK || preset === 'large' ? 1 : 3));
/** First-parent commits of main the incremental fetch brings. */
const FETCH_COMMITS = QUICK ? 50 : 500;
/** Commits whose objects the "computing deltas" rows pack (the whole history for `small`). */
const COMPUTE_COMMITS = preset === 'small' ? 0 : 2000;
const profileDir = process.env.GITPORT_BENCH_CPU_PROF;
const here = fileURLToPath(new URL('.', import.meta.url));
const gitportBin = join(here, '..', 'packages', 'cli', 'bin', 'gitport.js');
const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
/** A ratio goal of issue 26 (gitport over git, at most `max`). */
const atMost = (max: number): Goal => ({ max, on: 'ratio', source: 'issue 26' });
/** Goals of a group of rows, by the suffix of their id (`ms`, `server-cpu-s`, `mem.mb`, ...). */
type Goals = Partial<Record<string, Goal>>;
const goalOf = (goals: Goals, suffix: string) => (goals[suffix] ? { goal: goals[suffix] } : {});

/**
 * Waits until what earlier runs wrote is on disk. A clone writes hundreds of MB that the kernel
 * leaves dirty until they age (about 30 s), so without this one run's write-back lands in the
 * span of a later run, of either side; every timed run starts after it.
 */
const writtenBack = () => promisify(execFile)('sync');

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
  proxy: ByteCountingProxy;
}

/** Starts a server process and waits for the line that carries its URL. */
async function startServer(name: string, child: ChildProcess): Promise<Server> {
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /(http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.stderr?.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-4000);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${name} exited ${code} before listening: ${err}`)));
  });
  return { name, child, url, proxy: await startByteCountingProxy(url) };
}

async function stopServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  await server.proxy.close();
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

describe(`scale (${preset})`, () => {
  if (skipped) {
    bench('skipped (GITPORT_BENCH_LARGE=0)', () => {}, once);
    return;
  }
  let sandbox: GitSandbox;
  let root: string;
  let repo: string;
  let pack: string;
  /** The same repository without reachability bitmaps. */
  let plain: string;
  /** The servers running now (stopped after each group of rows, and at the end). */
  const running: Server[] = [];
  let commits = 0;
  let objects = 0;
  let head = '';
  let shape = '';
  let n = 0;
  const fresh = (label: string) => sandbox.path('work', `${label}-${n++}`);

  let ready: Promise<void> | undefined;
  const setup = () => (ready ??= start());
  async function start(): Promise<void> {
    if (!existsSync(join(here, '..', 'packages', 'cli', 'dist', 'index.js'))) {
      throw new Error('packages/cli/dist is missing: run pnpm build first');
    }
    const history = await ensureHistory(HISTORY_PRESETS[preset]);
    sandbox = await createGitSandbox('gitport-bench-scale-');
    await mkdir(sandbox.path('work'));
    root = await mkdtemp(join(tmpdir(), 'gitport-bench-scale-root-'));
    repo = join(root, 'scale.git');
    await sandbox.git(['clone', '--bare', '--quiet', history.gitDir, repo]);
    // a server's repository between two repacks: the packed history plus a push since (a loose
    // commit), so that no stored pack holds exactly what a clone wants (a freshly repacked
    // repository is sent verbatim by both servers, which measures little but the disk)
    const tree = await sandbox.git(['--git-dir', repo, 'rev-parse', 'refs/heads/main^{tree}']);
    const pushed = await sandbox.git(['--git-dir', repo, 'commit-tree', tree, '-p', 'refs/heads/main', '-m', 'pushed']);
    await sandbox.git(['--git-dir', repo, 'update-ref', 'refs/heads/main', pushed]);
    const packs = (await readdir(join(repo, 'objects', 'pack'))).filter((f) => f.endsWith('.pack'));
    if (packs.length !== 1) throw new Error(`expected one pack, found ${packs.length}`);
    pack = join(repo, 'objects', 'pack', packs[0] as string);
    // hard links: git never rewrites a pack or an index in place
    plain = join(root, 'plain.git');
    await sandbox.exec('cp', ['-al', repo, plain]);
    // git http-backend honours a partial clone's filter only when allowed (gitport serve always does)
    await sandbox.git(['--git-dir', repo, 'config', 'uploadpack.allowFilter', 'true']);
    for (const f of await readdir(join(plain, 'objects', 'pack'))) {
      if (f.endsWith('.bitmap')) await rm(join(plain, 'objects', 'pack', f));
    }
    commits = Number(await sandbox.git(['--git-dir', repo, 'rev-list', '--all', '--count']));
    head = await sandbox.git(['--git-dir', repo, 'rev-parse', 'refs/heads/main']);
    const counts = await sandbox.git(['--git-dir', repo, 'count-objects', '-v']);
    objects = Number(/in-pack: (\d+)/.exec(counts)?.[1]) + Number(/^count: (\d+)/m.exec(counts)?.[1]);
    const tags = (await sandbox.git(['--git-dir', repo, 'tag', '--list'])).split('\n').length;
    shape = `${preset} preset: ${commits} commits, ${tags} tags, ${objects} objects, ${(statSync(pack).size / MB).toFixed(0)} MB pack and one loose commit`;
  }

  /**
   * Both servers, started afresh for each group of rows (memory a server keeps after one group
   * must not count in the next) and warmed up by one ref advertisement each.
   */
  async function startServers(): Promise<{ ours: Server; git: Server }> {
    const ours = await startServer(
      'gitport serve',
      spawn(process.execPath, [...nodeArgs, gitportBin, 'serve', '--root', root, '--port', '0', '--workers', '2'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    running.push(ours);
    const git = await startServer(
      'git http-backend',
      spawnTsNode(new URL('./workers/http-backend-server.ts', import.meta.url), [root], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    running.push(git);
    const servers = { ours, git };
    for (const server of [ours, git]) {
      const res = await fetch(`${server.url}/scale.git/info/refs?service=git-upload-pack`);
      if (!res.ok) throw new Error(`${server.name}: info/refs answered ${res.status}`);
      await res.arrayBuffer();
    }
    return servers;
  }
  async function stopServers(): Promise<void> {
    for (const server of running.splice(0)) await stopServer(server);
  }

  // registered first so that it runs last (after hooks run in stack order)
  afterAll(async () => {
    await stopServers();
    await sandbox?.cleanup();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A bare clone through a server (unchecked: `check` it outside the measured span). */
  async function clone(server: Server): Promise<string> {
    const dest = fresh('clone');
    await sandbox.git(['clone', '--bare', '--quiet', `${server.proxy.url}/scale.git`, dest]);
    return dest;
  }
  async function check(server: Server, dest: string): Promise<void> {
    const count = Number(await sandbox.git(['--git-dir', dest, 'rev-list', '--all', '--count']));
    if (count !== commits) throw new Error(`${server.name}: clone has ${count} of ${commits} commits`);
    await rm(dest, { recursive: true, force: true });
  }

  /** `alternate` between the two servers, started for these runs alone. */
  async function sideBySide<T extends object>(runs: number, run: (server: Server) => Promise<T>) {
    const servers = await startServers();
    try {
      return await alternate(
        runs,
        () => run(servers.ours),
        () => run(servers.git),
      );
    } finally {
      await stopServers();
    }
  }
  const med = <T>(list: T[], key: (t: T) => number) => median(list.map(key));

  /** The four figures of a span of server work: wall, CPU, memory over idle, and a note. */
  function recordServer(
    id: string,
    what: string,
    r: { ours: (Cost & { bytes?: number })[]; git: (Cost & { bytes?: number })[] },
    goals: Goals = {},
  ) {
    const note = `${what}; ${shape}; median of ${r.ours.length}${QUICK ? ' (quick)' : ''}`;
    const peer = 'git http-backend';
    record({
      id: `scale.${id}.ms`,
      value: med(r.ours, (c) => c.wallMs),
      unit: 'ms',
      peer,
      peerValue: med(r.git, (c) => c.wallMs),
      better: 'lower',
      ...goalOf(goals, 'ms'),
      note: `wall, seen by the client; ${note}`,
    });
    record({
      id: `scale.${id}.server-cpu-s`,
      value: med(r.ours, (c) => c.cpuMs) / 1000,
      unit: 's',
      peer,
      peerValue: med(r.git, (c) => c.cpuMs) / 1000,
      better: 'lower',
      ...goalOf(goals, 'server-cpu-s'),
      note: `server CPU-seconds (user + system of the server process and the processes it started); ${note}`,
    });
    const growth = (c: Cost) => (c.peakBytes - c.baseBytes) / MB;
    const idle = (list: Cost[]) => (median(list.map((c) => c.baseBytes)) / MB).toFixed(0);
    record({
      id: `scale.${id}.server-mem.mb`,
      value: med(r.ours, growth),
      unit: 'MB',
      peer,
      peerValue: med(r.git, growth),
      better: 'lower',
      ...goalOf(goals, 'server-mem.mb'),
      note: `server private memory: peak RssAnon of the server's process tree over its figure just before (memory the server kept from earlier runs of this row counts in that figure, servers start afresh for each row: gitport ${idle(r.ours)} MB, git's node:http bridge ${idle(r.git)} MB); ${note}`,
    });
    record({
      id: `scale.${id}.server-peak.mb`,
      value: med(r.ours, (c) => c.peakBytes) / MB,
      unit: 'MB',
      peer,
      peerValue: med(r.git, (c) => c.peakBytes) / MB,
      better: 'lower',
      ...goalOf(goals, 'server-peak.mb'),
      note: `server private memory: peak RssAnon of the server's process tree (gitport serve: its process with its workers; git: the node:http CGI bridge, git http-backend, upload-pack, pack-objects); ${note}`,
    });
    if (r.ours[0]?.bytes !== undefined) {
      record({
        id: `scale.${id}.sent.mb`,
        value: med(r.ours, (c) => c.bytes ?? 0) / MB,
        unit: 'MB',
        peer,
        peerValue: med(r.git, (c) => c.bytes ?? 0) / MB,
        better: 'lower',
        ...goalOf(goals, 'sent.mb'),
        note: `bytes the server sent (HTTP responses, through a counting proxy); ${note}`,
      });
    }
  }

  bench(
    'clone through the gateway',
    async () => {
      await setup();
      const r = await sideBySide(RUNS, async (server) => {
        const before = server.proxy.received;
        const cost = await measureServer(server.child.pid as number, () => clone(server));
        await check(server, cost.result);
        return { ...cost, bytes: server.proxy.received - before };
      });
      recordServer('clone', 'git clone --bare (protocol v2) through gitport serve (2 workers)', r, {
        ms: atMost(1),
        'server-cpu-s': atMost(1.5),
        'server-peak.mb': atMost(1),
      });
    },
    once,
  );

  bench(
    '4 concurrent clones',
    async () => {
      await setup();
      const r = await sideBySide(RUNS, async (server) => {
        // the clones share the proxy: its count over the whole span is what the four cost
        const before = server.proxy.received;
        const cost = await measureServer(server.child.pid as number, () =>
          Promise.all([1, 2, 3, 4].map(() => clone(server))),
        );
        const bytes = server.proxy.received - before;
        for (const dest of cost.result) await check(server, dest);
        return { ...cost, bytes };
      });
      recordServer('clone-4x', '4 concurrent git clone --bare through gitport serve (2 workers)', r, { ms: atMost(1) });
    },
    once,
  );

  for (const filter of ['blob:none', 'tree:0']) {
    bench(
      `partial clone (${filter}) through the gateway`,
      async () => {
        await setup();
        let received = 0;
        const r = await sideBySide(RUNS, async (server) => {
          const before = server.proxy.received;
          const dest = fresh('partial');
          const cost = await measureServer(server.child.pid as number, () =>
            sandbox.git(['clone', '--bare', '--quiet', `--filter=${filter}`, `${server.proxy.url}/scale.git`, dest]),
          );
          const bytes = server.proxy.received - before;
          const counts = await sandbox.git(['--git-dir', dest, 'count-objects', '-v']);
          const inPack = Number(/in-pack: (\d+)/.exec(counts)?.[1]);
          if (received !== 0 && inPack !== received) {
            throw new Error(`${server.name}: partial clone holds ${inPack} objects, the other server sent ${received}`);
          }
          received = inPack;
          await check(server, dest);
          return { ...cost, bytes };
        });
        recordServer(
          `partial-${filter.replace(':', '-')}`,
          `git clone --bare --filter=${filter} (protocol v2, ${received} objects) through gitport serve (2 workers); git http-backend with uploadpack.allowFilter`,
          r,
          { 'sent.mb': { max: 1.05, on: 'ratio', source: 'issue 28' } },
        );
      },
      once,
    );
  }

  bench(
    `incremental fetch of the last ${FETCH_COMMITS} commits`,
    async () => {
      await setup();
      // a client holding main~N and everything it reaches, and nothing newer
      const old = join(root, 'old.git');
      await sandbox.git(['clone', '--bare', '--quiet', repo, old]);
      const base = await sandbox.git(['--git-dir', repo, 'rev-parse', `refs/heads/main~${FETCH_COMMITS}`]);
      await sandbox.git(['--git-dir', old, 'update-ref', 'refs/heads/main', base]);
      const client = fresh('fetch-base');
      await sandbox.git(['clone', '--bare', '--quiet', '--single-branch', '--no-tags', `file://${old}`, client]);
      await rm(old, { recursive: true, force: true });
      const r = await sideBySide(RUNS, async (server) => {
        const dir = fresh('fetch');
        // hard links: git never rewrites a pack or an index in place
        await sandbox.exec('cp', ['-al', client, dir]);
        const before = server.proxy.received;
        const cost = await measureServer(server.child.pid as number, () =>
          sandbox.git([
            '--git-dir',
            dir,
            'fetch',
            '--quiet',
            '--no-tags',
            `${server.proxy.url}/scale.git`,
            '+refs/heads/main:refs/heads/main',
          ]),
        );
        const bytes = server.proxy.received - before;
        const got = await sandbox.git(['--git-dir', dir, 'rev-parse', 'refs/heads/main']);
        if (got !== head) throw new Error(`${server.name}: fetch left main at ${got}`);
        await sandbox.git(['--git-dir', dir, 'fsck', '--connectivity-only', '--no-dangling']);
        await rm(dir, { recursive: true, force: true });
        return { ...cost, bytes };
      });
      await rm(client, { recursive: true, force: true });
      recordServer(
        `fetch-${FETCH_COMMITS}`,
        `git fetch of main from main~${FETCH_COMMITS} (first parent, merged topics included) through gitport serve`,
        r,
        { ms: atMost(1.2), 'sent.mb': atMost(1.05), 'server-peak.mb': atMost(1.5) },
      );
    },
    once,
  );

  /** Three figures of a command side by side: wall, CPU, peak memory (and output size). */
  function recordCommand(
    id: string,
    peer: string,
    what: string,
    r: { ours: CommandCost[]; git: CommandCost[] },
    goals: Goals = {},
  ) {
    const note = `${what}; ${shape}; median of ${r.ours.length}${QUICK ? ' (quick)' : ''}`;
    record({
      id: `scale.${id}.ms`,
      value: med(r.ours, (c) => c.wallMs),
      unit: 'ms',
      peer,
      peerValue: med(r.git, (c) => c.wallMs),
      better: 'lower',
      ...goalOf(goals, 'ms'),
      note: `wall, process start included; ${note}`,
    });
    record({
      id: `scale.${id}.cpu-s`,
      value: med(r.ours, (c) => c.cpuMs) / 1000,
      unit: 's',
      peer,
      peerValue: med(r.git, (c) => c.cpuMs) / 1000,
      better: 'lower',
      ...goalOf(goals, 'cpu-s'),
      note: `CPU-seconds (user + system); ${note}`,
    });
    record({
      id: `scale.${id}.mem.mb`,
      value: med(r.ours, (c) => c.peakBytes) / MB,
      unit: 'MB',
      peer,
      peerValue: med(r.git, (c) => c.peakBytes) / MB,
      better: 'lower',
      ...goalOf(goals, 'mem.mb'),
      note: `peak RssAnon of the process (private memory, not the mapped pack); ${note}`,
    });
  }

  /**
   * Alternates gitport and git, `runs` times each, which goes first alternating too, each run
   * after the last one's writes are on disk.
   */
  async function alternate<T>(runs: number, ourRun: () => Promise<T>, gitRun: () => Promise<T>) {
    const r: { ours: T[]; git: T[] } = { ours: [], git: [] };
    const ours = async () => {
      await writtenBack();
      r.ours.push(await ourRun());
    };
    const git = async () => {
      await writtenBack();
      r.git.push(await gitRun());
    };
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        await ours();
        await git();
      } else {
        await git();
        await ours();
      }
    }
    return r;
  }

  bench(
    'library clone between workers to disk',
    async () => {
      await setup();
      const cloned = async (argv: (dest: string) => string[]) => {
        const dest = fresh('library-clone');
        const cost = await runCommand(argv(dest));
        const count = Number(await sandbox.git(['--git-dir', dest, 'rev-list', '--all', '--count']));
        if (count !== commits) throw new Error(`${argv(dest).join(' ')}: clone has ${count} of ${commits} commits`);
        await rm(dest, { recursive: true, force: true });
        return cost;
      };
      const r = await alternate(
        RUNS,
        () => cloned((dest) => [process.execPath, ...nodeArgs, join(here, 'workers', 'library-clone.mjs'), repo, dest]),
        () => cloned((dest) => ['git', 'clone', '--bare', '--no-local', '--quiet', repo, dest]),
      );
      recordCommand(
        'library-clone',
        'git clone --bare --no-local',
        'a Node process whose one worker thread hosts the repository (openNodeRepository, bitmaps on, hostGit; a 2 MB young generation, as host.ts advises) and whose other clones it bare to disk over a MessageChannel (busRemote(...).clone, protocol v2, its default 512 KiB window, a 4 MB young generation, as remote.ts advises; built packages)',
        r,
        { ms: atMost(1), 'mem.mb': atMost(1.5) },
      );
    },
    once,
  );

  bench(
    'index-pack',
    async () => {
      await setup();
      const index = async (argv: (dir: string) => string[]) => {
        const dir = fresh('index');
        await sandbox.git(['init', '--bare', '--quiet', dir]);
        const cost = await runCommand(argv(dir), { stdinFile: pack, keepStdout: true });
        if (!/^pack\t[0-9a-f]{40}\n$/.test(new TextDecoder().decode(cost.stdout))) {
          throw new Error(`index-pack printed ${new TextDecoder().decode(cost.stdout)}`);
        }
        await rm(dir, { recursive: true, force: true });
        return cost;
      };
      const r = await alternate(
        RUNS,
        () => index((dir) => [process.execPath, ...nodeArgs, gitportBin, 'index-pack', '--git-dir', dir, '--stdin']),
        () => index((dir) => ['git', '--git-dir', dir, 'index-pack', '--stdin']),
      );
      recordCommand('index-pack', 'git index-pack --stdin', 'index-pack --stdin of the repository pack', r, {
        ms: atMost(1),
        'mem.mb': atMost(2),
      });
    },
    once,
  );

  /** Objects in a pack, from its header; throws unless it is a version 2 pack. */
  const packObjectCount = (bytes: Uint8Array) => {
    const text = new TextDecoder().decode(bytes.subarray(0, 4));
    if (text !== 'PACK' || bytes.length < 32) throw new Error('not a pack');
    return new DataView(bytes.buffer, bytes.byteOffset + 8, 4).getUint32(0);
  };

  /**
   * `gitport pack-objects --all` next to `git pack-objects --revs --all` on `gitDir` (git with
   * `gitConfig`), both checked to hold every object: wall, CPU, memory and pack bytes.
   */
  async function packAll(
    gitDir: string,
    gitConfig: string[],
    row: string,
    peer: string,
    what: string,
    goals: Goals = {},
  ) {
    await setup();
    const counted = async (argv: string[]) => {
      const cost = await runCommand(argv, { keepStdout: true });
      const count = packObjectCount(cost.stdout);
      if (count !== objects) throw new Error(`${argv.join(' ')}: ${count} of ${objects} objects`);
      cost.stdout = new Uint8Array(0);
      return cost;
    };
    const r = await alternate(
      RUNS,
      () =>
        counted([process.execPath, ...nodeArgs, gitportBin, 'pack-objects', '--git-dir', gitDir, '--all', '--stdout']),
      () =>
        counted([
          'git',
          ...gitConfig,
          '--git-dir',
          gitDir,
          'pack-objects',
          '--revs',
          '--all',
          '--stdout',
          '-q',
          '--delta-base-offset',
        ]),
    );
    recordCommand(row, peer, what, r, goals);
    record({
      id: `scale.${row}.size`,
      value: med(r.ours, (c) => c.stdoutBytes) / MB,
      unit: 'MB',
      peer,
      peerValue: med(r.git, (c) => c.stdoutBytes) / MB,
      better: 'lower',
      note: `pack bytes; ${what}; ${shape}`,
    });
  }

  // async functions: tinybench calls any other function once more, to learn whether it returns
  // a promise, and these rows would run three times
  bench(
    'pack-objects reusing deltas',
    async () =>
      await packAll(
        repo,
        [],
        'pack-objects.reuse',
        'git pack-objects --revs --all',
        'every ref, reusing stored deltas (a clone)',
        { ms: atMost(1.5) },
      ),
    once,
  );

  bench(
    'pack-objects reusing deltas, no bitmap',
    async () =>
      await packAll(
        plain,
        ['-c', 'pack.useBitmaps=false'],
        'pack-objects.reuse-nobitmap',
        'git -c pack.useBitmaps=false pack-objects --revs --all',
        'every ref, reusing stored deltas, on a copy of the repository without its .bitmap',
      ),
    once,
  );

  bench(
    'object walk, no bitmap',
    async () => {
      await setup();
      const refs = await sandbox.git(['--git-dir', plain, 'for-each-ref', '--format=%(objectname)']);
      const listed = async (argv: string[], stdin?: string) => {
        const cost = await runCommand(argv, {
          keepStdout: true,
          stdin: stdin === undefined ? undefined : new TextEncoder().encode(stdin),
        });
        const count = new TextDecoder()
          .decode(cost.stdout)
          .split('\n')
          .filter((l) => l.length > 0).length;
        if (count !== objects) throw new Error(`${argv.join(' ')}: ${count} of ${objects} objects`);
        cost.stdout = new Uint8Array(0);
        return cost;
      };
      const r = await alternate(
        RUNS,
        () => listed([process.execPath, ...nodeArgs, join(here, 'workers', 'enumerate.mjs'), plain], refs),
        () => listed(['git', '-c', 'pack.useBitmaps=false', '--git-dir', plain, 'rev-list', '--objects', '--all']),
      );
      recordCommand(
        'enumerate',
        'git rev-list --objects --all',
        'enumerateObjects (built) of every ref, ids to stdout, on a copy of the repository without its .bitmap',
        r,
      );
    },
    once,
  );

  bench(
    'pack-objects computing deltas',
    async () => {
      await setup();
      const revs = COMPUTE_COMMITS === 0 ? `${head}\n` : `${head}\n^refs/heads/main~${COMPUTE_COMMITS}\n`;
      const excluded =
        COMPUTE_COMMITS === 0
          ? []
          : [`^${await sandbox.git(['--git-dir', repo, 'rev-parse', `refs/heads/main~${COMPUTE_COMMITS}`])}`];
      const counts: number[] = [];
      const counted = async (argv: string[], stdin: string) => {
        const cost = await runCommand(argv, { keepStdout: true, stdin: new TextEncoder().encode(stdin) });
        counts.push(packObjectCount(cost.stdout));
        cost.stdout = new Uint8Array(0);
        return cost;
      };
      const r = await alternate(
        RUNS,
        () =>
          counted(
            [process.execPath, ...nodeArgs, join(here, 'workers', 'create-pack.mjs'), repo, '0'],
            [head, ...excluded].join('\n'),
          ),
        () =>
          counted(
            [
              'git',
              '-c',
              'pack.allowPackReuse=false',
              '--git-dir',
              repo,
              'pack-objects',
              '--revs',
              '--no-reuse-object',
              '--stdout',
              '-q',
              '--delta-base-offset',
            ],
            revs,
          ),
      );
      if (new Set(counts).size !== 1) throw new Error(`the packs hold different object counts: ${counts}`);
      const what =
        COMPUTE_COMMITS === 0
          ? `the whole history (${counts[0]} objects), every object re-deflated and every delta searched`
          : `main~${COMPUTE_COMMITS}..main (${counts[0]} objects), every object re-deflated and every delta searched`;
      const peer = 'git pack-objects --no-reuse-object';
      recordCommand('pack-objects.compute', peer, `createPack({ reuse: false }) (built) for ${what}`, r, {
        ms: atMost(1.5),
      });
      record({
        id: 'scale.pack-objects.compute.size',
        value: med(r.ours, (c) => c.stdoutBytes) / MB,
        unit: 'MB',
        peer,
        peerValue: med(r.git, (c) => c.stdoutBytes) / MB,
        better: 'lower',
        goal: atMost(1.02),
        note: `pack bytes; ${what}; ${shape}`,
      });
    },
    once,
  );
});
