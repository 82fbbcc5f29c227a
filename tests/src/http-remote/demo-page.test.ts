/**
 * The demo page of `gitport serve`, in real Chromium: it lists the repositories, clones one into
 * its worker (OPFS) over HTTP, shows the log and HEAD's tree, and shows a `git push` live. The
 * checks read the DOM.
 */

import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServe } from '../gateway/serve-process.js';
import { launchChromium } from './chromium.js';

let sandbox: GitSandbox;
let serve: ServeProcess;
let browser: Browser;
let work: string;

async function commitFile(path: string, text: string, message: string): Promise<string> {
  await sandbox.exec('sh', [
    '-c',
    'mkdir -p "$(dirname "$1")" && printf "%s" "$2" > "$1"',
    'sh',
    `${work}/${path}`,
    text,
  ]);
  await sandbox.git(['-C', work, 'add', path]);
  await sandbox.git(['-C', work, 'commit', '-q', '-m', message]);
  return sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
}

const texts = (page: Page, selector: string) => page.locator(selector).allTextContents();

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-demo-page-');
  const root = sandbox.path('repos');
  work = sandbox.path('work');
  await sandbox.git(['init', '-q', work]);
  await commitFile('README.md', '# project\n', 'start the project');
  await commitFile('src/main.txt', 'main\n', 'add the main file');
  await sandbox.git(['init', '-q', '--bare', `${root}/project.git`]);
  await sandbox.git(['init', '-q', '--bare', `${root}/other.git`]);
  await sandbox.git(['-C', work, 'push', '-q', `${root}/project.git`, 'HEAD:refs/heads/main']);
  serve = await startServe(['--root', root, '--port', '0', '--workers', '1', '--allow-anonymous-push']);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  serve?.child.kill('SIGTERM');
  await serve?.exit;
  await sandbox?.cleanup();
});

describe('the demo page', () => {
  it('is served with strict content types and a content security policy', async () => {
    const page = await fetch(`${serve.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    for (const asset of ['app.js', 'worker.js']) {
      const script = await fetch(`${serve.url}/demo/${asset}`);
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect((await script.text()).length).toBeGreaterThan(0);
    }
    expect(await (await fetch(`${serve.url}/demo/repositories.json`)).json()).toEqual(['other', 'project']);
    // git's routes are untouched
    const refs = await fetch(`${serve.url}/project.git/info/refs?service=git-upload-pack`);
    expect(refs.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
  });

  it('clones a repository into its worker, shows log and tree, and follows a git push', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${serve.url}/`);
    await page.locator('button[data-repository="project"]').click();
    await page.locator('#status.live').waitFor();
    expect(await texts(page, '#log li')).toEqual([
      expect.stringContaining('add the main file'),
      expect.stringContaining('start the project'),
    ]);
    expect(await texts(page, '#tree li')).toEqual(['README.md', 'src/main.txt']);
    const head = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
    expect(await page.locator('#log li').first().getAttribute('data-oid')).toBe(head);

    const pushed = await commitFile('docs/live.md', 'pushed while the page watched\n', 'a live push');
    await sandbox.git(['-C', work, 'push', '-q', `${serve.url}/project.git`, 'HEAD:refs/heads/main']);
    await page.locator(`#log li[data-oid="${pushed}"]`).waitFor();
    expect(await texts(page, '#log li')).toEqual([
      expect.stringContaining('a live push'),
      expect.stringContaining('add the main file'),
      expect.stringContaining('start the project'),
    ]);
    expect(await texts(page, '#tree li')).toEqual(['README.md', 'docs/live.md', 'src/main.txt']);
    expect(await page.locator('#status').textContent()).toContain('live update');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('is left out with --no-demo-page', async () => {
    const plain = await startServe([
      '--root',
      sandbox.path('repos'),
      '--port',
      '0',
      '--workers',
      '1',
      '--no-demo-page',
    ]);
    try {
      expect((await fetch(`${plain.url}/`)).status).toBe(404);
      expect((await fetch(`${plain.url}/demo/worker.js`)).status).toBe(404);
    } finally {
      plain.child.kill('SIGTERM');
      await plain.exit;
    }
  });
});
