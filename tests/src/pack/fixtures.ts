/**
 * Pack fixtures beyond the seeded history: the reference report's corpus (commits that each add
 * a random, incompressible blob) and a large file with a small edit. Built with `git fast-import`
 * from a seeded generator, cached under `$GITPORT_FIXTURES` like `ensureHistory`.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runProcess } from '@gitport/test-helpers/git';
import { defaultCacheDir, prng } from '../history.js';

const encoder = new TextEncoder();

function randomBytes(random: () => number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 4) {
    const v = (random() * 4294967296) >>> 0;
    bytes[i] = v & 255;
    bytes[i + 1] = (v >>> 8) & 255;
    bytes[i + 2] = (v >>> 16) & 255;
    bytes[i + 3] = v >>> 24;
  }
  return bytes;
}

async function build(key: string, stream: () => Generator<Uint8Array>): Promise<string> {
  const cache = defaultCacheDir();
  const gitDir = join(cache, `${key}.git`);
  if (existsSync(join(gitDir, 'gitport-complete'))) return gitDir;
  await mkdir(cache, { recursive: true });
  const work = await mkdtemp(join(cache, 'build-'));
  const target = join(work, 'repo.git');
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  const run = async (args: string[], input?: Uint8Array) => {
    const r = await runProcess('git', args, { env, ...(input ? { input } : {}) });
    if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  await run(['init', '--bare', '-q', '-b', 'main', target]);
  const parts = [...stream()];
  const input = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    input.set(p, o);
    o += p.length;
  }
  await run(['--git-dir', target, 'fast-import', '--quiet', '--done'], input);
  await run(['--git-dir', target, 'repack', '-a', '-d', '-q']);
  await writeFile(join(target, 'gitport-complete'), `${key}\n`);
  try {
    await rename(target, gitDir);
  } catch (error) {
    if (!existsSync(join(gitDir, 'gitport-complete'))) throw error;
  }
  await rm(work, { recursive: true, force: true });
  return gitDir;
}

function* commit(mark: number, parent: number | undefined, time: number, message: string, files: string[]) {
  yield encoder.encode(
    `commit refs/heads/main\nmark :${mark}\ncommitter Bench <bench@gitport.invalid> ${time} +0000\n` +
      `data ${message.length}\n${message}\n${parent ? `from :${parent}\n` : ''}${files.join('')}\n`,
  );
}

function* blob(mark: number, data: Uint8Array) {
  yield encoder.encode(`blob\nmark :${mark}\ndata ${data.length}\n`);
  yield data;
  yield encoder.encode('\n');
}

/** `commits` commits, each adding `blob-<i>.bin` of `blobSize` random bytes (the reference corpus). */
export function randomBlobHistory(options: { commits: number; blobSize: number; seed?: number }): Promise<string> {
  const seed = options.seed ?? 1;
  return build(`corpus-v1-c${options.commits}-b${options.blobSize}-s${seed}`, function* () {
    const random = prng(seed);
    let mark = 0;
    let parent: number | undefined;
    for (let i = 1; i <= options.commits; i++) {
      const b = ++mark;
      yield* blob(b, randomBytes(random, options.blobSize));
      const c = ++mark;
      yield* commit(c, parent, 1_600_000_000 + i * 60, `add blob ${i}`, [`M 100644 :${b} blob-${i}.bin\n`]);
      parent = c;
    }
    yield encoder.encode('done\n');
  });
}

/** A random file of `size` bytes, then a commit changing `editBytes` bytes in its middle. */
export function largeFileEdit(options: { size: number; editBytes?: number; seed?: number }): Promise<string> {
  const seed = options.seed ?? 1;
  const edit = options.editBytes ?? 32;
  return build(`largeedit-v1-${options.size}-e${edit}-s${seed}`, function* () {
    const random = prng(seed);
    const data = randomBytes(random, options.size);
    yield* blob(1, data);
    yield* commit(2, undefined, 1_600_000_000, 'large file', ['M 100644 :1 data/large.bin\n']);
    const edited = data.slice();
    edited.set(randomBytes(random, edit), Math.floor(options.size / 2));
    yield* blob(3, edited);
    yield* commit(4, 2, 1_600_000_060, 'small edit', ['M 100644 :3 data/large.bin\n']);
    yield encoder.encode('done\n');
  });
}
