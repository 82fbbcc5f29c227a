/**
 * OpfsFs spooling incoming packs in a dedicated worker (see opfs-spool.worker.ts): packs, a thin
 * one among them, stored whole and readable afresh; a refused pack leaves no file behind.
 */
import { expect, it } from 'vitest';

it('spools incoming packs into OPFS: stored whole, thin ones completed, refused ones leave nothing', async () => {
  const worker = new Worker(new URL('./opfs-spool.worker.ts', import.meta.url), { type: 'module' });
  try {
    const result = await new Promise<Record<string, unknown>>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<Record<string, unknown>>) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({ dir: `/spool-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}` });
    });
    expect(result.error).toBeUndefined();
    expect(result.spools).toBe('function');
    expect(result.refused).toBe('PACK_BAD_CHECKSUM');
    expect(result.afterRefused).toEqual([]);
    const [whole, thin] = result.packs as string[];
    expect(result.names).toEqual(
      [`pack-${whole}.idx`, `pack-${whole}.pack`, `pack-${thin}.idx`, `pack-${thin}.pack`].sort(),
    );
    expect(result.again).toBe(true);
    expect(result.thinBases).toBeGreaterThan(0);
    expect(result.bigSame).toBe(true);
    expect(result.editedSame).toBe(true);
  } finally {
    worker.terminate();
  }
});
