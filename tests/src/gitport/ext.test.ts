/**
 * Real git against a gitport host over a transport stream (git's `ext::` transport and
 * ext-bridge.ts): ls-remote, clone and fetch in protocol v0 and v2, and push; checked with
 * git fsck and compared with what git itself serves.
 */
import { cp, writeFile } from 'node:fs/promises';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { tsNodeCommand } from '@gitport/test-helpers/ts-worker';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureHistory } from '../history.js';

describe('real git against a gitport host', () => {
  let sandbox: GitSandbox;
  let url: string;
  let urlV2: string;
  let bare: string;

  beforeEach(async () => {
    sandbox = await createGitSandbox('gitport-ext-');
    const history = await ensureHistory({ commits: 80, seed: 5 });
    bare = sandbox.path('root', 'demo.git');
    await cp(history.gitDir, bare, { recursive: true });
    const command = tsNodeCommand(new URL('./ext-bridge.ts', import.meta.url));
    // ext:: splits on spaces; %S is the service name (git-upload-pack / git-receive-pack).
    url = `ext::${command.join(' ')} %S ${sandbox.path('root')} demo`;
    urlV2 = `${url} v2`;
  });
  afterEach(() => sandbox.cleanup());

  for (const version of [0, 2]) {
    it(`ls-remote and clone in protocol v${version} match git's own`, async () => {
      const config = ['-c', `protocol.version=${version}`];
      const remoteUrl = version === 2 ? urlV2 : url;
      const traced = await sandbox.run([...config, 'ls-remote', remoteUrl], { env: { GIT_TRACE_PACKET: '1' } });
      expect(traced.stderr.includes('version 2')).toBe(version === 2);
      const ours = await sandbox.git([...config, 'ls-remote', '--symref', remoteUrl]);
      const theirs = await sandbox.git([...config, 'ls-remote', '--symref', bare]);
      expect(ours).toBe(theirs);
      const dir = sandbox.path(`clone-v${version}`);
      await sandbox.git([...config, 'clone', '-q', '--mirror', remoteUrl, dir]);
      await sandbox.git(['fsck', '--full', '--strict'], { cwd: dir });
      const refs = (cwd: string) => sandbox.git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd });
      expect(await refs(dir)).toBe(await refs(bare));
    });
  }

  it('real git pushes a commit, fetches it back, and is refused a non-fast-forward', async () => {
    const work = sandbox.path('work');
    await sandbox.git(['clone', '-q', url, work]);
    await writeFile(`${work}/from-git.txt`, 'pushed by real git\n');
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'from real git'], { cwd: work });
    await sandbox.git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
    const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: work });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(head);
    await sandbox.git(['fsck', '--full', '--strict'], { cwd: bare });

    const other = sandbox.path('other');
    await sandbox.git(['-c', 'protocol.version=2', 'clone', '-q', urlV2, other]);
    expect(await sandbox.git(['rev-parse', 'HEAD'], { cwd: other })).toBe(head);

    await sandbox.git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: work });
    await writeFile(`${work}/diverged.txt`, 'x\n');
    await sandbox.git(['add', '.'], { cwd: work });
    await sandbox.git(['commit', '-qm', 'diverged'], { cwd: work });
    const refused = await sandbox.run(['push', 'origin', 'HEAD:main'], { cwd: work, allowFailure: true });
    expect(refused.code).not.toBe(0);
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(head);
    await sandbox.git(['push', '-q', '--force', 'origin', 'HEAD:main'], { cwd: work });
    expect(await sandbox.git(['rev-parse', 'main'], { cwd: bare })).toBe(
      await sandbox.git(['rev-parse', 'HEAD'], { cwd: work }),
    );
  });
});
