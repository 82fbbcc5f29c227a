/**
 * A seeded, reproducible git history built with `git fast-import`: text files edited line by
 * line, renames, deletions, binary files, occasional large blobs, side branches merged back,
 * annotated and lightweight tags. The same options give byte-identical repositories, so a
 * fixture is built once per machine (cached under the OS temp directory by its options) and
 * shared by every test and benchmark of a run.
 *
 * `shape: 'source'` builds the history of a long-lived source repository instead
 * (source-history.ts): tens of thousands of commits at scale, for the `large` preset the size of
 * git's own history. The fast-import input is streamed, never held whole.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prng } from '@gitport/test-helpers/prng';
import { generateSourceFastImport } from './source-history.js';

export interface HistoryOptions {
  /** Number of commits on main (merges and side-branch commits come on top). */
  commits: number;
  seed?: number;
  /** Text files in the first commit. */
  files?: number;
  /** One large random blob every N commits (0: none). */
  largeEvery?: number;
  /** Size of each large blob in bytes. */
  largeSize?: number;
  /** One binary file added or rewritten every N commits (0: none). */
  binaryEvery?: number;
  /** A side branch of a few commits merged back every N commits (0: none). */
  mergeEvery?: number;
  /** An annotated tag every N commits (0: none); lightweight tags at 5x that interval. */
  tagEvery?: number;
  /**
   * 'flat' (default): the generator above. 'source': a long-lived source repository
   * (source-history.ts), where `commits` counts every commit (main, topics and merges),
   * `mergeEvery` is the mean interval between topic branches and `largeEvery`, `largeSize` and
   * `binaryEvery` are not used.
   */
  shape?: 'flat' | 'source';
  /** Directories the files are spread over ('source' shape only). */
  directories?: number;
}

export interface History {
  /** Path of the bare repository. */
  gitDir: string;
  options: Required<HistoryOptions>;
}

const GENERATOR_VERSION = 1;
const SOURCE_GENERATOR_VERSION = 1;

export function defaults(options: HistoryOptions): Required<HistoryOptions> {
  return {
    seed: 1,
    files: 60,
    largeEvery: 0,
    largeSize: 2 * 1024 * 1024,
    binaryEvery: 40,
    mergeEvery: 50,
    tagEvery: 100,
    shape: 'flat',
    directories: 0,
    ...options,
  };
}

/**
 * Named sizes of the 'source' shape. `large` has the shape and size of git's own history (tens of
 * thousands of commits, about a thousand tags, hundreds of thousands of objects); `medium` a
 * quarter of it; `small` the same shape for quick runs.
 */
export const HISTORY_PRESETS = {
  large: { shape: 'source', commits: 80_000, seed: 1, files: 3_000, directories: 300, mergeEvery: 8, tagEvery: 80 },
  medium: { shape: 'source', commits: 20_000, seed: 1, files: 1_500, directories: 150, mergeEvery: 8, tagEvery: 80 },
  small: { shape: 'source', commits: 1_000, seed: 1, files: 300, directories: 40, mergeEvery: 8, tagEvery: 80 },
} as const satisfies Record<string, HistoryOptions>;

export type HistoryPreset = keyof typeof HISTORY_PRESETS;

/** The cache key of a history: its generator and every option that changes its bytes. */
export function historyKey(full: Required<HistoryOptions>): string {
  if (full.shape === 'source') {
    return [
      `src${SOURCE_GENERATOR_VERSION}`,
      `c${full.commits}`,
      `s${full.seed}`,
      `f${full.files}`,
      `d${full.directories}`,
      `m${full.mergeEvery}`,
      `t${full.tagEvery}`,
    ].join('-');
  }
  return [
    `v${GENERATOR_VERSION}`,
    `c${full.commits}`,
    `s${full.seed}`,
    `f${full.files}`,
    `l${full.largeEvery}x${full.largeSize}`,
    `b${full.binaryEvery}`,
    `m${full.mergeEvery}`,
    `t${full.tagEvery}`,
  ].join('-');
}

/** The fast-import stream of any shape. */
export function fastImportStream(full: Required<HistoryOptions>): Generator<Uint8Array> {
  return full.shape === 'source' ? generateSourceFastImport(full) : generateFastImport(full);
}

export { prng } from '@gitport/test-helpers/prng';

