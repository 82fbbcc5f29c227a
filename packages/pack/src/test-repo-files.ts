/** Test support: a work tree written from a map of paths to contents, then committed with git. */
import { mkdir, writeFile } from 'node:fs/promises';
import type { GitSandbox } from '@gitport/test-helpers/git';

export async function commitFiles(
  sandbox: GitSandbox,
  repo: string,
  files: Record<string, string>,
  message: string,
): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(`${repo}/${path}`.replace(/\/[^/]+$/, ''), { recursive: true });
    await writeFile(`${repo}/${path}`, content);
  }
  await sandbox.git(['add', '.'], { cwd: repo });
  await sandbox.git(['commit', '--quiet', '-m', message], { cwd: repo });
}
