/**
 * The writer copies reused entries from where the store says they lie, when it writes them: it
 * keeps locations, not the bytes `readRaw` returned (views of the store's page buffers, which
 * would keep the whole source pack in memory until the end).
 */
import * as nodeFs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommitLinks } from './commit.js';
import { FsObjectStore } from './fs-store.js';
import type { ObjectId } from './object.js';
import { importPack } from './pack-import.js';
import { createPack } from './pack-writer.js';
import { MemoryObjectStore, type ObjectStore } from './store.js';
import type { PackSource } from './stored-location.js';
import { readHeaderOf, readRawOf } from './stored-reads.js';
import { serializeTree } from './tree.js';

const enc = new TextEncoder();
const dirs: string[] = [];

function commitObject(tree: ObjectId, parents: ObjectId[], message: string): Uint8Array {
  const who = 'A U Thor <author@example.com> 1700000000 +0000';
  const lines = [`tree ${tree}`, ...parents.map((p) => `parent ${p}`), `author ${who}`, `committer ${who}`];
  return enc.encode(`${lines.join('\n')}\n\n${message}\n`);
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A history of similar blobs (stored as deltas once packed), packed into a store on disk. */
async function packedStore(): Promise<{ store: FsObjectStore; head: ObjectId; all: ObjectId[] }> {
  const mem = new MemoryObjectStore();
  let parent: ObjectId | undefined;
  let text = '';
  for (let i = 0; i < 60; i++) {
    text += `line ${i} ${'x'.repeat(i % 7)} of a file that grows one line per commit\n`;
    const blob = await mem.write('blob', enc.encode(text));
    const other = await mem.write('blob', enc.encode(`${text}\nsecond file ${i % 5}\n`));
    const tree = await mem.write(
      'tree',
      serializeTree([
        { mode: '100644', type: 'blob', name: 'a.txt', oid: blob },
        { mode: '100644', type: 'blob', name: 'b.txt', oid: other },
      ]),
    );
    parent = await mem.write('commit', commitObject(tree, parent ? [parent] : [], `commit ${i}`));
  }
  const dir = await mkdtemp(join(tmpdir(), 'gitport-writer-stored-'));
  dirs.push(dir);
  const store = new FsObjectStore(nodeFs, dir, { pageCacheBytes: 0 });
  const result = await importPack(store, createPack(mem, { wants: [parent!] }));
  return { store, head: parent!, all: [...result.objects] };
}

describe('createPack over stored locations', () => {
  it('reads reused entries at write time through their location, not the bytes readRaw gave', async () => {
    const { store, head, all } = await packedStore();
    let readThrough = 0;
    let written = 0;
    let ahead = 0;
    const counted = new WeakMap<PackSource, PackSource>();
    const counting = (source: PackSource): PackSource => {
      let c = counted.get(source);
      if (!c) {
        c = {
          readInto: async (position, into) => {
            readThrough += into.length;
            await source.readInto(position, into);
          },
        };
        counted.set(source, c);
      }
      return c;
    };
    let deltas = 0;
    // the bytes readRaw returns are spoiled: a pack made of them would not import
    const spoiled: ObjectStore = {
      has: (oid) => store.has(oid),
      read: (oid) => store.read(oid),
      readHeader: (oid) => readHeaderOf(store, oid),
      write: (type, data) => store.write(type, data),
      async readRaw(oid) {
        const raw = await readRawOf(store, oid);
        if (!raw?.stored) throw new Error('no location');
        if (raw.kind === 'delta') deltas++;
        return {
          ...raw,
          compressed: new Uint8Array(raw.compressed.length).fill(0xa5),
          stored: { ...raw.stored, source: counting(raw.stored.source) },
        };
      },
    };
    const chunks: Uint8Array[] = [];
    for await (const chunk of createPack(spoiled, { wants: [head] })) {
      chunks.push(chunk.slice());
      written += chunk.length;
      // nothing is read ahead of what goes out
      ahead = Math.max(ahead, readThrough - written);
    }
    expect(all.length).toBe(240);
    expect(deltas).toBeGreaterThan(50);
    expect(readThrough).toBeGreaterThan(0);
    expect(ahead).toBeLessThanOrEqual(0);
    const copy = new MemoryObjectStore();
    const result = await importPack(copy, chunks);
    expect([...result.objects].sort()).toEqual([...all].sort());
    for (const oid of all) expect(await copy.read(oid)).toEqual(await store.read(oid));
    await store.close();
  });
});

describe('createPack with a lead commit', () => {
  it('writes the commit and its trees (their bases first) before any other commit', async () => {
    const { store, head } = await packedStore();
    // not every object of the stored pack (which would go out as it is)
    const tip = parseCommitLinks((await store.read(head))!.data).parents[0]!;
    // an older commit: its tree is stored as a delta
    let lead = tip;
    for (let i = 0; i < 20; i++) lead = parseCommitLinks((await store.read(lead))!.data).parents[0]!;
    const tree = parseCommitLinks((await store.read(lead))!.data).tree;
    for (const options of [{ lead }, { lead, reuse: false }, { lead, deltas: false }]) {
      const order: { oid: ObjectId; type: string }[] = [];
      const target = new MemoryObjectStore();
      await importPack(target, createPack(store, { wants: [tip] }, options), {
        onObject: (oid, type) => order.push({ oid, type }),
      });
      expect(order.length).toBe(59 * 4);
      const firstOtherCommit = order.findIndex((o) => o.type === 'commit' && o.oid !== lead);
      const at = (oid: ObjectId) => order.findIndex((o) => o.oid === oid);
      expect(at(lead)).toBeGreaterThanOrEqual(0);
      expect(at(lead)).toBeLessThan(firstOtherCommit);
      expect(at(tree)).toBeLessThan(firstOtherCommit);
    }
    // without it, the newest commit comes first
    const order: ObjectId[] = [];
    await importPack(new MemoryObjectStore(), createPack(store, { wants: [tip] }), {
      onObject: (oid, type) => type === 'commit' && order.push(oid),
    });
    expect(order[0]).toBe(tip);
    expect(order.indexOf(lead)).toBeGreaterThan(0);
    await store.close();
  });
});
