/**
 * Real git for tests: every sandbox has its own HOME and global config (user, `main` as the
 * default branch, `protocol.ext.allow always`), no terminal prompts, and a temporary directory
 * that `cleanup()` (or `await using`) removes.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunOptions {
  cwd?: string;
  input?: Uint8Array | string;
  env?: Record<string, string>;
  /** Resolve even when git exits non-zero (the result carries the code). */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number;
  stdout: Uint8Array;
  stderr: string;
}

export class GitCommandError extends Error {
  readonly code = 'GIT_COMMAND_FAILED';
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`git ${args.join(' ')} exited ${exitCode}: ${stderr.trim()}`);
  }
}

export interface GitSandbox extends AsyncDisposable {
  /** The sandbox directory (HOME lives in `home/` inside it). */
  readonly dir: string;
  readonly env: Record<string, string>;
  /** Runs git and returns stdout as text (trimmed of one trailing newline). */
  git(args: readonly string[], options?: RunOptions): Promise<string>;
  /** Runs git and returns the raw result. */
  run(args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** Runs any command with the sandbox's environment. */
  exec(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  path(...parts: string[]): string;
  cleanup(): Promise<void>;
}

export async function createGitSandbox(prefix = 'gitport-git-'): Promise<GitSandbox> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const home = join(dir, 'home');
  await mkdir(home);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'gitport test',
    GIT_AUTHOR_EMAIL: 'test@gitport.invalid',
    GIT_COMMITTER_NAME: 'gitport test',
    GIT_COMMITTER_EMAIL: 'test@gitport.invalid',
    LANG: 'C',
    LC_ALL: 'C',
  };
  await writeFile(
    join(home, '.gitconfig'),
    [
      '[user]',
      '\tname = gitport test',
      '\temail = test@gitport.invalid',
      '[init]',
      '\tdefaultBranch = main',
      '[protocol "ext"]',
      '\tallow = always',
      '[advice]',
      '\tdetachedHead = false',
      '[gc]',
      '\tauto = 0',
      '',
    ].join('\n'),
  );

  const exec = (command: string, args: readonly string[], options: RunOptions = {}) =>
    runProcess(command, args, { ...options, env: { ...env, ...options.env }, cwd: options.cwd ?? dir });

  const run = async (args: readonly string[], options: RunOptions = {}) => {
    const result = await exec('git', args, options);
    if (result.code !== 0 && !options.allowFailure) throw new GitCommandError(args, result.code, result.stderr);
    return result;
  };

  const cleanup = () => rm(dir, { recursive: true, force: true });
  return {
    dir,
    env,
    run,
    exec,
    async git(args, options) {
      const { stdout } = await run(args, options);
      const text = new TextDecoder().decode(stdout);
      return text.endsWith('\n') ? text.slice(0, -1) : text;
    },
    path: (...parts) => join(dir, ...parts),
    cleanup,
    [Symbol.asyncDispose]: cleanup,
  };
}

export function runProcess(
  command: string,
  args: readonly string[],
  options: RunOptions & { env?: Record<string, string> } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.stdin.on('error', () => {
      /* the command may exit before reading all of its input; its exit code tells */
    });
    child.on('close', (code) => {
      const stdout = Buffer.concat(out);
      resolve({
        code: code ?? -1,
        stdout: new Uint8Array(stdout.buffer, stdout.byteOffset, stdout.byteLength),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}
