/**
 * The HTTP remote page's worker: gitport's `remote(url)` and `watch(url)` against git servers
 * on other origins (CORS), into a MemoryFs or OPFS; and isomorphic-git's clone over its web
 * `http` client, for the benchmark. Each message `{ id, op, args }` is answered with a
 * `result` or an `error` carrying the GitportError's code and data.
 */
import '../worker-globals.js';
import { downloadClonePack } from '@gitport/test-helpers/clone-download';
import {
  commit,
  type FsLike,
  GitFs,
  type GitRepository,
  isGitportError,
  MemoryFs,
  OpfsFs,
  type RefUpdateEvent,
  remote,
  type Watcher,
  watch,
} from 'gitport';
import git from 'isomorphic-git';
import isoHttp from 'isomorphic-git/http/web';

export type WorkerReply =
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: { code: string; message: string; data: unknown } }
  /** `at`: when the worker heard it (ms since the epoch, fractional). */
  | { type: 'update'; event: RefUpdateEvent; at: number }
  /** An automatic fetch of a watcher: the local refs it moved (`name oid`). */
  | { type: 'fetched'; updates: string[] };

type Storage = 'memory' | 'opfs';

interface Target {
  url: string;
  /** A token the server wants for pushes: given only after a 401 (through `onAuth`). */
  token?: string;
}

const memory = new MemoryFs();
const filesystems: Record<Storage, () => FsLike> = { memory: () => memory, opfs: () => new OpfsFs() };
const repositories = new Map<string, GitRepository>();
const watchers: Watcher[] = [];
const author = { name: 'browser', email: 'browser@gitport.invalid', timestamp: 1_700_000_000 };

const origin = ({ url, token }: Target) =>
  remote(
    url,
    token === undefined
      ? {}
      : { onAuth: ({ attempt }) => (attempt === 1 ? { username: 'u', password: token } : undefined) },
  );

function opened(dir: string): GitRepository {
  const repo = repositories.get(dir);
  if (repo === undefined) throw new Error(`no clone at ${dir}`);
  return repo;
}

async function packBytes(fs: GitFs, gitDir: string): Promise<number> {
  let total = 0;
  for (const name of await fs.list(`${gitDir}/objects/pack`)) {
    if (name.endsWith('.pack')) total += (await fs.stat(`${gitDir}/objects/pack/${name}`))?.size ?? 0;
  }
  return total;
}

