import { describe, expect, it } from 'vitest';
import { bytesToHex } from './object.js';
import { importPack } from './pack-import.js';
import { PackReader } from './pack-reader.js';
import { packObjects } from './pack-writer.js';
import { MemoryObjectStore } from './store.js';

describe('importPack into a store that takes objects', () => {
  it('resolves delta chains without a base cache (bases are the objects it holds) and stores them', async () => {
    const source = new MemoryObjectStore();
    const oids: string[] = [];
    let text = '';
    for (let i = 0; i < 40; i++) {
      text += `line ${i} ${'x'.repeat(i * 7)}\n`;
      oids.push(await source.write('blob', new TextEncoder().encode(text)));
    }
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(source, oids)) parts.push(c.slice());
    let deltas = 0;
    for await (const e of new PackReader(parts).entries()) if (e.kind !== 'whole') deltas++;
    expect(deltas).toBeGreaterThan(20);
    const target = new MemoryObjectStore();
    const r = await importPack(target, parts, { cacheBytes: 1 });
    expect([...r.objects].sort()).toEqual([...oids].sort());
    for (const oid of oids) {
      expect(bytesToHex((await target.read(oid))!.data)).toBe(bytesToHex((await source.read(oid))!.data));
    }
  });
});
