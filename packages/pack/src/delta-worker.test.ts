import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as nodeFs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeArgs } from '@gitport/test-helpers/ts-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeCommit } from './commit.js';
import { deltaWorkerHelps, deltaWorkerUse, remoteDeltaSearch } from './delta-worker.node.js';
import { FsObjectStore } from './fs-store.js';
import { TYPE_CODES } from './object.js';
import { importPack } from './pack-import.js';
import { createPack } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';
import { readHeaderOf } from './stored-reads.js';
import { concat } from './test-bytes.js';
import { serializeTree } from './tree.js';

/** A history big enough for the writer to share the delta search: files edited over many commits. */
async function history(commits: number, files: number) {
  const store = new MemoryObjectStore();
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const contents = Array.from({ length: files }, (_, f) => {
    const lines: string[] = [];
    for (let l = 0; l < 1500; l++) lines.push(`file ${f} line ${l} ${Math.floor(random() * 1e9).toString(36)}`);
    return lines;
  });
  let parent: string | undefined;
  for (let c = 0; c < commits; c++) {
    const entries = [];
    for (let f = 0; f < files; f++) {
      const lines = contents[f]!;
      if (c > 0) lines[Math.floor(random() * lines.length)] = `edit ${c} ${random()}`;
      const data = new TextEncoder().encode(`${lines.join('\n')}\n`);
      entries.push({ mode: '100644', name: `f${f}.txt`, oid: await store.write('blob', data), type: 'blob' as const });
    }
    const tree = await store.write('tree', serializeTree(entries));
    const person = { name: 'a', email: 'a@b', timestamp: 1_700_000_000 + c, timezone: '+0000' };
    parent = await store.write(
      'commit',
      serializeCommit({
        tree,
        parents: parent ? [parent] : [],
        author: person,
        committer: person,
        extraHeaders: [],
        message: `c${c}\n`,
      }),
    );
  }
  return { store, head: parent! };
}

function same(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c.slice());
  return concat(parts);
}

describe('delta search on a worker thread', () => {
  it('is available under Node with two cores or more, and not started on one core', () => {
    expect(deltaWorkerHelps(1)).toBe(false);
    expect(deltaWorkerHelps(0)).toBe(false);
    expect(deltaWorkerHelps(2)).toBe(true);
    expect(deltaWorkerHelps(64)).toBe(true);
    const jobs = deltaWorkerUse.jobs;
    expect(remoteDeltaSearch(1)).toBeUndefined();
    expect(remoteDeltaSearch(2)).toBeDefined();
    // asking for the search begins no job
    expect(deltaWorkerUse.jobs).toBe(jobs);
  });

  it('a worker started ahead of a search that never comes does not keep the process alive', async () => {
    // what a pack whose deltas are all reused does: it asks for the worker and begins no job
    const module = new URL('./delta-worker.node.ts', import.meta.url).href;
    const script = `const m = await import(${JSON.stringify(module)}); if (!m.remoteDeltaSearch(2)) process.exit(7); setTimeout(() => {}, 300);`;
    const child = spawn(process.execPath, [...tsNodeArgs, '--input-type=module', '-e', script], { stdio: 'inherit' });
    // a process still alive long after its last timer is killed: the test then fails on the signal
    const kill = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    clearTimeout(kill);
    expect(signal).toBeNull();
    expect(code).toBe(0);
  });

  it('the pack written with the worker holds every object, deltified, like the one-thread pack', async () => {
    // 40 commits x 12 files of ~60 KB: 480 blobs, ~29 MB of candidates, past the sharing thresholds
    const { store, head } = await history(40, 12);
    const before = { ...deltaWorkerUse };
    const two = await collect(createPack(store, { wants: [head] }, { threads: 2 }));
    const afterTwo = { ...deltaWorkerUse };
    const one = await collect(createPack(store, { wants: [head] }, { threads: 1 }));
    // the worker searched part of the candidates with two threads (where the machine has two
    // cores), and was not asked at all with one
    const used = deltaWorkerHelps(availableParallelism());
    expect(afterTwo.jobs - before.jobs).toBe(used ? 1 : 0);
    expect(afterTwo.results > before.results).toBe(used);
    expect(deltaWorkerUse).toEqual(afterTwo);
    const total = store.size;
    for (const pack of [two, one]) {
      const target = new MemoryObjectStore();
      const result = await importPack(target, [pack]);
      expect(result.objects.length).toBe(total);
      expect(target.size).toBe(total);
      let differing = 0;
      for (const oid of result.objects) {
        if (!same((await target.read(oid))?.data, (await store.read(oid))?.data)) differing++;
      }
      expect(differing).toBe(0);
    }
    // deltas were found on both sides: far smaller than the blobs
    expect(two.length).toBeLessThan(29_000_000 / 10);
    expect(Math.abs(two.length - one.length) / one.length).toBeLessThan(0.1);
  });
});

