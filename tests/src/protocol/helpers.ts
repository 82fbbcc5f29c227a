/**
 * Test plumbing for the protocol interop tests: repositories loaded from real git into memory
 * (and written back), real git services spawned over stdio as a `Connection`, `git http-backend`
 * behind a tiny node:http server, and gitport's own HTTP handlers behind another.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importPack, MemoryObjectStore, packObjects } from '@gitport/pack';
import {
  advertiseRefsHttp,
  type Connection,
  type HttpFetch,
  handleReceivePackHttp,
  handleUploadPackHttp,
  isGitService,
  MemoryRefStore,
  protocolFromHeader,
  type ReceivePackResult,
  type Repository,
  rpcResultHeaders,
} from '@gitport/protocol';
import type { GitSandbox } from '@gitport/test-helpers/git';

export interface MemoryRepository extends Repository {
  objects: MemoryObjectStore;
  refs: MemoryRefStore;
}

async function* chunks(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Loads every object and ref of a real git repository into memory. */
export async function loadRepository(sandbox: GitSandbox, gitDir: string): Promise<MemoryRepository> {
  const objects = new MemoryObjectStore();
  const refsText = await sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)']);
  const refs = new MemoryRefStore({
    refs: refsText
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => ({ oid: l.slice(0, 40), name: l.slice(41) })),
  });
  const head = await sandbox.run(['--git-dir', gitDir, 'symbolic-ref', 'HEAD'], { allowFailure: true });
  if (head.code === 0) await refs.setSymbolic('HEAD', new TextDecoder().decode(head.stdout).trim());
  if (refsText !== '') {
    const pack = await sandbox.run(['--git-dir', gitDir, 'pack-objects', '--all', '--revs', '--stdout', '-q'], {
      input: '',
    });
    await importPack(objects, chunks(pack.stdout));
  }
  return { objects, refs };
}

/** Writes every object and ref of a memory repository into a real bare repository. */
export async function saveRepository(sandbox: GitSandbox, repo: MemoryRepository, gitDir: string): Promise<void> {
  const oids = [...repo.objects.keys()];
  if (oids.length > 0) {
    const parts: Uint8Array[] = [];
    for await (const chunk of packObjects(repo.objects, oids)) parts.push(chunk);
    const pack = Buffer.concat(parts);
    await sandbox.git(['--git-dir', gitDir, 'index-pack', '--stdin'], { input: pack });
  }
  const lines: string[] = [];
  const existing = await sandbox.git(['--git-dir', gitDir, 'for-each-ref', '--format=%(refname)']);
  const names = new Set((await repo.refs.list()).map((r) => r.name));
  for (const name of existing.split('\n')) if (name && !names.has(name)) lines.push(`delete ${name}`);
  for (const r of await repo.refs.list()) lines.push(`update ${r.name} ${r.oid}`);
  if (lines.length > 0)
    await sandbox.git(['--git-dir', gitDir, 'update-ref', '--stdin'], { input: `${lines.join('\n')}\n` });
  const head = await repo.refs.read('HEAD');
  if (head.kind === 'symbolic') await sandbox.git(['--git-dir', gitDir, 'symbolic-ref', 'HEAD', head.target]);
}

/** A child process's stdio as a `Connection`. */
export function processConnection(child: ChildProcess): Connection {
  const stdout = child.stdout!;
  const stdin = child.stdin!;
  stdin.on('error', () => {});
  return {
    input: (async function* () {
      for await (const chunk of stdout) {
        const b = chunk as Buffer;
        yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      }
    })(),
    write: (bytes) =>
      new Promise<void>((resolve, reject) => {
        if (bytes.length === 0) return resolve();
        stdin.write(bytes, (error) => (error ? reject(error) : resolve()));
      }),
    end: () =>
      new Promise<void>((resolve) => {
        if (stdin.writableEnded) return resolve();
        stdin.end(() => resolve());
      }),
  };
}

export interface GitService {
  connection: Connection;
  child: ChildProcess;
  /** Resolves with git's exit code and stderr. */
  exit: Promise<{ code: number | null; stderr: string }>;
}

