/**
 * A 100 MiB blob streams through importPack with memory bounded by a small multiple of the
 * object (the pack is kept once, to be written; the blob's data is hashed in pieces, never held),
 * and git reads the stored pack back.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { createDeflate } from 'node:zlib';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importLargeInChild } from './import-large-child.js';

const SIZE = 100 * 1024 * 1024;
let sandbox: GitSandbox;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-large-');
});
afterAll(async () => {
  await sandbox?.cleanup();
});

/** Writes a one-blob pack of SIZE pseudo-random bytes; returns the blob id and the pack hash. */
async function writeLargePack(path: string): Promise<{ oid: string; hash: string }> {
  const out = createWriteStream(path);
  const packHash = createHash('sha1');
  const blobHash = createHash('sha1').update(`blob ${SIZE}\0`);
  const write = async (b: Uint8Array) => {
    packHash.update(b);
    if (!out.write(b)) await once(out, 'drain');
  };
  const header = Buffer.alloc(12);
  header.write('PACK');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(1, 8);
  await write(header);
  // entry header: type 3 (blob), size in 4 + 7n bits
  const entry: number[] = [];
  let size = SIZE;
  let c = (3 << 4) | (size & 15);
  size = Math.floor(size / 16);
  while (size > 0) {
    entry.push(c | 0x80);
    c = size & 0x7f;
    size = Math.floor(size / 128);
  }
  entry.push(c);
  await write(Uint8Array.from(entry));
  const deflate = createDeflate({ level: 1 });
  const pumped = (async () => {
    for await (const chunk of deflate) await write(chunk as Buffer);
  })();
  let x = 0x9e3779b9;
  for (let done = 0; done < SIZE; done += 1 << 20) {
    const block = new Uint32Array((1 << 20) / 4);
    for (let i = 0; i < block.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      block[i] = x >>> 0;
    }
    const bytes = new Uint8Array(block.buffer);
    blobHash.update(bytes);
    if (!deflate.write(bytes)) await once(deflate, 'drain');
  }
  deflate.end();
  await pumped;
  const trailer = packHash.digest();
  out.write(trailer);
  out.end();
  await once(out, 'finish');
  return { oid: blobHash.digest('hex'), hash: trailer.toString('hex') };
}

describe('a 100 MiB blob', () => {
  it('imports with bounded memory; git reads the stored pack', async () => {
    const packPath = sandbox.path('large.pack');
    const { oid, hash } = await writeLargePack(packPath);
    const repo = sandbox.path('large.git');
    await sandbox.git(['init', '-q', '--bare', repo]);
    const { code, stdout, stderr } = await importLargeInChild([packPath, repo]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { hash: string; objects: string[]; peak: number };
    expect(result.hash).toBe(hash);
    expect(result.objects).toEqual([oid]);
    // the pack is held once to be written (about 1x the blob); nothing holds the inflated blob
    expect(result.peak, `peak ${(result.peak / 2 ** 20).toFixed(0)} MiB`).toBeLessThan(2.5 * SIZE);
    expect(await sandbox.git(['--git-dir', repo, 'cat-file', '-s', oid])).toBe(String(SIZE));
    const verify = await sandbox.run(['verify-pack', join(repo, 'objects', 'pack', `pack-${hash}.idx`)]);
    expect(verify.code).toBe(0);
  });
});
