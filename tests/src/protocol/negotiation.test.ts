/**
 * Negotiation efficiency: an incremental fetch after 5 new commits on a 5,000-commit history,
 * gitport client against gitport server (stateful v0 and v2 over an in-memory connection,
 * stateless v0 and v2 through the HTTP handlers) and against real `git upload-pack`. The pack
 * must hold exactly the new objects and the exchange must take few rounds.
 */
import { MemoryObjectStore } from '@gitport/pack';
import { connectionPair, fetch, MemoryRefStore, type Remote, serveUploadPack } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';
import { addCommits, loadRepository, localHttp, type MemoryRepository, spawnGitService } from './helpers.js';

let sandbox: GitSandbox;
let server: MemoryRepository;
let serverDir: string;
let newObjects: number;
let baseRefs: { name: string; oid: string }[];
let clientObjects: MemoryObjectStore;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-negotiation-');
  const history = await ensureHistory({ commits: 5000, seed: 7 });
  const work = sandbox.path('work');
  await sandbox.git(['clone', '-q', '--no-local', history.gitDir, work]);
  const base = await loadRepository(sandbox, history.gitDir);
  clientObjects = base.objects;
  baseRefs = await base.refs.list();
  await addCommits(sandbox, work, 5, 'incremental');
  serverDir = sandbox.path('server.git');
  await sandbox.git(['clone', '-q', '--bare', '--no-local', work, serverDir]);
  server = await loadRepository(sandbox, serverDir);
  const listed = await sandbox.git([
    '--git-dir',
    serverDir,
    'rev-list',
    '--objects',
    'main',
    '--not',
    ...baseRefs.map((r) => r.oid),
  ]);
  newObjects = listed.split('\n').filter((l) => l !== '').length;
}, 600_000);
afterAll(async () => {
  await sandbox?.cleanup();
});

/** A client that has the 5,000-commit history: shares the immutable objects, own refs. */
function client(): MemoryRepository {
  const objects = new MemoryObjectStore();
  return {
    objects,
    refs: new MemoryRefStore({
      refs: baseRefs.map((r) => ({ ...r, name: r.name.replace('refs/heads/', 'refs/remotes/origin/') })),
    }),
  };
}

async function copyObjects(target: MemoryObjectStore): Promise<void> {
  for (const oid of clientObjects.keys()) {
    const o = await clientObjects.read(oid);
    if (o) await target.writeHashed([{ oid, type: o.type, data: o.data }]);
  }
}

type Mode = { name: string; protocol: 0 | 2; stateless: boolean };
const modes: Mode[] = [
  { name: 'stateful v0', protocol: 0, stateless: false },
  { name: 'stateful v2', protocol: 2, stateless: false },
  { name: 'stateless v0', protocol: 0, stateless: true },
  { name: 'stateless v2', protocol: 2, stateless: true },
];