/** Spawns `git upload-pack` / `git receive-pack` on a repository, stateful over stdio. */
export function spawnGitService(
  sandbox: GitSandbox,
  service: 'upload-pack' | 'receive-pack',
  gitDir: string,
  options: { protocol?: 0 | 1 | 2 } = {},
): GitService {
  const env: Record<string, string> = { ...sandbox.env };
  if (options.protocol) env.GIT_PROTOCOL = `version=${options.protocol}`;
  const child = spawn('git', [service, gitDir], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const stderrDone = new Promise<void>((resolve) => child.stderr!.on('close', () => resolve()));
  // 'exit', not 'close': the client may leave bytes it does not need unread on stdout
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.on('exit', (code) => {
      child.stdout!.resume();
      stderrDone.then(() => resolve({ code, stderr }));
    });
  });
  return { connection: processConnection(child), child, exit };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

export interface TestServer {
  url: string;
  close(): Promise<void>;
  /** Counts of requests by `METHOD path`. */
  requests: string[];
}

function listen(server: Server, requests: string[]): Promise<TestServer> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}

/** `git http-backend` as a CGI behind node:http, serving `root` (every repository exported). */
export function startHttpBackend(sandbox: GitSandbox, root: string): Promise<TestServer> {
  const requests: string[] = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    const env: Record<string, string> = {
      ...sandbox.env,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: String(body.length),
      REMOTE_ADDR: '127.0.0.1',
      REMOTE_USER: 'test',
      GIT_HTTP_RECEIVE_PACK: 'true',
    };
    const protocol = req.headers['git-protocol'];
    if (typeof protocol === 'string') env.GIT_PROTOCOL = protocol;
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding']);
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    // a CGI may exit without reading its stdin (a GET has no body): EPIPE on it is no failure
    cgi.stdin.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') res.destroy(error);
    });
    cgi.stdin.end(body);
    const out: Buffer[] = [];
    cgi.stdout.on('data', (d: Buffer) => out.push(d));
    cgi.on('close', () => {
      const all = Buffer.concat(out);
      const split = all.indexOf('\r\n\r\n');
      const headerText = all.subarray(0, split).toString();
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of headerText.split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else if (name) headers[name] = value;
      }
      res.writeHead(status, headers);
      res.end(all.subarray(split + 4));
    });
  });
  return listen(server, requests);
}

/** gitport's smart-HTTP handlers behind node:http, for one repository at `/repo.git`. */
export function startGitportHttp(
  repo: Repository,
  options: { onPush?: (result: ReceivePackResult) => void; allowNonFastForward?: boolean } = {},
): Promise<TestServer> {
  const requests: string[] = [];
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push(`${req.method} ${url.pathname}`);
      const protocol = protocolFromHeader(req.headers['git-protocol'] as string | undefined);
      if (req.method === 'GET' && url.pathname === '/repo.git/info/refs') {
        const service = url.searchParams.get('service');
        if (!isGitService(service)) {
          res.writeHead(403).end();
          return;
        }
        const reply = await advertiseRefsHttp(repo, service, { protocol });
        res.writeHead(reply.status, reply.headers).end(reply.body);
        return;
      }
      if (
        req.method === 'POST' &&
        (url.pathname === '/repo.git/git-upload-pack' || url.pathname === '/repo.git/git-receive-pack')
      ) {
        const service = url.pathname.endsWith('upload-pack') ? 'git-upload-pack' : 'git-receive-pack';
        let input: AsyncIterable<Uint8Array> = req;
        if (req.headers['content-encoding'] === 'gzip') {
          const { createGunzip } = await import('node:zlib');
          input = req.pipe(createGunzip());
        }
        res.writeHead(200, rpcResultHeaders(service));
        const handled =
          service === 'git-upload-pack'
            ? handleUploadPackHttp(repo, input, { protocol })
            : handleReceivePackHttp(repo, input, {
                protocol,
                ...(options.allowNonFastForward !== undefined
                  ? { allowNonFastForward: options.allowNonFastForward }
                  : {}),
              });
        if ('result' in handled)
          handled.result.then(
            (r) => options.onPush?.(r),
            () => {},
          );
        for await (const chunk of handled.body) {
          if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
        }
        res.end();
        return;
      }
      res.writeHead(404).end();
    } catch (error) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    }
  });
  return listen(server, requests);
}