const WORDS = (
  'git pack object tree blob commit tag delta offset index stream bus port worker message ' +
  'credit window flush band ref head branch remote fetch push clone negotiate have want ' +
  'ack ready shallow deepen thin idx fanout crc zlib inflate deflate sha hash buffer chunk'
).split(' ');

/**
 * Builds the history (or reuses the cached copy) and returns the bare repository's path.
 * Concurrent callers are safe: each builds in its own directory and renames it into place.
 */
export async function ensureHistory(options: HistoryOptions, cacheDir = defaultCacheDir()): Promise<History> {
  const full = defaults(options);
  const key = historyKey(full);
  const gitDir = join(cacheDir, `${key}.git`);
  if (existsSync(join(gitDir, 'gitport-complete'))) return { gitDir, options: full };
  await mkdir(cacheDir, { recursive: true });
  const work = await mkdtemp(join(cacheDir, 'build-'));
  const target = join(work, 'repo.git');
  await git(['init', '--bare', '-q', '-b', 'main', target]);
  // topic branches stay open while main moves on: keep them all loaded
  const importArgs = full.shape === 'source' ? ['--active-branches=64'] : [];
  await git(['fast-import', '--quiet', '--done', ...importArgs], target, fastImportStream(full));
  await git(['repack', '-a', '-d', '-q'], target);
  await writeFile(join(target, 'gitport-complete'), `${key}\n`);
  try {
    await rename(target, gitDir);
  } catch (error) {
    if (!existsSync(join(gitDir, 'gitport-complete'))) throw error;
  }
  await rm(work, { recursive: true, force: true });
  return { gitDir, options: full };
}

export function defaultCacheDir(): string {
  return process.env.GITPORT_FIXTURES ?? join(tmpdir(), 'gitport-fixtures');
}

