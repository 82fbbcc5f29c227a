/**
 * Helpers for the pack interop tests: every object of a repository read with
 * `git cat-file --batch`, seeded chunking of a byte stream, and collecting async iterables.
 */
import { createHash } from 'node:crypto';
import type { GitSandbox } from '@gitport/test-helpers/git';
import { prng } from '../history.js';

export interface GitObjectRecord {
  type: string;
  data: Uint8Array;
}

/** Every object of a repository, as git reads it. */
export async function allObjects(sandbox: GitSandbox, gitDir: string): Promise<Map<string, GitObjectRecord>> {
  const { stdout } = await sandbox.run(['--git-dir', gitDir, 'cat-file', '--batch-all-objects', '--batch'], {
    cwd: sandbox.dir,
  });
  const out = new Map<string, GitObjectRecord>();
  const decoder = new TextDecoder();
  let pos = 0;
  while (pos < stdout.length) {
    const eol = stdout.indexOf(0x0a, pos);
    const [oid, type, size] = decoder.decode(stdout.subarray(pos, eol)).split(' ');
    const n = Number(size);
    out.set(oid!, { type: type!, data: stdout.subarray(eol + 1, eol + 1 + n) });
    pos = eol + 1 + n + 1;
  }
  return out;
}

/** Yields `bytes` in pieces of seeded random sizes (1 byte up to `max`), copying each piece. */
export async function* chunked(bytes: Uint8Array, seed: number, max = 70_000): AsyncGenerator<Uint8Array> {
  const random = prng(seed);
  let pos = 0;
  while (pos < bytes.length) {
    const n = 1 + Math.floor(random() ** 3 * max);
    yield bytes.slice(pos, pos + n);
    pos += n;
  }
}

export async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const c of it) {
    parts.push(c);
    total += c.length;
  }
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function sha1Hex(bytes: Uint8Array): string {
  return createHash('sha1').update(bytes).digest('hex');
}

/** Counts of entry kinds in `git verify-pack -v` output. */
export function verifyPackStats(text: string): { objects: number; deltas: number } {
  let objects = 0;
  let deltas = 0;
  for (const line of text.split('\n')) {
    const m = /^[0-9a-f]{40} (commit|tree|blob|tag)\s+\d+ \d+ \d+(?: (\d+) [0-9a-f]{40})?/.exec(line);
    if (!m) continue;
    objects++;
    if (m[2]) deltas++;
  }
  return { objects, deltas };
}