/** An HttpFetch over Node's fetch (streaming request bodies). */
export const nodeHttp: HttpFetch = async (request) => {
  const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers: request.headers };
  if (request.body !== undefined) {
    if (request.body instanceof Uint8Array) init.body = request.body as unknown as BodyInit;
    else {
      const source = request.body;
      init.body = new ReadableStream<Uint8Array>({
        async start(controller) {
          for await (const chunk of source) controller.enqueue(chunk);
          controller.close();
        },
      });
      init.duplex = 'half';
    }
  }
  if (request.signal) init.signal = request.signal;
  const response = await fetch(request.url, init);
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  const body = response.body;
  return {
    status: response.status,
    headers,
    body: (async function* () {
      if (!body) return;
      const reader = body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    })(),
  };
};

/** Makes a small repository with real git: a few commits on main, a branch, an annotated and a lightweight tag. */
export async function makeSampleRepo(sandbox: GitSandbox, name = 'src'): Promise<{ work: string; bare: string }> {
  const work = sandbox.path(name);
  await sandbox.git(['init', '-q', work]);
  for (let i = 1; i <= 4; i++) {
    await sandbox.exec('sh', ['-c', `echo "line ${i}" >> file.txt && mkdir -p dir && echo ${i} > dir/n${i}.txt`], {
      cwd: work,
    });
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-q', '-m', `commit ${i}`], {
      cwd: work,
      env: {
        GIT_COMMITTER_DATE: `${1_600_000_000 + i * 1000} +0000`,
        GIT_AUTHOR_DATE: `${1_600_000_000 + i * 1000} +0000`,
      },
    });
    if (i === 2) await sandbox.git(['tag', '-a', 'v1', '-m', 'version 1'], { cwd: work });
    if (i === 3) await sandbox.git(['tag', 'light'], { cwd: work });
  }
  await sandbox.git(['branch', 'feature', 'HEAD~1'], { cwd: work });
  const bare = sandbox.path(`${name}.git`);
  await sandbox.git(['clone', '-q', '--bare', work, bare]);
  return { work, bare };
}

/** Adds commits in a work tree. */
export async function addCommits(sandbox: GitSandbox, work: string, count: number, tag = 'extra'): Promise<void> {
  for (let i = 0; i < count; i++) {
    await sandbox.exec('sh', ['-c', `echo "${tag} ${i}" >> ${tag}.txt`], { cwd: work });
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-q', '-m', `${tag} ${i}`], { cwd: work });
  }
}

/** An in-process HttpFetch that answers with gitport's smart-HTTP handlers (stateless rounds, no sockets). */
export function localHttp(repo: Repository, log: string[] = []): HttpFetch {
  return async (request) => {
    const url = new URL(request.url);
    const protocol = protocolFromHeader(request.headers['Git-Protocol'] ?? request.headers['git-protocol']);
    log.push(`${request.method} ${url.pathname}`);
    if (request.method === 'GET') {
      const service = url.searchParams.get('service');
      if (!isGitService(service)) return { status: 403, headers: {}, body: chunks(new Uint8Array(0)) };
      const reply = await advertiseRefsHttp(repo, service, { protocol });
      return { status: reply.status, headers: reply.headers, body: chunks(reply.body) };
    }
    const body =
      request.body instanceof Uint8Array ? chunks(request.body) : (request.body ?? chunks(new Uint8Array(0)));
    if (url.pathname.endsWith('/git-upload-pack')) {
      const handled = handleUploadPackHttp(repo, body, { protocol });
      return { status: 200, headers: rpcResultHeaders('git-upload-pack'), body: handled.body };
    }
    const handled = handleReceivePackHttp(repo, body);
    return { status: 200, headers: rpcResultHeaders('git-receive-pack'), body: handled.body };
  };
}
