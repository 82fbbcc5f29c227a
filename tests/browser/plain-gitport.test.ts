/**
 * gitport in a Web Worker that installs nothing (no Buffer, no `global`): a non-bare clone into
 * OPFS is checked out by gitport itself, with its index and `origin`, then a commit is pushed.
 */
import { expect, it } from 'vitest';

it('a worker without Buffer clones with a working tree into OPFS, commits and pushes', async () => {
  const worker = new Worker(new URL('./plain-gitport.worker.ts', import.meta.url), { type: 'module' });
  try {
    const result = await new Promise<Record<string, unknown>>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<Record<string, unknown>>) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({ dir: `/plain-${Date.now().toString(36)}` });
    });
    expect(result.error).toBeUndefined();
    expect(result.buffer).toBe('undefined');
    expect(result.cloned).toBe(result.first);
    expect(result.tracking).toBe(result.first);
    expect(result.checkedOut).toBe('deep\n');
    expect(result.indexHead).toBe('DIRC');
    expect(result.indexEntries).toBe(3);
    expect(result.config).toContain('[remote "origin"]');
    expect(result.config).toContain('\tfetch = +refs/heads/*:refs/remotes/origin/*');
    expect(result.pushed).toBe(true);
    expect(result.hostHead).toBe(result.second);
    expect(result.hostFile).toBe('hi\n');
    expect(result.files).toEqual(['README.md', 'bin/run', 'docs/a/b.txt', 'from-worker.txt']);
  } finally {
    worker.terminate();
  }
});