describe('delta search on a worker that reads the repository itself', () => {
  let sandbox: GitSandbox;
  let gitDir: string;
  let head: string;
  beforeAll(async () => {
    sandbox = await createGitSandbox();
    gitDir = sandbox.path('repo.git');
    await sandbox.git(['init', '--quiet', '--bare', gitDir]);
    // 30 commits x 10 files of ~40 KB, one line edited per file and commit: 300 blobs, ~12 MB
    // of candidates, past the sharing thresholds
    let seed = 11;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const files = Array.from({ length: 10 }, (_, f) =>
      Array.from({ length: 1000 }, (_, l) => `file ${f} line ${l} ${Math.floor(random() * 1e9).toString(36)}`),
    );
    let stream = '';
    for (let c = 0; c < 30; c++) {
      stream += `commit refs/heads/main\ncommitter a <a@b> ${1_700_000_000 + c} +0000\ndata 3\nc${c}\n`;
      for (let f = 0; f < files.length; f++) {
        const lines = files[f]!;
        if (c > 0) lines[Math.floor(random() * lines.length)] = `edit ${c} ${random()}`;
        const text = `${lines.join('\n')}\n`;
        stream += `M 100644 inline f${f}.txt\ndata ${Buffer.byteLength(text)}\n${text}\n`;
      }
    }
    await sandbox.git(['--git-dir', gitDir, 'fast-import', '--quiet'], { input: stream });
    await sandbox.git(['--git-dir', gitDir, 'repack', '-adq']);
    head = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'refs/heads/main']);
  });
  afterAll(async () => {
    await sandbox?.cleanup();
  });

  it('opens a store on Node fs itself, and not a store on another fs', () => {
    const search = remoteDeltaSearch(2)!;
    const options = { window: 10, depth: 50, level: 6, wholeBudget: 1 << 20 };
    const own = search.begin({ ...options, store: new FsObjectStore(nodeFs, gitDir) });
    // the same files through another fs object: the worker cannot know what it would see
    const other = search.begin({ ...options, store: new FsObjectStore({ ...nodeFs.promises }, gitDir) });
    const memory = search.begin({ ...options, store: new MemoryObjectStore() });
    expect([own.reads, other.reads, memory.reads]).toEqual([true, false, false]);
    for (const job of [own, other, memory]) job.cancel();
  });

  it('writes a pack git indexes, with every object, as small as the one-thread pack', async () => {
    const before = { ...deltaWorkerUse };
    const packOf = async (threads: number) => {
      const store = new FsObjectStore(nodeFs, gitDir);
      try {
        return await collect(createPack(store, { wants: [head] }, { reuse: false, threads }));
      } finally {
        await store.close();
      }
    };
    const two = await packOf(2);
    const used = deltaWorkerHelps(availableParallelism());
    expect(deltaWorkerUse.reading - before.reading).toBe(used ? 1 : 0);
    expect(deltaWorkerUse.results > before.results).toBe(used);
    const one = await packOf(1);
    const objects = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', '--all'])).split('\n').length;
    for (const [name, pack] of [
      ['two', two],
      ['one', one],
    ] as const) {
      const file = sandbox.path(`${name}.pack`);
      await writeFile(file, pack);
      await sandbox.git(['--git-dir', gitDir, 'index-pack', '--strict', file]);
      const verified = await sandbox.git(['--git-dir', gitDir, 'verify-pack', '-v', file.replace(/\.pack$/, '.idx')]);
      const entries = verified.split('\n').filter((l) => /^[0-9a-f]{40} /.test(l));
      expect(entries.length).toBe(objects);
      // deltas were found: most blobs are stored as deltas
      expect(entries.filter((l) => l.includes(' blob ') && l.split(/\s+/).length >= 7).length).toBeGreaterThan(250);
    }
    expect(two.length).toBeLessThan(12_000_000 / 10);
    expect(Math.abs(two.length - one.length) / one.length).toBeLessThan(0.05);
  });
});

