/**
 * `--private` with real git: without the token the repository does not exist (404, so git says
 * "not found"); with it (as a header, since git only sends Basic credentials after a 401) clone
 * and push work.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitSandbox } from '../git.js';
import { backends, startServer } from './server.js';

const TOKEN = 'private-token';

describe.each(backends)('private repositories, %s backend', (backend) => {
  it('hides them from git without the token and serves them with it', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ root: sandbox.path('root'), token: TOKEN, private: true, backend });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await writeFile(join(work, 'a.txt'), 'a\n');
    await sandbox.git(['-C', work, 'add', '.']);
    await sandbox.git(['-C', work, 'commit', '--quiet', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'secret.git')]);
    const url = `${server.url}/secret.git`;

    const denied = await sandbox.run(['clone', url, sandbox.path('denied')], { allowFailure: true });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/not found|404/);
    const wrong = await sandbox.run(['-c', 'http.extraHeader=Authorization: Bearer nope', 'ls-remote', url], {
      allowFailure: true,
    });
    expect(wrong.code).not.toBe(0);

    const auth = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
    const dest = sandbox.path('ok');
    await sandbox.git([...auth, 'clone', '--quiet', url, dest]);
    await sandbox.git(['-C', dest, 'commit', '--quiet', '--allow-empty', '-m', 'b']);
    await sandbox.git(['-C', dest, ...auth, 'push', '--quiet', 'origin', 'HEAD:main']);
    expect(await sandbox.git(['--git-dir', join(server.root, 'secret.git'), 'rev-parse', 'main'])).toBe(
      await sandbox.git(['-C', dest, 'rev-parse', 'HEAD']),
    );
  });
});
