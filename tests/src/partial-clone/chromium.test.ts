/**
 * Partial clone in real Chromium: a module Web Worker clones `blob:none` from `gitport serve`
 * over smart HTTP into OPFS, lists HEAD's tree at once (no blob needed; from the pack through
 * `onHeadView`, before the clone resolves), and fetches one file's blob when it is read.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServeProcess, startServe } from '../gateway/serve-process.js';
import { withPartialClonePage } from './browser-page.js';

let sandbox: GitSandbox;
let serve: ServeProcess;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-partial-chromium-');
  const work = sandbox.path('work');
  await sandbox.git(['init', '--quiet', '-b', 'main', work]);
  for (let i = 0; i < 4; i++) {
    await mkdir(join(work, 'docs', `part-${i}`), { recursive: true });
    await writeFile(join(work, 'docs', `part-${i}`, 'notes.md'), `# part ${i}\n`);
    await writeFile(join(work, 'README.md'), `readme ${i}\n`);
    await writeFile(join(work, `large-${i}.bin`), randomBytes(40_000).toString('hex'));
    await sandbox.git(['-C', work, 'add', '-A']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', `commit ${i}`]);
  }
  await sandbox.git(['clone', '--quiet', '--bare', work, sandbox.path('root', 'repo.git')]);
  serve = await startServe(['--root', sandbox.path('root'), '--port', '0', '--workers', '1']);
}, 60_000);

afterAll(async () => {
  serve?.child.kill('SIGTERM');
  await serve?.exit;
  await sandbox?.[Symbol.asyncDispose]();
});

it('a worker clones blob:none into OPFS, lists HEAD at once and fetches a blob when read', async () => {
  await withPartialClonePage(serve.url, async (run) => {
    const partial = await run({ mode: 'partial', repository: 'repo.git', open: 'docs/part-2/notes.md' });
    expect(partial.error).toBeUndefined();
    expect(partial.paths).toBe(9);
    // the first view came from the pack (onHeadView), before the clone resolved
    expect(partial.viewEarly).toBe(true);
    expect(partial.viewBeforeClone).toBe(true);
    expect(partial.samplePaths).toEqual([
      'README.md',
      'docs/part-0/notes.md',
      'docs/part-1/notes.md',
      'docs/part-2/notes.md',
      'docs/part-3/notes.md',
    ]);
    // the blob was not there until read, then came in one lazy fetch
    expect(partial.missingCode).toBe('OBJECT_MISSING');
    expect(partial.opened).toBe('# part 2\n');
    expect(partial.lazyFetches).toBe(1);
    expect(partial.config).toContain('partialClone = origin');
    expect(partial.config).toContain('partialclonefilter = blob:none');
    expect(partial.promisorFiles).toBe(2);
    const full = await run({ mode: 'full', repository: 'repo.git' });
    expect(full.error).toBeUndefined();
    expect(full.paths).toBe(9);
    expect(full.viewEarly).toBe(true);
    expect(full.viewBeforeClone).toBe(true);
    // tree:0 brings no tree: the view is the finished clone, its trees fetched lazily
    const tree0 = await run({ mode: 'partial', filter: 'tree:0', repository: 'repo.git' });
    expect(tree0.error).toBeUndefined();
    expect(tree0.viewEarly).toBe(false);
    expect(tree0.samplePaths).toEqual(partial.samplePaths);
    // the four large blobs of history stayed on the server
    expect(partial.bytes).toBeLessThan(full.bytes! / 2);
    // the peer of the benchmark lists the same tree
    const peer = await run({ mode: 'isomorphic-git', repository: 'repo.git' });
    expect(peer.error).toBeUndefined();
    expect(peer.samplePaths).toEqual(partial.samplePaths);
  });
}, 180_000);
