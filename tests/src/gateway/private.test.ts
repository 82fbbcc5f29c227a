/**
 * `--private` with real git: without the token the repository does not exist (404, so git says
 * "not found"); with it (as a header, since git only sends Basic credentials after a 401) clone
 * and push work. Repeated and oddly cased headers are read the way node:http reads them.
 */
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { describe, expect, it } from 'vitest';
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

/** The status of one request sent byte for byte (repeated headers, any case). */
function statusOf(server: { host: string; port: number }, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, server.host, () => socket.write(`${head}Connection: close\r\n\r\n`));
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      got += chunk;
      // the status line is enough (an event stream stays open)
      if (got.includes('\r\n')) socket.destroy();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
  });
}

describe('private repositories, request headers', () => {
  it('takes the first of repeated Authorization headers, joins Cookie headers, ignores header case', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({ token: TOKEN, private: true, backend: 'git-process' });
    const work = sandbox.path('work');
    await sandbox.git(['init', '--quiet', work]);
    await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'a']);
    await sandbox.git(['clone', '--quiet', '--bare', work, join(server.root, 'secret.git')]);
    const get = 'GET /secret.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n';
    expect(await statusOf(server, get)).toBe(404);
    expect(await statusOf(server, `${get}AUTHORIZATION: Bearer ${TOKEN}\r\n`)).toBe(200);
    expect(await statusOf(server, `${get}Authorization: Bearer ${TOKEN}\r\nauthorization: Bearer nope\r\n`)).toBe(200);
    expect(await statusOf(server, `${get}Authorization: Bearer nope\r\nauthorization: Bearer ${TOKEN}\r\n`)).toBe(404);
    // the cookie authorizes event streams only (on a git route it would be a cross-site request forgery)
    const events = 'GET /secret.git/events HTTP/1.1\r\nHost: x\r\n';
    expect(await statusOf(server, `${events}Cookie: a=1\r\ncookie: gitport_token=${TOKEN}\r\n`)).toBe(200);
    expect(await statusOf(server, `${events}Cookie: a=1\r\ncookie: b=2\r\n`)).toBe(404);
    expect(await statusOf(server, `${get}Cookie: a=1\r\ncookie: gitport_token=${TOKEN}\r\n`)).toBe(404);
  });
});
