/**
 * Real `git push` against gitport's receive-pack over a repository on disk: a refused push leaves
 * nothing a later push can lean on. The server's upload-pack side is real git's over the pusher's
 * own repository, so `push.negotiate` tells git that the server has everything the pusher has
 * (as a server would that kept a refused push's objects): git then leaves those objects out of
 * the next push, and receive-pack must notice they are missing.
 */
import { readdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  advertiseRefsHttp,
  handleReceivePackHttp,
  isGitService,
  protocolFromHeader,
  type ReceivePackOptions,
  type Repository,
  rpcResultHeaders,
} from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { openNodeRepository } from 'gitport/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleRepo, startHttpBackend } from './helpers.js';

let sandbox: GitSandbox;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-protocol-quarantine-');
});
afterAll(async () => {
  for (const close of closers) await close();
  await sandbox?.cleanup();
});

/** receive-pack on `target` at `/repo.git`; upload-pack requests go to `negotiation` (a URL). */
async function serve(target: Repository, negotiation: string, options: ReceivePackOptions): Promise<string> {
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://x');
      const protocol = protocolFromHeader(req.headers['git-protocol'] as string | undefined);
      const service = url.searchParams.get('service') ?? url.pathname.split('/').at(-1) ?? '';
      if (!isGitService(service)) {
        res.writeHead(404).end();
        return;
      }
      if (service === 'git-upload-pack') {
        const chunks: Uint8Array[] = [];
        for await (const chunk of req) chunks.push(chunk as Uint8Array);
        const headers: Record<string, string> = {};
        for (const name of ['content-type', 'content-encoding', 'git-protocol', 'accept']) {
          const value = req.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        const upstream = await fetch(`${negotiation}${url.pathname.slice('/repo.git'.length)}${url.search}`, {
          method: req.method ?? 'GET',
          headers,
          ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
        });
        const type = upstream.headers.get('content-type');
        res.writeHead(upstream.status, type ? { 'content-type': type } : {});
        res.end(Buffer.from(await upstream.arrayBuffer()));
        return;
      }
      if (req.method === 'GET') {
        const reply = await advertiseRefsHttp(target, service, { protocol });
        res.writeHead(reply.status, reply.headers).end(reply.body);
        return;
      }
      res.writeHead(200, rpcResultHeaders(service));
      const handled = handleReceivePackHttp(target, req, { protocol, ...options });
      for await (const chunk of handled.body) {
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      }
      res.end();
    } catch (error) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/repo.git`;
}

const quarantines = async (bare: string) =>
  (await readdir(`${bare}/objects`)).filter((name) => name.startsWith('tmp_objdir'));

describe('real git push: a refused push leaves nothing behind', () => {
  it("push A refused with its tree; push B reusing A's tree unsent is refused as missing objects", async () => {
    const { work, bare } = await makeSampleRepo(sandbox, 'quarantine');
    const target = await openNodeRepository(bare);
    // real git's upload-pack over a copy of the pusher's repository made once A exists
    const backend = await startHttpBackend(sandbox, sandbox.dir);
    closers.push(() => backend.close());
    const url = await serve(target, `${backend.url}/quarantine-negotiation.git`, {
      hooks: {
        preReceive: async (commands) => (commands.some((c) => c.name === 'refs/heads/frozen') ? 'frozen' : undefined),
      },
    });
    await sandbox.git(['remote', 'add', 'origin', url], { cwd: work });
    const main = await sandbox.git(['rev-parse', 'main'], { cwd: work });

    // push A: a new file, refused by the hook after its pack was received
    await sandbox.git(['checkout', '-q', '-b', 'a'], { cwd: work });
    await sandbox.exec('sh', ['-c', 'echo "only in A" > secret.txt'], { cwd: work });
    await sandbox.git(['add', 'secret.txt'], { cwd: work });
    await sandbox.git(['commit', '-q', '-m', 'A'], { cwd: work });
    const a = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    const tree = await sandbox.git(['rev-parse', 'HEAD^{tree}'], { cwd: work });
    const blob = await sandbox.git(['rev-parse', 'HEAD:secret.txt'], { cwd: work });
    await sandbox.git(['clone', '-q', '--bare', work, sandbox.path('quarantine-negotiation.git')]);
    const pushA = await sandbox.run(['push', 'origin', 'a:refs/heads/frozen'], { cwd: work, allowFailure: true });
    expect(pushA.code).not.toBe(0);
    expect(pushA.stderr).toContain('pre-receive hook declined: frozen');
    for (const oid of [a, tree, blob]) {
      const exists = await sandbox.run(['--git-dir', bare, 'cat-file', '-e', oid], { allowFailure: true });
      expect(exists.code, oid).not.toBe(0);
    }
    expect(await quarantines(bare)).toEqual([]);

    // push B: A's tree again, on top of A; negotiation (from B down) finds A on the server's
    // upload-pack side, so git leaves A, its tree and blob out
    const b = await sandbox.git(['commit-tree', tree, '-p', a, '-m', 'B'], { cwd: work });
    const pushB = await sandbox.run(['-c', 'push.negotiate=true', 'push', 'origin', `${b}:refs/heads/main`], {
      cwd: work,
      allowFailure: true,
    });
    expect(pushB.code, pushB.stderr).not.toBe(0);
    expect(pushB.stderr).toContain('missing necessary objects');
    expect(await sandbox.git(['--git-dir', bare, 'rev-parse', 'main'])).toBe(main);
    await sandbox.git(['--git-dir', bare, 'fsck', '--full', '--strict']);

    // the same push with its objects is accepted
    const pushC = await sandbox.run(['push', 'origin', `${b}:refs/heads/main`], { cwd: work });
    expect(pushC.code).toBe(0);
    expect(await sandbox.git(['--git-dir', bare, 'rev-parse', 'main'])).toBe(b);
    await sandbox.git(['--git-dir', bare, 'fsck', '--full', '--strict']);
    expect(await quarantines(bare)).toEqual([]);
  });
});
