/**
 * The demo page's script: the repository list, and what the worker reports (progress, the log,
 * HEAD's tree) written into the page. The DOM is built with textContent only: names, subjects
 * and paths come from repositories anyone may push to.
 */
import type { OpenRepository, WorkerMessage } from './messages.js';

const element = (id: string) => {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found;
};

const status = element('status');
const list = element('repositories');
const log = element('log');
const tree = element('tree');
const headLabel = element('head');
element('push-hint').textContent = `git push ${location.origin}/<name>.git`;

const worker = new Worker('/demo/worker.js', { type: 'module' });
let updates = 0;

worker.onmessage = (event: MessageEvent<WorkerMessage>) => {
  const message = event.data;
  if (message.type === 'progress') {
    status.textContent = message.message;
    status.className = '';
  } else if (message.type === 'error') {
    status.textContent = `${message.code}: ${message.message}`;
    status.className = '';
  } else {
    if (message.cause === 'update') updates++;
    status.textContent =
      message.cause === 'clone'
        ? `${message.name}: cloned, following pushes live`
        : `${message.name}: live update ${updates} fetched`;
    status.className = 'live';
    headLabel.textContent = message.head?.slice(0, 12) ?? '(empty)';
    log.replaceChildren(
      ...message.log.map((commit) => {
        const item = document.createElement('li');
        item.dataset.oid = commit.oid;
        const oid = document.createElement('span');
        oid.className = 'oid';
        oid.textContent = commit.oid.slice(0, 7);
        item.append(oid, `${commit.subject} — ${commit.author}`);
        return item;
      }),
    );
    tree.replaceChildren(
      ...message.files.map((path) => {
        const item = document.createElement('li');
        item.textContent = path;
        return item;
      }),
    );
  }
};

function open(name: string, button: HTMLButtonElement): void {
  for (const other of list.querySelectorAll('button')) other.setAttribute('aria-pressed', 'false');
  button.setAttribute('aria-pressed', 'true');
  updates = 0;
  worker.postMessage({ type: 'open', name } satisfies OpenRepository);
}

async function showRepositories(): Promise<void> {
  const response = await fetch('/demo/repositories.json');
  const names = (await response.json()) as string[];
  if (names.length === 0) {
    list.textContent = 'no repositories yet';
    return;
  }
  list.replaceChildren(
    ...names.map((name) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = name;
      button.dataset.repository = name;
      button.setAttribute('aria-pressed', 'false');
      button.addEventListener('click', () => open(name, button));
      return button;
    }),
  );
}

showRepositories().catch((error: unknown) => {
  list.textContent = `cannot list the repositories: ${error instanceof Error ? error.message : String(error)}`;
});
