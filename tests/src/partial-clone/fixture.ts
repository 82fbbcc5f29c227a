/**
 * The repository both partial-clone suites clone from: a history with nested directories, small
 * and large blobs and an annotated tag, cloned bare to `root/repo.git` (with
 * `uploadpack.allowFilter`) and served from `root` by `gitport serve` and by `git http-backend`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { startHttpBackend } from '../gateway/http-backend.js';
import { type ServeProcess, startServe } from '../gateway/serve-process.js';

export interface PartialCloneServers {
  sandbox: GitSandbox;
  serve: ServeProcess;
  backend: Awaited<ReturnType<typeof startHttpBackend>>;
  /** Stops both servers and removes the sandbox. */
  close(): Promise<void>;
}

export interface PartialCloneServersOptions {
  /** The sandbox's name prefix. */
  prefix: string;
  /** Adds `src/same.txt`, one blob every commit's tree shares. */
  sharedBlob?: boolean;
  /** Runs on the served root (`root/repo.git` made) before the servers start. */
  prepare?: (sandbox: GitSandbox, root: string, work: string) => Promise<void>;
}

async function buildRepository(sandbox: GitSandbox, work: string, sharedBlob: boolean): Promise<void> {
  await sandbox.git(['init', '--quiet', '-b', 'main', work]);
  for (let i = 0; i < 6; i++) {
    await writeFile(join(work, 'small.txt'), `line ${i}\n`.repeat(i + 1));
    await writeFile(join(work, `big-${i % 3}.txt`), `${'x'.repeat(1500)} ${i}\n`.repeat(2 + i));
    await mkdir(join(work, 'src', 'deep', `d${i % 2}`), { recursive: true });
    await writeFile(join(work, 'src', 'deep', `d${i % 2}`, 'code.ts'), `export const n = ${i};\n`);
    if (sharedBlob) await writeFile(join(work, 'src', 'same.txt'), 'same content\n');
    await sandbox.git(['-C', work, 'add', '-A']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', `commit ${i}`]);
  }
  await sandbox.git(['-C', work, 'tag', '-a', 'v1', '-m', 'version 1']);
}

export async function startPartialCloneServers(options: PartialCloneServersOptions): Promise<PartialCloneServers> {
  const sandbox = await createGitSandbox(options.prefix);
  let serve: ServeProcess | undefined;
  let backend: PartialCloneServers['backend'] | undefined;
  const close = async () => {
    serve?.child.kill('SIGTERM');
    await serve?.exit;
    await backend?.close();
    await sandbox[Symbol.asyncDispose]();
  };
  try {
    const work = sandbox.path('work');
    await buildRepository(sandbox, work, options.sharedBlob ?? false);
    const root = sandbox.path('root');
    await sandbox.git(['clone', '--quiet', '--bare', work, join(root, 'repo.git')]);
    await sandbox.git(['--git-dir', join(root, 'repo.git'), 'config', 'uploadpack.allowFilter', 'true']);
    await options.prepare?.(sandbox, root, work);
    serve = await startServe(['--root', root, '--port', '0', '--workers', '1']);
    backend = await startHttpBackend(root);
    return { sandbox, serve, backend, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** `git rev-list --objects --missing=print --all` of the repository at `gitDir`, sorted. */
export async function objectSet(sandbox: GitSandbox, gitDir: string): Promise<string[]> {
  const out = await sandbox.git(['--git-dir', gitDir, 'rev-list', '--objects', '--missing=print', '--all']);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}
