/**
 * The demo page's worker: gitport over smart HTTP into OPFS. It clones the repository it is
 * asked for (bare, as `git clone --bare` does), reports its log and HEAD's tree, then follows
 * its ref updates over the server's events and fetches each one.
 */
import { parseCommit } from '@gitport/pack';
import { GitFs, type GitRepository, isGitportError, listFiles, OpfsFs, remote, type Watcher, watch } from 'gitport';
import { type CommitSummary, LOG_LIMIT, type OpenRepository, type WorkerMessage } from './messages.js';

const scope = globalThis as unknown as {
  postMessage(message: WorkerMessage): void;
  onmessage: ((event: MessageEvent<OpenRepository>) => void) | null;
  location: { origin: string };
};

const post = (message: WorkerMessage) => scope.postMessage(message);

let watcher: Watcher | undefined;
let opening = Promise.resolve();

scope.onmessage = (event) => {
  if (event.data?.type !== 'open') return;
  const { name } = event.data;
  opening = opening.then(() =>
    open(name).catch((error: unknown) =>
      post({
        type: 'error',
        code: isGitportError(error) ? error.code : 'DEMO_FAILED',
        message: error instanceof Error ? error.message : String(error),
      }),
    ),
  );
};

async function open(name: string): Promise<void> {
  watcher?.stop();
  await watcher?.stopped;
  const url = `${scope.location.origin}/${name.split('/').map(encodeURIComponent).join('/')}.git`;
  const fs = new OpfsFs();
  const dir = `/gitport-demo/${name}.git`;
  // a clone from an earlier visit is replaced
  await new GitFs(fs).removeTree(dir);
  post({ type: 'progress', message: `cloning ${url} into OPFS…` });
  const origin = remote(url);
  const repo = await origin.clone(fs, dir, {
    bare: true,
    onProgress: (progress) => {
      if (progress.phase === 'remote') post({ type: 'progress', message: progress.message.trim() });
    },
  });
  post(await state(name, repo, 'clone'));
  watcher = watch(url, {
    fetch: {
      into: repo,
      from: origin,
      options: { refspecs: ['+refs/heads/*:refs/heads/*'], tags: 'all' },
      onFetched: () => {
        void state(name, repo, 'update').then(post);
      },
    },
    onError: (error) => post({ type: 'progress', message: `${error.code}: ${error.message}` }),
  });
}

async function state(name: string, repo: GitRepository, cause: 'clone' | 'update'): Promise<WorkerMessage> {
  const head = await repo.refs.resolve('HEAD');
  const log: CommitSummary[] = [];
  let at = head;
  while (at !== undefined && log.length < LOG_LIMIT) {
    const object = await repo.objects.read(at);
    if (object === undefined || object.type !== 'commit') break; // a shallow boundary
    const commit = parseCommit(object.data);
    log.push({ oid: at, subject: commit.message.split('\n')[0] ?? '', author: commit.author.name });
    at = commit.parents[0];
  }
  const files = head === undefined ? [] : await listFiles(repo, 'HEAD');
  return { type: 'state', name, head, log, files, cause };
}
