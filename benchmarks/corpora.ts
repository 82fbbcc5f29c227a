/**
 * The two corpora the clone benches (worker threads, HTTP) clone, in one sandbox's `root/`:
 * `reference.git`, the reference transport report's corpus (commits each adding one random
 * blob), and `history.git`, the seeded realistic history of the fast-import generator.
 */
import { cp, mkdir, readdir, stat } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { ensureHistory, prng } from '@gitport/tests/history';
import { sized } from './report.js';

/** The reference report's corpus: `commits` commits, each adding one `size`-byte random blob. */
async function referenceCorpus(sandbox: GitSandbox, dir: string, commits: number, size: number): Promise<void> {
  await sandbox.git(['init', '-q', '--bare', dir]);
  const random = prng(2026);
  const parts: (string | Uint8Array)[] = [];
  for (let i = 0; i < commits; i++) {
    const blob = new Uint8Array(size);
    for (let j = 0; j < size; j++) blob[j] = (random() * 256) | 0;
    const when = 1_700_000_000 + i * 60;
    const message = `commit ${i}\n`;
    parts.push(
      `commit refs/heads/main\nmark :${i + 1}\ncommitter bench <bench@gitport.invalid> ${when} +0000\n`,
      `data ${message.length}\n${message}`,
      i > 0 ? `from :${i}\n` : '',
      `M 100644 inline blob-${String(i).padStart(3, '0')}.bin\ndata ${size}\n`,
      blob,
      '\n',
    );
  }
  const encoder = new TextEncoder();
  const chunks = parts.map((p) => (typeof p === 'string' ? encoder.encode(p) : p));
  const input = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    input.set(c, at);
    at += c.byteLength;
  }
  await sandbox.git(['fast-import', '--quiet'], { cwd: dir, input });
  await sandbox.git(['repack', '-adq'], { cwd: dir });
}

/**
 * A sandbox with `root/reference.git` (`sized(40, 10)` commits of 50 KB random blobs),
 * `root/history.git` (`ensureHistory({ commits: sized(1500, 100), seed: 1 })`) and an empty
 * `clones/` folder.
 */
export async function cloneCorpora(prefix: string): Promise<{ sandbox: GitSandbox; root: string }> {
  const sandbox = await createGitSandbox(prefix);
  const root = sandbox.path('root');
  await mkdir(root, { recursive: true });
  await mkdir(sandbox.path('clones'));
  await referenceCorpus(sandbox, `${root}/reference.git`, sized(40, 10), 50 * 1024);
  const history = await ensureHistory({ commits: sized(1500, 100), seed: 1 });
  await cp(history.gitDir, `${root}/history.git`, { recursive: true });
  return { sandbox, root };
}

/** The size of the .pack files of the bare repository at `dir`. */
export async function packBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(`${dir}/objects/pack`)) {
    if (name.endsWith('.pack')) total += (await stat(`${dir}/objects/pack/${name}`)).size;
  }
  return total;
}
