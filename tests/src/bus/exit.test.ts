import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { describe, expect, it } from 'vitest';

describe('a process using the bus', () => {
  it('exits on its own once its buses are closed and nothing is pending', async () => {
    const child = spawnTsNode(new URL('./exit-child.ts', import.meta.url), [], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(err).toBe('');
    expect(out).toBe('closed\n');
    expect(code).toBe(0);
  });
});
