import { describe, expect, it, vi } from 'vitest';
import { importPack } from './pack-import.js';
import { PackReader } from './pack-reader.js';
import { createPack } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';
import { concat } from './test-bytes.js';
import { serializeTree } from './tree.js';
import { openInflateRests } from './zlib.node.js';

/** Calls of the inflater's entry point (a stream begun), and pieces fed to streams going on. */
const calls = vi.hoisted(() => ({ starts: 0, pieces: 0 }));

vi.mock('./zlib.node.js', async (importOriginal) => {
  const z = await importOriginal<typeof import('./zlib.node.js')>();
  return {
    ...z,
    inflateOne(...args: Parameters<typeof z.inflateOne>) {
      calls.starts++;
      const r = z.inflateOne(...args);
      if (r.kind === 'need-more' && r.rest) {
        const rest = r.rest;
        return {
          kind: 'need-more',
          rest: {
            push(input: Uint8Array, final: boolean) {
              calls.pieces++;
              return rest.push(input, final);
            },
            close: () => rest.close(),
          },
        };
      }
      return r;
    },
  };
});

function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** A pack of a tree of `count` incompressible blobs (sizes from `size(i)`), with the ids of its objects. */
async function blobPack(
  count: number,
  size: (i: number) => number,
  seed: number,
): Promise<{ pack: Uint8Array; oids: string[] }> {
  const store = new MemoryObjectStore();
  const blobs: string[] = [];
  for (let i = 0; i < count; i++) blobs.push(await store.write('blob', randomBytes(size(i), seed + i)));
  const tree = await store.write(
    'tree',
    serializeTree(blobs.map((oid, i) => ({ mode: '100644', name: `f${i}`, oid, type: 'blob' as const }))),
  );
  const parts: Uint8Array[] = [];
  for await (const c of createPack(store, { wants: [tree] })) parts.push(c.slice());
  return { pack: concat(parts), oids: [tree, ...blobs] };
}

describe('PackReader over chunks that cut entries', () => {
  it('inflates each entry once: a stream crossing chunks goes on where it stopped', async () => {
    const { pack, oids } = await blobPack(12, (i) => 20_000 + i * 997, 1);
    for (const step of [7_000, 16_384, 65_536]) {
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < pack.length; at += step) chunks.push(pack.slice(at, at + step));
      calls.starts = 0;
      calls.pieces = 0;
      const seen: string[] = [];
      for await (const e of new PackReader(chunks).entries()) if (e.kind === 'whole') seen.push(e.oid);
      expect(new Set(seen)).toEqual(new Set(oids));
      // one start per entry, whatever the chunking; the streams cut by chunk ends went on
      expect(calls.starts).toBe(13);
      expect(calls.pieces).toBeGreaterThan(0);
    }
  });
});

describe('PackReader left in the middle of an entry', () => {
  /** A pack of a few incompressible blobs, and cuts that split each entry's zlib stream. */
  async function splitPack(): Promise<{ pack: Uint8Array; oids: string[]; chunks: () => Uint8Array[] }> {
    const { pack, oids } = await blobPack(4, (i) => 30_000 + i * 101, 50);
    const chunks = () => {
      const out: Uint8Array[] = [];
      for (let at = 0; at < pack.length; at += 10_000) out.push(pack.slice(at, at + 10_000));
      return out;
    };
    return { pack, oids, chunks };
  }

  it('close() gives back the inflate context of an entry nextSync began and nobody finished', async () => {
    const { chunks } = await splitPack();
    const before = openInflateRests();
    const reader = new PackReader(chunks());
    await reader.readHeader();
    // the tree comes whole; the first chunk ends inside the first blob's stream: begun, kept, not finished
    expect(reader.nextSync()?.kind).toBe('whole');
    expect(reader.nextSync()).toBeUndefined();
    expect(openInflateRests()).toBe(before + 1);
    reader.close();
    expect(openInflateRests()).toBe(before);
    reader.close();
    expect(openInflateRests()).toBe(before);
  });

  it('entries() broken off, or failing in a cut entry, keeps no inflate context', async () => {
    const { chunks, oids } = await splitPack();
    const before = openInflateRests();
    for (let stop = 1; stop <= oids.length; stop++) {
      const seen: string[] = [];
      for await (const e of new PackReader(chunks()).entries()) {
        if (e.kind === 'whole') seen.push(e.oid);
        if (seen.length === stop) break;
      }
      expect(seen.length).toBe(stop);
      expect(openInflateRests()).toBe(before);
    }
    // the source fails while an entry's stream is going on
    const failing = async function* () {
      const all = chunks();
      yield all[0]!;
      yield all[1]!;
      throw new Error('source broke');
    };
    await expect(
      (async () => {
        for await (const _ of new PackReader(failing()).entries());
      })(),
    ).rejects.toThrow('source broke');
    expect(openInflateRests()).toBe(before);
    await expect(importPack(new MemoryObjectStore(), failing())).rejects.toThrow('source broke');
    expect(openInflateRests()).toBe(before);
  });
});
