/**
 * Partial clone judged by real git: `git clone --filter=...` through `gitport serve` and through
 * `git http-backend` (with `uploadpack.allowFilter`) leave out the same objects, in protocol v2
 * and v0; the gitport-served partial clone then fetches what it lacks lazily, through gitport.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectSet as objectSetOf, type PartialCloneServers, startPartialCloneServers } from './fixture.js';

let sandbox: GitSandbox;
let serve: PartialCloneServers['serve'];
let backend: PartialCloneServers['backend'];
let servers: PartialCloneServers | undefined;

beforeAll(async () => {
  // with a blob every commit's tree shares
  servers = await startPartialCloneServers({ prefix: 'gitport-partial-', sharedBlob: true });
  ({ sandbox, serve, backend } = servers);
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

/** The object set of the (non-bare) clone at `clone`. */
const objectSet = (clone: string) => objectSetOf(sandbox, join(clone, '.git'));

const filters = ['blob:none', 'tree:0', 'blob:limit=1k'];

describe('partial clone served by gitport, against git http-backend', () => {
  for (const version of [2, 0]) {
    for (const filter of filters) {
      it(`--filter=${filter}, protocol v${version}: the same objects as git's server`, async () => {
        const name = `${filter.replace(/[^a-z0-9]/g, '-')}-v${version}`;
        const ours = sandbox.path(`ours-${name}`);
        const theirs = sandbox.path(`theirs-${name}`);
        const cfg = ['-c', `protocol.version=${version}`];
        const ourClone = await sandbox.run([
          ...cfg,
          'clone',
          '--no-checkout',
          `--filter=${filter}`,
          `${serve.url}/repo.git`,
          ours,
        ]);
        expect(String(ourClone.stderr)).not.toMatch(/filtering not recognized/);
        await sandbox.git([
          ...cfg,
          'clone',
          '--quiet',
          '--no-checkout',
          `--filter=${filter}`,
          `${backend.url}/repo.git`,
          theirs,
        ]);
        const ourObjects = await objectSet(ours);
        expect(ourObjects.some((l) => l.startsWith('?'))).toBe(true);
        expect(ourObjects).toEqual(await objectSet(theirs));
      }, 60_000);
    }
  }

  it('fetches missing objects lazily through gitport for checkout, log -p and blame', async () => {
    const clone = sandbox.path('lazy');
    await sandbox.git(['clone', '--quiet', '--filter=blob:none', `${serve.url}/repo.git`, clone]);
    expect(await sandbox.git(['-C', clone, 'status', '--porcelain'])).toBe('');
    const log = await sandbox.git(['-C', clone, 'log', '-p', '--', 'small.txt']);
    expect(log).toContain('+line 0');
    const blame = await sandbox.git(['-C', clone, 'blame', '--', 'small.txt']);
    expect(blame.split('\n').filter((l) => l !== '')).toHaveLength(6);
    const missing = (await objectSet(clone)).filter((l) => l.startsWith('?'));
    const tree0 = sandbox.path('lazy-tree0');
    await sandbox.git(['clone', '--quiet', '--filter=tree:0', `${serve.url}/repo.git`, tree0]);
    expect(await sandbox.git(['-C', tree0, 'show', 'HEAD~3:src/deep/d0/code.ts'])).toBe('export const n = 2;');
    await sandbox.git(['-C', clone, 'fsck', '--connectivity-only']);
    expect(missing.length).toBeGreaterThan(0);
  }, 120_000);

  async function v2Post(command: string, args: string[]): Promise<string> {
    const body = `${pkt(`command=${command}\n`)}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;
    const response = await fetch(`${serve.url}/repo.git/git-upload-pack`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'git-protocol': 'version=2' },
      body,
    });
    return response.text();
  }

  async function mainOid(): Promise<string> {
    return (await sandbox.git(['ls-remote', `${serve.url}/repo.git`, 'refs/heads/main'])).slice(0, 40);
  }

  it('refuses a bad filter spec, a second filter line and sparse:oid with ERR lines', async () => {
    const want = `want ${await mainOid()}`;
    expect(await v2Post('fetch', [want, 'filter no-such-filter', 'done'])).toMatch(
      /^[0-9a-f]{4}ERR .*invalid filter-spec 'no-such-filter'/,
    );
    expect(await v2Post('fetch', [want, 'filter blob:none', 'filter tree:0', 'done'])).toMatch(
      /^[0-9a-f]{4}ERR .*multiple filter-specs cannot be combined/,
    );
    expect(await v2Post('fetch', [want, `filter sparse:oid=${await mainOid()}`, 'done'])).toMatch(
      /^[0-9a-f]{4}ERR .*filter 'sparse:oid' not supported/,
    );
    // a blob is not a want without a filter (it is not a ref tip or a commit reachable from one)
    const blob = await sandbox.git(['--git-dir', sandbox.path('root', 'repo.git'), 'rev-parse', 'main:small.txt']);
    expect(await v2Post('fetch', [`want ${blob}`, 'done'])).toMatch(/ERR .*not our ref/);
    expect(await v2Post('fetch', [`want ${blob}`, 'filter blob:none', 'done'])).toContain('packfile');
    // an object no ref reaches is refused even with a filter
    const loose = sandbox.path('unreachable.txt');
    await writeFile(loose, 'reachable from no ref\n');
    const hidden = await sandbox.git(['--git-dir', sandbox.path('root', 'repo.git'), 'hash-object', '-w', loose]);
    expect(await v2Post('fetch', [`want ${hidden}`, 'filter blob:none', 'done'])).toMatch(/ERR .*not our ref/);
  });

  it('advertises filter in v0 and v2, and object-info in v2', async () => {
    const v0 = await (await fetch(`${serve.url}/repo.git/info/refs?service=git-upload-pack`)).text();
    expect(v0.split('\0')[1]?.split(' ')).toContain('filter');
    const v2 = await (
      await fetch(`${serve.url}/repo.git/info/refs?service=git-upload-pack`, {
        headers: { 'git-protocol': 'version=2' },
      })
    ).text();
    expect(v2).toMatch(/fetch=[^\n]*\bfilter\b/);
    expect(v2).toContain('object-info\n');
  });

  it('answers object-info with the sizes git reports, and none for an unknown object', async () => {
    const gitDir = sandbox.path('root', 'repo.git');
    const names = ['main:small.txt', 'main:big-2.txt', 'main:src', 'main'];
    const oids = await Promise.all(names.map((n) => sandbox.git(['--git-dir', gitDir, 'rev-parse', n])));
    const sizes = await Promise.all(oids.map((o) => sandbox.git(['--git-dir', gitDir, 'cat-file', '-s', o])));
    const unknown = '0123456789abcdef0123456789abcdef01234567';
    const text = await v2Post('object-info', ['size', ...oids.map((o) => `oid ${o}`), `oid ${unknown}`]);
    const expected = ['size\n', ...oids.map((o, i) => `${o} ${sizes[i]}\n`), `${unknown} \n`].map(pkt).join('');
    expect(text).toBe(`${expected}0000`);
  });
});

function pkt(text: string): string {
  return (text.length + 4).toString(16).padStart(4, '0') + text;
}
