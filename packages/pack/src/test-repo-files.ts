/** Test support: work trees written from a map of paths to contents, then committed with git. */
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

/**
 * The repository the object-filter suites judge against git's rev-list: blobs of several sizes
 * at depths 1 to 4 (one shrinks below 1 KiB in the second commit), one tree (shared/) at depths
 * 1, 2 and 3, so a tree:<n> walk meets it again at a smaller depth, two commits and an annotated
 * tag `v1`. Returns the work tree's path.
 */
export async function filterTestRepository(sandbox: GitSandbox): Promise<string> {
  const repo = sandbox.path('repo');
  await sandbox.git(['init', '--quiet', repo]);
  const files: Record<string, string> = {
    'small.txt': 'x'.repeat(10),
    'big.bin': 'y'.repeat(5000),
    'a/mid.txt': 'z'.repeat(1500),
    'a/b/deep.txt': 'deep\n',
    'a/b/c/deeper.txt': 'deeper\n',
    'shared/one.txt': 'one\n',
    'a/shared/one.txt': 'one\n',
    'a/b/shared/one.txt': 'one\n',
  };
  await commitFiles(sandbox, repo, files, 'first');
  await writeFile(`${repo}/a/b/deep.txt`, 'changed\n');
  await writeFile(`${repo}/a/b/c/deeper.txt`, 'changed\n');
  await writeFile(`${repo}/big.bin`, 'w'.repeat(900));
  await sandbox.git(['commit', '--quiet', '-am', 'second'], { cwd: repo });
  await sandbox.git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: repo });
  return repo;
}