const operations: Record<string, (args: never) => Promise<unknown>> = {
  /** A bare clone: HEAD, the refs and the shallow boundary it ended with. */
  async clone(args: Target & { storage: Storage; dir: string; depth?: number }) {
    const fs = filesystems[args.storage]();
    await new GitFs(fs).removeTree(args.dir);
    const repo = await origin(args).clone(fs, args.dir, {
      bare: true,
      ...(args.depth !== undefined ? { depth: args.depth } : {}),
    });
    repositories.set(args.dir, repo);
    const shallow = await new GitFs(fs).readText(`${args.dir}/shallow`);
    return {
      head: await repo.refs.resolve('HEAD'),
      refs: (await repo.refs.list('refs/')).map((r) => `${r.name} ${r.oid}`),
      shallow: shallow === undefined ? [] : shallow.trim().split('\n'),
    };
  },

  /** Fetches every branch into the clone at `dir`: the refs it moved and the objects it now has. */
  async fetch(args: Target & { dir: string }) {
    const repo = opened(args.dir);
    const result = await origin(args).fetch(repo, { refspecs: ['+refs/heads/*:refs/heads/*'] });
    const main = await repo.refs.resolve('refs/heads/main');
    const object = main === undefined ? undefined : await repo.objects.read(main);
    return { refs: result.refs.map((r) => `${r.name} ${r.oid}`), main, mainType: object?.type };
  },

  /** One commit on `branch` of the clone at `dir` (a root commit when the branch is new). */
  async commit(args: { dir: string; branch: string; file: string; text: string }) {
    const done = await commit(opened(args.dir), {
      message: `${args.file} from the browser`,
      author,
      branch: args.branch,
      files: { [args.file]: args.text },
    });
    return done.oid;
  },

  async push(args: Target & { dir: string; refspecs: string[] }) {
    const result = await origin(args).push(opened(args.dir), { refspecs: args.refspecs });
    return { ok: result.ok };
  },

  /** The object id `ref` of the clone at `dir` resolves to, and the type of that object there. */
  async resolve(args: { dir: string; ref: string }) {
    const repo = opened(args.dir);
    const oid = await repo.refs.resolve(args.ref);
    return { oid, type: oid === undefined ? undefined : (await repo.objects.read(oid))?.type };
  },

  async lsRefs(args: Target) {
    return (await origin(args).lsRefs()).refs.map((r) => r.name);
  },

  /**
   * Follows the repository's ref updates: each one is posted as an `update` message. With `dir`,
   * each is also fetched into the clone there (every branch), and the branches it moved are
   * posted as a `fetched` message.
   */
  async watch(args: Target & { dir?: string }) {
    const into = args.dir === undefined ? undefined : opened(args.dir);
    const open = new Promise<void>((resolve, reject) => {
      watchers.push(
        watch(args.url, {
          onOpen: () => resolve(),
          onUpdate: (event) =>
            self.postMessage({
              type: 'update',
              event,
              at: performance.timeOrigin + performance.now(),
            } satisfies WorkerReply),
          onError: (error) => reject(error),
          ...(into === undefined
            ? {}
            : {
                fetch: {
                  into,
                  options: { refspecs: ['+refs/heads/*:refs/heads/*'] },
                  onFetched: (result) =>
                    self.postMessage({
                      type: 'fetched',
                      updates: result.updates.flatMap((u) => (u.status === 'ok' ? [`${u.name} ${u.new}`] : [])),
                    } satisfies WorkerReply),
                },
              }),
        }),
      );
    });
    await open;
    return true;
  },

  async unwatch() {
    for (const watcher of watchers.splice(0)) {
      watcher.stop();
      await watcher.stopped;
    }
    return true;
  },

  /**
   * The download alone, timed: the protocol v2 `fetch` request a clone of `want` sends (every
   * object, no haves), its response read to the end and dropped; the response's size.
   */
  async timedDownloads(args: { url: string; want: string; runs: number }) {
    const out: { ms: number; bytes: number }[] = [];
    for (let i = 0; i < args.runs; i++) {
      const start = performance.now();
      out.push({ ms: 0, bytes: await downloadClonePack(args.url, args.want) });
      out[i]!.ms = performance.now() - start;
    }
    return out;
  },

  /** Timed bare clones (gitport, or isomorphic-git's `clone` with `noCheckout`), each deleted after. */
  async timedClones(args: {
    url: string;
    storage: Storage;
    runs: number;
    tool: 'gitport' | 'isomorphic-git';
    /** What HEAD must be in every clone (the check happens after the clone is timed). */
    head: string;
  }) {
    const fs = filesystems[args.storage]();
    const gitFs = new GitFs(fs);
    const out: { ms: number; packBytes: number }[] = [];
    for (let i = 0; i < args.runs; i++) {
      const dir = `/bench-${args.tool}-${args.storage}-${i}`;
      await gitFs.removeTree(dir);
      const start = performance.now();
      let gitDir = dir;
      let head: string | undefined;
      if (args.tool === 'gitport') {
        const repo = await remote(args.url).clone(fs, dir, { bare: true });
        head = await repo.refs.resolve('HEAD');
      } else {
        await git.clone({ fs, http: isoHttp, dir, url: args.url, noCheckout: true });
        gitDir = `${dir}/.git`;
        head = await git.resolveRef({ fs, dir, ref: 'HEAD' });
      }
      const ms = performance.now() - start;
      if (head !== args.head) throw new Error(`${args.tool} cloned HEAD ${head}, not ${args.head}`);
      out.push({ ms, packBytes: await packBytes(gitFs, gitDir) });
      await gitFs.removeTree(dir);
    }
    return out;
  },
};

self.onmessage = (event: MessageEvent<{ id: number; op: string; args: unknown }>) => {
  const { id, op, args } = event.data;
  const run = operations[op];
  const work = run === undefined ? Promise.reject(new Error(`no operation ${op}`)) : run(args as never);
  work.then(
    (value) => self.postMessage({ type: 'result', id, value } satisfies WorkerReply),
    (error: unknown) =>
      self.postMessage({
        type: 'error',
        id,
        error: {
          code: isGitportError(error) ? error.code : 'FAILED',
          message: error instanceof Error ? error.message : String(error),
          data: isGitportError(error) ? JSON.parse(JSON.stringify(error.data ?? null)) : null,
        },
      } satisfies WorkerReply),
  );
};
