/** import-large.ts run in a child process of its own (through the TypeScript loader), so its memory is its own. */
import { once } from 'node:events';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';

/** Runs `import-large.ts ARGS` to its end: its exit code and what it wrote. */
export async function importLargeInChild(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawnTsNode(new URL('./import-large.ts', import.meta.url), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  child.stderr!.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const [code] = (await once(child, 'close')) as [number];
  return { code, stdout, stderr };
}