/** The fast-import stream for a history, as chunks. */
export function* generateFastImport(options: Required<HistoryOptions>): Generator<Uint8Array> {
  const random = prng(options.seed);
  const int = (n: number) => Math.floor(random() * n);
  const encoder = new TextEncoder();
  const files = new Map<string, string[]>();
  let mark = 0;
  let time = 1_600_000_000;
  let fileCounter = 0;

  const line = () => {
    const n = 3 + int(9);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(WORDS[int(WORDS.length)] as string);
    return words.join(' ');
  };
  const newPath = () => {
    fileCounter++;
    const dir = ['src', 'lib', 'docs', 'test', 'src/core', 'src/util'][int(6)];
    return `${dir}/file-${fileCounter}.txt`;
  };
  const randomBytes = (size: number) => {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 4) {
      const v = (random() * 4294967296) >>> 0;
      bytes[i] = v & 255;
      bytes[i + 1] = (v >>> 8) & 255;
      bytes[i + 2] = (v >>> 16) & 255;
      bytes[i + 3] = v >>> 24;
    }
    return bytes;
  };
  function* data(bytes: Uint8Array): Generator<Uint8Array> {
    yield encoder.encode(`data ${bytes.length}\n`);
    yield bytes;
    yield encoder.encode('\n');
  }
  function* modifyText(path: string, lines: string[]): Generator<Uint8Array> {
    yield encoder.encode(`M 100644 inline ${path}\n`);
    yield* data(encoder.encode(`${lines.join('\n')}\n`));
  }
  function* commitHeader(ref: string, message: string): Generator<Uint8Array, number> {
    mark++;
    time += 600 + int(7200);
    const who = ['Ada <ada@example.com>', 'Linus <linus@example.com>', 'Grace <grace@example.com>'][int(3)];
    yield encoder.encode(`commit ${ref}\nmark :${mark}\nauthor ${who} ${time} +0000\ncommitter ${who} ${time} +0000\n`);
    yield* data(encoder.encode(`${message}\n`));
    return mark;
  }
  function* edits(count: number): Generator<Uint8Array> {
    const paths = [...files.keys()];
    for (let k = 0; k < count && paths.length > 0; k++) {
      const path = paths[int(paths.length)] as string;
      const lines = files.get(path);
      if (!lines) continue;
      const edits = 1 + int(4);
      for (let e = 0; e < edits; e++) {
        const at = int(lines.length + 1);
        const op = int(3);
        if (op === 0 || lines.length < 4) lines.splice(at, 0, line());
        else if (op === 1) lines.splice(at, 1);
        else lines[Math.min(at, lines.length - 1)] = line();
      }
      yield* modifyText(path, lines);
    }
  }

  // first commit
  const first = yield* commitHeader('refs/heads/main', 'initial import');
  for (let i = 0; i < options.files; i++) {
    const path = newPath();
    const lines = Array.from({ length: 20 + int(200) }, line);
    files.set(path, lines);
    yield* modifyText(path, lines);
  }
  let mainTip = first;
  let binaryCounter = 0;

  for (let c = 1; c < options.commits; c++) {
    const tip = yield* commitHeader('refs/heads/main', `change ${c}: ${line()}`);
    yield encoder.encode(`from :${mainTip}\n`);
    yield* edits(1 + int(4));
    const roll = int(100);
    if (roll < 4) {
      const path = newPath();
      const lines = Array.from({ length: 10 + int(100) }, line);
      files.set(path, lines);
      yield* modifyText(path, lines);
    } else if (roll < 7 && files.size > 10) {
      const paths = [...files.keys()];
      const from = paths[int(paths.length)] as string;
      const to = newPath();
      files.set(to, files.get(from) as string[]);
      files.delete(from);
      yield encoder.encode(`R ${from} ${to}\n`);
    } else if (roll < 8 && files.size > 10) {
      const paths = [...files.keys()];
      const gone = paths[int(paths.length)] as string;
      files.delete(gone);
      yield encoder.encode(`D ${gone}\n`);
    }
    if (options.binaryEvery > 0 && c % options.binaryEvery === 0) {
      binaryCounter++;
      yield encoder.encode(`M 100644 inline assets/image-${binaryCounter % 7}.bin\n`);
      yield* data(randomBytes(1024 + int(64 * 1024)));
    }
    if (options.largeEvery > 0 && c % options.largeEvery === 0) {
      yield encoder.encode(`M 100644 inline assets/large-${c % 3}.bin\n`);
      yield* data(randomBytes(options.largeSize));
    }
    mainTip = tip;

    if (options.mergeEvery > 0 && c % options.mergeEvery === 0) {
      const branch = `refs/heads/topic-${c}`;
      let sideTip = mainTip;
      const sideCommits = 1 + int(4);
      for (let s = 0; s < sideCommits; s++) {
        const next = yield* commitHeader(branch, `topic ${c}.${s}: ${line()}`);
        yield encoder.encode(`from :${sideTip}\n`);
        yield* edits(1 + int(2));
        sideTip = next;
      }
      const merge = yield* commitHeader('refs/heads/main', `Merge topic-${c}`);
      yield encoder.encode(`from :${mainTip}\nmerge :${sideTip}\n`);
      mainTip = merge;
      if (int(3) === 0) yield encoder.encode(`reset ${branch}\nfrom 0000000000000000000000000000000000000000\n\n`);
    }
    if (options.tagEvery > 0 && c % options.tagEvery === 0) {
      yield encoder.encode(`tag v0.${c / options.tagEvery}.0\nfrom :${mainTip}\n`);
      yield encoder.encode(`tagger Ada <ada@example.com> ${time} +0000\n`);
      yield* data(encoder.encode(`release ${c / options.tagEvery}\n`));
    }
    if (options.tagEvery > 0 && c % (options.tagEvery * 5) === 0) {
      yield encoder.encode(`reset refs/tags/light-${c}\nfrom :${mainTip}\n\n`);
    }
  }
  yield encoder.encode('done\n');
}

function git(args: string[], gitDir?: string, input?: Iterable<Uint8Array>): Promise<void> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    if (gitDir) env.GIT_DIR = gitDir;
    const child = spawn('git', args, { env, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`git ${args.join(' ')} exited ${code}: ${stderr.trim()}`)),
    );
    if (!input) {
      child.stdin.end();
      return;
    }
    const iterator = input[Symbol.iterator]();
    const pump = () => {
      for (;;) {
        const next = iterator.next();
        if (next.done) {
          child.stdin.end();
          return;
        }
        if (!child.stdin.write(next.value)) {
          child.stdin.once('drain', pump);
          return;
        }
      }
    };
    child.stdin.on('error', reject);
    pump();
  });
}
