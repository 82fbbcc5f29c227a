/**
 * Pushes that fail through a running gateway (the worker-pool backend, what `gitport serve`
 * runs): every one gets a status report for every ref, never an empty `200`, and fsckObjects is
 * on. Hand-built requests where real git would not send the objects; real `git push` otherwise.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryObjectStore, packObjects } from '@gitport/pack';
import { PacketReader } from '@gitport/pktline';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startServer, type TestServer, text } from './server.js';

const enc = (s: string) => new TextEncoder().encode(s);
const pkt = (line: string) => enc(`${(enc(line).length + 4).toString(16).padStart(4, '0')}${line}`);
const ZERO = '0'.repeat(40);

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The report's lines (a response without side-band). */
async function reportLines(body: Uint8Array): Promise<string[]> {
  const reader = new PacketReader(
    (async function* () {
      yield body;
    })(),
  );
  const lines: string[] = [];
  for (;;) {
    const p = await reader.read();
    if (!p) return lines;
    lines.push(p.kind === 'data' ? text(p.payload).trimEnd() : p.kind);
  }
}

describe('failed pushes through the gateway (worker-pool backend)', () => {
  let sandbox: GitSandbox;
  let server: TestServer;
  let head: string;
  let work: string;
  const serverGit = (args: string[]) => sandbox.git(['--git-dir', join(server.root, 'r.git'), ...args]);

  beforeAll(async () => {
    sandbox = await createGitSandbox();
    server = await startServer({ root: sandbox.path('root'), backend: 'worker-pool', allowAnonymousPush: true });
    work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await writeFile(join(work, 'a.txt'), 'a\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'r.git')]);
    await sandbox.git(['-C', work, 'remote', 'add', 'origin', `${server.url}/r.git`]);
    head = await serverGit(['rev-parse', 'refs/heads/main']);
  });

  afterAll(async () => {
    await server?.close();
    await sandbox?.cleanup();
  });

  const post = async (commands: readonly string[], objects: MemoryObjectStore, oids: readonly string[]) => {
    const parts: Uint8Array[] = [];
    for await (const c of packObjects(objects, oids)) parts.push(c.slice());
    const body = concat([
      pkt(`${commands[0]}\0report-status\n`),
      ...commands.slice(1).map((c) => pkt(`${c}\n`)),
      enc('0000'),
      ...parts,
    ]);
    const response = await rawRequest(server, 'POST', '/r.git/git-receive-pack', {
      headers: { 'content-type': 'application/x-git-receive-pack-request' },
      body,
    });
    expect(response.status).toBe(200);
    return reportLines(response.body);
  };

  it('a malformed commit, a malformed tag, duplicate names, a 5,000-character name: a report for each', async () => {
    const objects = new MemoryObjectStore();
    const noTree = await objects.write('commit', enc(`parent ${head}\nauthor t <t@x> 1 +0000\n\nx\n`));
    const badTag = await objects.write('tag', enc(`object ${head}\ntype commot\ntag v\n\nx\n`));
    const long = `refs/heads/${'n'.repeat(5000)}`;
    const lines = await post(
      [
        `${ZERO} ${noTree} refs/heads/no-tree`,
        `${ZERO} ${badTag} refs/tags/bad`,
        `${ZERO} ${head} refs/heads/twice`,
        `${ZERO} ${head} refs/heads/twice`,
        `${ZERO} ${head} ${long}`,
        `${ZERO} ${head} refs/heads/fine`,
      ],
      objects,
      [noTree, badTag],
    );
    // fsckObjects: the malformed objects fail the whole push at unpack
    expect(lines[0]).toMatch(/^unpack unpacker error: object [0-9a-f]{40}: (missingTree|badType): /);
    expect(lines.slice(1, -1)).toHaveLength(6);
    for (const l of lines.slice(1, -1)) expect(l).toMatch(/^ng refs\/\S+ unpacker error$/);
    expect(lines.at(-1)).toBe('flush');
    // without the malformed objects: each of the rest gets its own verdict
    const rest = await post(
      [
        `${ZERO} ${head} refs/heads/twice`,
        `${ZERO} ${head} refs/heads/twice`,
        `${ZERO} ${head} ${long}`,
        `${ZERO} ${head} refs/heads/fine`,
      ],
      new MemoryObjectStore(),
      [],
    );
    expect(rest[0]).toBe('unpack ok');
    expect(rest.slice(1, 3)).toEqual(['ng refs/heads/twice duplicate ref', 'ng refs/heads/twice duplicate ref']);
    expect(rest[3]).toMatch(new RegExp(`^ng ${long} \\S`));
    expect(rest.slice(4)).toEqual(['ok refs/heads/fine', 'flush']);
    expect(await serverGit(['rev-parse', 'refs/heads/fine'])).toBe(head);
    await serverGit(['fsck', '--full', '--strict']);
  });

  it('real git push: a tree with .git is refused (fsckObjects), a blob as a branch is refused', async () => {
    const blob = await sandbox.git(['-C', work, 'hash-object', '-w', '--stdin'], { input: 'x\n' });
    const hostileTree = await sandbox.git(['-C', work, 'mktree'], { input: `100644 blob ${blob}\t.GIT\n` });
    const commit = await sandbox.git(['-C', work, 'commit-tree', hostileTree, '-p', 'main', '-m', 'hostile']);
    const refused = await sandbox.run(['-C', work, 'push', 'origin', `${commit}:refs/heads/main`], {
      allowFailure: true,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/unpack failed|unpacker error/);
    expect(refused.stderr).toContain('hasDotgit');
    expect(await serverGit(['rev-parse', 'refs/heads/main'])).toBe(head);
    const missing = await sandbox.run(['--git-dir', join(server.root, 'r.git'), 'cat-file', '-e', hostileTree], {
      allowFailure: true,
    });
    expect(missing.code).not.toBe(0);

    const asBranch = await sandbox.run(['-C', work, 'push', 'origin', `${blob}:refs/heads/blob`], {
      allowFailure: true,
    });
    expect(asBranch.code).not.toBe(0);
    expect(asBranch.stderr).toContain('non-commit object');
    const long = `refs/heads/${'m'.repeat(5000)}`;
    const tooLong = await sandbox.run(['-C', work, 'push', 'origin', `main:${long}`], { allowFailure: true });
    expect(tooLong.code).not.toBe(0);
    expect(tooLong.stderr).toContain('[remote rejected]');
    await serverGit(['fsck', '--full', '--strict']);
  });
});
