import * as nodeFs from 'node:fs';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from './fs-store.js';
import { parseObjectFilter } from './object-filter.js';
import { filterTestRepository } from './test-repo-files.js';
import { enumerateObjects } from './walk.js';

/** Filters whose verdicts git's rev-list and a pack enumeration share exactly (combine: differs, see object-filter.test.ts). */
const SPECS = [
  'blob:none',
  'blob:limit=0',
  'blob:limit=1k',
  'blob:limit=5000',
  'tree:0',
  'tree:1',
  'tree:2',
  'tree:3',
  'tree:5',
  'object:type=blob',
  'object:type=tree',
  'object:type=commit',
  'object:type=tag',
];

describe('enumerateObjects with a filter', () => {
  let sandbox: GitSandbox;
  let repo: string;
  beforeAll(async () => {
    sandbox = await createGitSandbox();
    repo = await filterTestRepository(sandbox);
  });
  afterAll(async () => {
    await sandbox.cleanup();
  });

  it('sends what git rev-list --objects --filter lists, named objects included', async () => {
    const store = new FsObjectStore(nodeFs, `${repo}/.git`);
    const wants = (await sandbox.git(['rev-parse', 'HEAD', 'v1'], { cwd: repo })).split('\n');
    for (const spec of SPECS) {
      const listed = (await sandbox.git(['rev-list', '--objects', '--all', `--filter=${spec}`], { cwd: repo }))
        .split('\n')
        .filter(Boolean)
        .map((line) => line.slice(0, 40));
      const e = await enumerateObjects(store, { wants, filter: parseObjectFilter(spec) });
      const sent = e.objects.map((o) => o.oid);
      expect([spec, sent.length]).toEqual([spec, new Set(sent).size]);
      expect([spec, [...sent].sort()]).toEqual([spec, [...new Set(listed)].sort()]);
    }
    await store.close();
  });

  it('always sends a wanted blob or tree, and nothing the receiver has', async () => {
    const store = new FsObjectStore(nodeFs, `${repo}/.git`);
    const [blob, tree, first, head] = (
      await sandbox.git(['rev-parse', 'HEAD:big.bin', 'HEAD:a', 'HEAD~1', 'HEAD'], { cwd: repo })
    ).split('\n') as [string, string, string, string];
    const lazy = await enumerateObjects(store, { wants: [blob, tree], filter: parseObjectFilter('blob:none') });
    // the tree's own walk is filtered (its subtrees, none of its blobs); the named blob is sent
    const treeObjects = (await sandbox.git(['rev-list', '--objects', '--filter=blob:none', tree], { cwd: repo }))
      .split('\n')
      .map((l) => l.slice(0, 40));
    expect(treeObjects.length).toBeGreaterThan(2);
    expect(lazy.objects.map((o) => o.oid).sort()).toEqual([blob, ...new Set(treeObjects)].sort());
    const incremental = await enumerateObjects(store, {
      wants: [head],
      haves: [first],
      filter: parseObjectFilter('tree:1'),
    });
    const expected = (await sandbox.git(['rev-list', '--objects', '--filter=tree:1', head, `^${first}`], { cwd: repo }))
      .split('\n')
      .map((l) => l.slice(0, 40));
    expect(incremental.objects.map((o) => o.oid).sort()).toEqual([...new Set(expected)].sort());
    expect(incremental.edges).toEqual([]);
    await store.close();
  });

  it('refuses sparse:oid', async () => {
    const store = new FsObjectStore(nodeFs, `${repo}/.git`);
    const head = await sandbox.git(['rev-parse', 'HEAD'], { cwd: repo });
    await expect(
      enumerateObjects(store, { wants: [head], filter: parseObjectFilter(`sparse:oid=${head}`) }),
    ).rejects.toMatchObject({ code: 'FILTER_UNSUPPORTED' });
    await store.close();
  });
});
