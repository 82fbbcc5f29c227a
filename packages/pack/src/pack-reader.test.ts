import { describe, expect, it, vi } from 'vitest';
import { PackReader } from './pack-reader.js';
import { createPack } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';
import { serializeTree } from './tree.js';

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

describe('PackReader over chunks that cut entries', () => {
  it('inflates each entry once: a stream crossing chunks goes on where it stopped', async () => {
    const store = new MemoryObjectStore();
    const entries = [];
    for (let i = 0; i < 12; i++) {
      const oid = await store.write('blob', randomBytes(20_000 + i * 997, i + 1));
      entries.push({ mode: '100644', name: `f${i}`, oid, type: 'blob' as const });
    }
    const tree = await store.write('tree', serializeTree(entries));
    const parts: Uint8Array[] = [];
    for await (const c of createPack(store, { wants: [tree] })) parts.push(c.slice());
    const pack = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      pack.set(p, o);
      o += p.length;
    }
    for (const step of [7_000, 16_384, 65_536]) {
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < pack.length; at += step) chunks.push(pack.slice(at, at + step));
      calls.starts = 0;
      calls.pieces = 0;
      const seen: string[] = [];
      for await (const e of new PackReader(chunks).entries()) if (e.kind === 'whole') seen.push(e.oid);
      expect(new Set(seen)).toEqual(new Set([tree, ...entries.map((e) => e.oid)]));
      // one start per entry, whatever the chunking; the streams cut by chunk ends went on
      expect(calls.starts).toBe(13);
      expect(calls.pieces).toBeGreaterThan(0);
    }
  });
});
