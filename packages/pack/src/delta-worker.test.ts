import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { serializeCommit } from './commit.js';
import { deltaWorkerHelps, deltaWorkerUse, remoteDeltaSearch } from './delta-worker.node.js';
import { importPack } from './pack-import.js';
import { createPack } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';
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