describe('object headers read on both threads', () => {
  let sandbox: GitSandbox;
  let gitDir: string;
  let head: string;
  let oids: string[];
  beforeAll(async () => {
    sandbox = await createGitSandbox();
    gitDir = sandbox.path('repo.git');
    await sandbox.git(['init', '--quiet', '--bare', gitDir]);
    // 40 commits x 30 small files, every file edited in every commit: ~1,300 objects, past the
    // count from which the writer shares the header reads
    let stream = '';
    for (let c = 0; c < 40; c++) {
      stream += `commit refs/heads/main\ncommitter a <a@b> ${1_700_000_000 + c} +0000\ndata 3\nc${c}\n`;
      for (let f = 0; f < 30; f++) {
        const text = `${Array.from({ length: 40 }, (_, l) => `file ${f} line ${l} commit ${l === c ? c : 0}`).join('\n')}\n`;
        stream += `M 100644 inline d${f % 5}/f${f}.txt\ndata ${Buffer.byteLength(text)}\n${text}\n`;
      }
    }
    await sandbox.git(['--git-dir', gitDir, 'fast-import', '--quiet'], { input: stream });
    await sandbox.git(['--git-dir', gitDir, 'repack', '-adq']);
    head = await sandbox.git(['--git-dir', gitDir, 'rev-parse', 'refs/heads/main']);
    oids = (await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', '--all']))
      .split('\n')
      .map((l) => l.slice(0, 40));
  });
  afterAll(async () => {
    await sandbox?.cleanup();
  });

  it('each batch is read once, by one thread or the other, as the store reads it', async () => {
    const store = new FsObjectStore(nodeFs, gitDir);
    const search = remoteDeltaSearch(2)!;
    try {
      expect(search.prepare(store)).toBe(true);
      expect(search.prepare(new FsObjectStore({ ...nodeFs.promises }, gitDir))).toBe(false);
      expect(search.headers(new MemoryObjectStore(), oids, 16)).toBeUndefined();
      const absent = '0123456789abcdef0123456789abcdef01234567';
      const list = [...oids, absent];
      const expected = await Promise.all(list.map((oid) => readHeaderOf(store, oid)));
      // the caller takes none: the worker reads every batch
      const all = search.headers(store, list, 16)!;
      expect(all.batches).toBe(Math.ceil(list.length / 16));
      const got = await all.done();
      for (let k = 0; k < oids.length; k++) {
        expect([got.types[k], got.sizes[k]]).toEqual([TYPE_CODES[expected[k]!.type], expected[k]!.size]);
      }
      expect(got.types[oids.length]).toBe(0);
      // the caller takes batches from the last back until the worker has one: each batch one reader's
      for (let round = 0; round < 3; round++) {
        const shared = search.headers(store, oids, 8)!;
        let b = shared.batches - 1;
        while (b >= 0 && shared.claim(b)) b--;
        const there = b >= 0 ? await shared.done() : undefined;
        for (let k = 0; k < oids.length; k++) {
          const mine = Math.floor(k / 8) > b;
          expect(there?.types[k] ?? 0).toBe(mine ? 0 : TYPE_CODES[expected[k]!.type]);
        }
      }
    } finally {
      await store.close();
    }
  });

  it('a pack written without reuse, headers read on both threads, is one git indexes', async () => {
    const before = deltaWorkerUse.headers;
    const store = new FsObjectStore(nodeFs, gitDir);
    let pack: Uint8Array;
    try {
      pack = await collect(createPack(store, { wants: [head] }, { reuse: false }));
    } finally {
      await store.close();
    }
    expect(deltaWorkerUse.headers - before).toBe(deltaWorkerHelps(availableParallelism()) ? 1 : 0);
    const file = sandbox.path('written.pack');
    await writeFile(file, pack);
    await sandbox.git(['--git-dir', gitDir, 'index-pack', '--strict', file]);
    const verified = await sandbox.git(['--git-dir', gitDir, 'verify-pack', '-v', file.replace(/\.pack$/, '.idx')]);
    expect(verified.split('\n').filter((l) => /^[0-9a-f]{40} /.test(l)).length).toBe(oids.length);
  });
});
