import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeFs } from './fs.node.js';
import { MemoryFs } from './memory-fs.js';
import { initNodeRepository, nodeRepositories, openNodeRepository } from './node.js';
import { initRepository, openRepository } from './repository.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gitport-nodefs-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const bytes = (text: string) => new TextEncoder().encode(text);

describe('nodeFs', () => {
  it('makes its calls through fs.promises on the main thread unless told (the event loop stays free)', async () => {
    const path = join(dir, 'a');
    for (const fs of [nodeFs(), nodeFs({ sync: false })]) {
      const handle = (await fs.promises.open!(path, 'w')) as unknown as { fd: unknown; stat: unknown };
      // a FileHandle of fs.promises: its descriptor and its own methods
      expect(typeof handle.fd).toBe('number');
      expect(typeof handle.stat).toBe('function');
      await (handle as unknown as { close(): Promise<void> }).close();
    }
  });

  it('with sync: true a call is done when it returns, behind the same promise API', async () => {
    const fs = nodeFs({ sync: true }).promises;
    const path = join(dir, 'file');
    const written = fs.writeFile(path, 'one\n');
    // done before the promise is awaited: no round trip to the thread pool
    expect(readFileSync(path, 'utf8')).toBe('one\n');
    await written;
    expect(new TextDecoder().decode((await fs.readFile(path)) as Uint8Array)).toBe('one\n');
    expect(await fs.readFile(path, 'utf8')).toBe('one\n');
    const made = fs.mkdir(join(dir, 'a/b/c'), { recursive: true });
    expect(existsSync(join(dir, 'a/b/c'))).toBe(true);
    await made;
    expect((await fs.stat(join(dir, 'a'))).isDirectory()).toBe(true);
    expect((await fs.lstat(path)).size).toBe(4);
    expect(await fs.readdir(dir)).toEqual(['a', 'file']);
    const typed = await fs.readdirTypes!(dir);
    expect(typed.map((e) => [e.name, e.isDirectory()]).sort()).toEqual([
      ['a', true],
      ['file', false],
    ]);
    await fs.rename!(path, join(dir, 'moved'));
    expect(await fs.readdir(dir)).toEqual(['a', 'moved']);
    await fs.unlink(join(dir, 'moved'));
    await fs.rmdir(join(dir, 'a/b/c'));
    expect(existsSync(join(dir, 'a/b/c'))).toBe(false);
  });

  it('with sync: true failures are rejections carrying the system error code, never throws', async () => {
    const fs = nodeFs({ sync: true }).promises;
    const missing = join(dir, 'missing');
    // each call returns a promise even when the system call fails
    const read = fs.readFile(missing);
    await expect(read).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.stat(missing)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.readdir(missing)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.unlink(missing)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.readRange!(missing, 0, 4)).rejects.toMatchObject({ code: 'ENOENT' });
    await fs.writeFile(join(dir, 'lock'), '');
    // exclusive create: what lock files rest on
    await expect(fs.open!(join(dir, 'lock'), 'wx')).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(fs.mkdir(join(dir, 'lock'))).rejects.toMatchObject({ code: 'EEXIST' });
  });

  it('with sync: true file handles write in sequence and at positions, read at positions, and refuse use after close', async () => {
    const fs = nodeFs({ sync: true }).promises;
    const path = join(dir, 'pack');
    const handle = await fs.open!(path, 'w+');
    expect(await handle.write!(bytes('abcdef'), 0, 6)).toEqual({ bytesWritten: 6 });
    // an offset and length into the buffer
    expect(await handle.write!(bytes('xxghij'), 2, 3)).toEqual({ bytesWritten: 3 });
    // a positional write (what a pack spool patches its header with)
    await handle.write!(bytes('AB'), 0, 2, 0);
    await handle.write!('-end');
    const out = new Uint8Array(5);
    expect(await handle.read!(out, 1, 4, 2)).toEqual({ bytesRead: 4 });
    expect(new TextDecoder().decode(out.subarray(1))).toBe('cdef');
    // past the end: what is there
    expect(await handle.read!(out, 0, 5, 10)).toEqual({ bytesRead: 3 });
    await handle.close();
    expect(readFileSync(path, 'utf8')).toBe('ABcdefghi-end');
    await expect(handle.write!(bytes('late'))).rejects.toMatchObject({ code: 'EBADF' });
    await expect(handle.read!(out, 0, 1, 0)).rejects.toMatchObject({ code: 'EBADF' });
    // closing twice is harmless
    await handle.close();
    expect(new TextDecoder().decode(await fs.readRange!(path, 2, 4))).toBe('cdef');
    expect(new TextDecoder().decode(await fs.readRange!(path, 9, 100))).toBe('-end');
  });

  it('the Node repository shortcuts take the same choice', async () => {
    const isSync = async (raw: { writeFile(path: string, data: string): Promise<unknown> }, name: string) => {
      const writing = raw.writeFile(join(dir, name), 'x');
      const done = existsSync(join(dir, name));
      await writing;
      return done;
    };
    const made = await initNodeRepository(join(dir, 'made.git'), { sync: true });
    expect(await isSync(made.fs.raw, 'made')).toBe(true);
    const opened = await openNodeRepository(join(dir, 'made.git'), { sync: true });
    expect(await isSync(opened.fs.raw, 'opened')).toBe(true);
    expect(await isSync(nodeRepositories(dir, { sync: true }).fs.raw, 'listed')).toBe(true);
    // asynchronous: a FileHandle of fs.promises
    const handle = (await (
      await openNodeRepository(join(dir, 'made.git'))
    ).fs.raw.open!(join(dir, 'h'), 'w')) as unknown as {
      fd: unknown;
      close(): Promise<void>;
    };
    expect(typeof handle.fd).toBe('number');
    await handle.close();
  });

  it('with sync: true a file handle reads at positions synchronously too', async () => {
    const path = join(dir, 'r');
    const fs = nodeFs({ sync: true }).promises;
    await fs.writeFile(path, 'abcdef');
    const handle = await fs.open!(path, 'r');
    const into = new Uint8Array(3);
    expect(handle.readSync!(into, 1, 2, 3)).toBe(2);
    expect(new TextDecoder().decode(into.subarray(1))).toBe('de');
    await handle.close();
    expect(() => handle.readSync!(into, 0, 1, 0)).toThrow(expect.objectContaining({ code: 'EBADF' }));
  });

  it('reads a pack made by git, its large index answering from the file, before and after the store closes', async () => {
    const gitDir = join(dir, 'r.git');
    const git = (args: string[], input?: string) =>
      execFileSync('git', ['--git-dir', gitDir, ...args], { input, encoding: 'utf8', maxBuffer: 1 << 26 }).trim();
    execFileSync('git', ['init', '-q', '--bare', gitDir]);
    // 4,400 commits of a blob and a tree each: an index whose ids are past what is held
    const commits = 4400;
    const script: string[] = [];
    for (let i = 0; i < commits; i++) {
      const content = `file ${i}\n`;
      const message = `c${i}\n`;
      script.push(
        'commit refs/heads/main',
        `committer A <a@example.com> ${1_700_000_000 + i} +0000`,
        `data ${message.length}`,
        message.slice(0, -1),
        `M 100644 inline f${i % 4}`,
        `data ${content.length}`,
        content.slice(0, -1),
        '',
      );
    }
    git(['fast-import', '--quiet'], `${script.join('\n')}\n`);
    git(['repack', '-a', '-d', '-q']);
    const listed = git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)'])
      .split('\n')
      .map((line) => line.split(' ') as [string, string]);
    expect(listed.length).toBe(commits * 3);
    const sample = listed.filter((_, i) => i % 7 === 0);
    for (const sync of [true, false]) {
      const repo = await openNodeRepository(gitDir, { sync });
      for (const [oid, type] of sample) expect((await repo.objects.read(oid))?.type).toBe(type);
      expect(await repo.objects.read(`${'0'.repeat(39)}1`)).toBeUndefined();
      await (repo.objects as unknown as { close(): Promise<void> }).close();
      for (const [oid, type] of sample) expect((await repo.objects.read(oid))?.type).toBe(type);
    }
  });

  it('brings the pack spool: the default store over it writes an incoming pack to disk, over MemoryFs none', async () => {
    const made = await initRepository(nodeFs(), join(dir, 'spooled.git'));
    const opened = await openRepository(nodeFs({ sync: true }), join(dir, 'spooled.git'));
    const shortcut = await openNodeRepository(join(dir, 'spooled.git'));
    for (const repo of [made, opened, shortcut]) {
      const spool = await repo.objects.beginPack?.();
      expect(spool).toBeDefined();
      spool!.append(bytes('PACK'));
      await spool!.drain();
      expect(readdirSync(join(dir, 'spooled.git/objects/pack')).filter((f) => f.startsWith('tmp_pack_'))).toHaveLength(
        1,
      );
      await spool!.abort();
      expect(readdirSync(join(dir, 'spooled.git/objects/pack'))).toEqual([]);
    }
    const memory = await initRepository(new MemoryFs(), '/m.git');
    expect(memory.objects.beginPack).toBeUndefined();
  });
});