describe('incremental fetch after 5 new commits on 5,000', () => {
  it.each(modes)('gitport client against gitport server ($name)', async (mode) => {
    const local = client();
    await copyObjects(local.objects);
    let remote: Remote;
    let served: Promise<void> = Promise.resolve();
    const log: string[] = [];
    if (mode.stateless) remote = { url: 'http://local/repo.git', http: localHttp(server, log) };
    else {
      const [ours, theirs] = connectionPair();
      served = serveUploadPack(server, theirs, { protocol: mode.protocol });
      remote = { connection: ours };
    }
    const result = await fetch(local, remote, { protocol: mode.protocol, tags: 'none' });
    await served;
    expect(result.updates.map((u) => u.status)).toEqual(['ok']);
    expect(result.pack?.objects).toBe(newObjects);
    // stateful v0, like fetch-pack.c, sends a second batch of 32 before it reads the answer to
    // the first (which says ready), then `done` as its own request: two waits for the server
    const stateful = mode.protocol === 0 && !mode.stateless;
    expect(result.rounds).toBe(stateful ? 3 : 1);
    expect(result.haves).toBeLessThanOrEqual(stateful ? 48 : 16);
    if (mode.stateless) expect(log.filter((l) => l.startsWith('POST'))).toHaveLength(mode.protocol === 2 ? 2 : 1);
    expect(await local.refs.resolve('refs/remotes/origin/main')).toBe(await server.refs.resolve('refs/heads/main'));
  });

  it.each([0, 2] as const)('gitport client against git upload-pack (v%s) gets the same objects', async (protocol) => {
    const local = client();
    await copyObjects(local.objects);
    const svc = spawnGitService(sandbox, 'upload-pack', serverDir, { protocol });
    const result = await fetch(local, { connection: svc.connection }, { protocol, tags: 'none' });
    expect((await svc.exit).code).toBe(0);
    // git may send thin deltas: their bases are appended locally and counted too
    expect(result.pack?.objects).toBeGreaterThanOrEqual(newObjects);
    expect(result.pack?.objects).toBeLessThanOrEqual(2 * newObjects);
    expect(result.rounds).toBe(protocol === 0 ? 3 : 1);
  });

  it('a client with 500 commits the server lacks negotiates over several rounds and still gets a small pack', async () => {
    const local = client();
    await copyObjects(local.objects);
    // 500 local-only commits on top of the old main
    const base = baseRefs.find((r) => r.name === 'refs/heads/main')!.oid;
    const baseCommit = (await local.objects.read(base))!;
    const tree = /^tree ([0-9a-f]{40})/.exec(new TextDecoder().decode(baseCommit.data))![1];
    let parent = base;
    for (let i = 0; i < 500; i++) {
      const text = `tree ${tree}\nparent ${parent}\nauthor a <a@x> ${1_900_000_000 + i} +0000\ncommitter a <a@x> ${1_900_000_000 + i} +0000\n\nlocal ${i}\n`;
      parent = await local.objects.write('commit', new TextEncoder().encode(text));
    }
    await local.refs.update([{ name: 'refs/heads/local', old: null, new: parent }]);
    const gitModes = [
      { name: 'git upload-pack v0', protocol: 0 as const, stateless: false, git: true },
      { name: 'git upload-pack v2', protocol: 2 as const, stateless: false, git: true },
    ];
    for (const mode of [...modes.map((m) => ({ ...m, git: false })), ...gitModes]) {
      const objects = new MemoryObjectStore();
      await copyObjects(objects);
      for (let oid = parent; oid !== base; ) {
        const o = (await local.objects.read(oid))!;
        await objects.writeHashed([{ oid, type: o.type, data: o.data }]);
        oid = /\nparent ([0-9a-f]{40})/.exec(new TextDecoder().decode(o.data))![1]!;
      }
      const copy = { objects, refs: new MemoryRefStore({ refs: await local.refs.list() }) };
      let remote: Remote;
      let served: Promise<void> = Promise.resolve();
      if (mode.git) {
        const svc = spawnGitService(sandbox, 'upload-pack', serverDir, { protocol: mode.protocol });
        served = svc.exit.then(({ code, stderr }) => expect(code, stderr).toBe(0));
        remote = { connection: svc.connection };
      } else if (mode.stateless) remote = { url: 'http://local/repo.git', http: localHttp(server) };
      else {
        const [ours, theirs] = connectionPair();
        served = serveUploadPack(server, theirs, { protocol: mode.protocol });
        remote = { connection: ours };
      }
      const result = await fetch(copy, remote, { protocol: mode.protocol, tags: 'none' });
      await served;
      // git may add thin-delta bases, which are counted too
      if (mode.git) expect(result.pack?.objects, mode.name).toBeGreaterThanOrEqual(newObjects);
      else expect(result.pack?.objects, mode.name).toBe(newObjects);
      expect(result.rounds, mode.name).toBeGreaterThan(1);
      // git's schedule (fetch-pack.c next_flush): rounds end when the running count of haves
      // reaches 16, then +32 (stateful v0: rounds of 16, 32, 32, ...) or x2 (stateless, v2:
      // 16, 16, 32, 64, ...). The 500 newer local-only commits go first; the round that
      // reaches the shared history is the last one (or the one after, when the server says
      // ready only then), never all 5,500 commits.
      const stateful = mode.protocol === 0 && !mode.stateless;
      const thresholds = [16];
      while (thresholds.at(-1)! < 2000) {
        const t = thresholds.at(-1)!;
        thresholds.push(stateful ? t + 32 : t * 2);
      }
      const reaching = thresholds.findIndex((t) => t > 500);
      expect(result.haves, mode.name).toBeGreaterThan(500);
      expect(result.haves, mode.name).toBeLessThanOrEqual(thresholds[reaching + 1]!);
      // haves rounds, plus at most one request for `done`
      expect(result.rounds, mode.name).toBeGreaterThanOrEqual(reaching + 1);
      expect(result.rounds, mode.name).toBeLessThanOrEqual(reaching + 3);
    }
  });
});
