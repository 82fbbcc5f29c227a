import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsObjectStore, parseCommit, parseTag } from '@gitport/pack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitGraph } from './commit-graph.js';

describe('CommitGraph reads commits and tags as the pack package parses them', () => {
  let dir: string;
  const git = (args: string[], input?: string) =>
    execFileSync('git', args, {
      cwd: dir,
      input,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: 'a',
        GIT_AUTHOR_EMAIL: 'a@example.invalid',
        GIT_COMMITTER_NAME: 'a',
        GIT_COMMITTER_EMAIL: 'a@example.invalid',
        GIT_COMMITTER_DATE: '1700000000 +0100',
      },
    }).trim();
  let before: string;
  let after: string;
  let tag: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gitport-commit-graph-'));
    git(['init', '-q', '--bare', '.']);
    const tree = git(['mktree'], '');
    // a commit from before the epoch (git commit refuses such dates; hash-object writes it as given)
    before = git(
      ['hash-object', '-t', 'commit', '-w', '--stdin'],
      `tree ${tree}\nauthor A <a@example.invalid> -100 +0000\ncommitter C <c@example.invalid> -100 -0130\n\nbefore the epoch\n`,
    );
    after = git(['commit-tree', tree, '-p', before, '-m', 'after']);
    // git tag reads the commit's date unsigned and refuses it: the tag is written as given too
    tag = git(
      ['hash-object', '-t', 'tag', '-w', '--stdin'],
      `object ${before}\ntype commit\ntag v1\ntagger T <t@example.invalid> 1700000000 +0000\n\na tag\n`,
    );
    git(['update-ref', 'refs/tags/v1', tag]);
    git(['update-ref', 'refs/heads/main', after]);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const packed of [false, true]) {
    it(`a commit with a negative timestamp, and a tag of it (${packed ? 'packed' : 'loose'})`, async () => {
      if (packed) git(['repack', '-adq']);
      const store = new FsObjectStore(nodeFs, dir);
      try {
        const graph = new CommitGraph(store);
        const data = (await store.read(before))!.data;
        const commit = parseCommit(data);
        expect(commit.committer.timestamp).toBe(-100);
        expect(await graph.commit(before)).toEqual({
          oid: before,
          tree: commit.tree,
          parents: [],
          time: commit.committer.timestamp,
        });
        expect(await graph.commit(after)).toMatchObject({ parents: [before], time: 1_700_000_000 });
        // newest first: the commit after the epoch, then the one before it
        const order: string[] = [];
        await graph.walk([after], (c) => {
          order.push(c.oid);
        });
        expect(order).toEqual([after, before]);
        expect(parseTag((await store.read(tag))!.data).object).toBe(before);
        expect(await graph.peel(tag)).toEqual({ oid: before, type: 'commit' });
        expect(await graph.peelTag(tag)).toBe(before);
      } finally {
        await store.close();
      }
    });
  }

  it('reachableFrom walks for commits only: a tree target does not walk the history', async () => {
    const store = new FsObjectStore(nodeFs, dir);
    try {
      const tree = parseCommit((await store.read(after))!.data).tree;
      const reads: string[] = [];
      const counting = new Proxy(store, {
        get(target, key) {
          const value = Reflect.get(target, key, target);
          if (key !== 'read' || typeof value !== 'function')
            return typeof value === 'function' ? value.bind(target) : value;
          return (oid: string) => {
            reads.push(oid);
            return value.call(target, oid);
          };
        },
      });
      const graph = new CommitGraph(counting);
      // a tree (even one the tip points at) is no commit on the walk: not found, `before` not read
      expect(await graph.reachableFrom([tree], [after])).toEqual(new Set());
      expect(reads).not.toContain(before);
      // with a commit among the targets the walk goes on until it is found
      expect(await graph.reachableFrom([tree, before], [after])).toEqual(new Set([before]));
      // the tag is a target only as a tip
      expect(await graph.reachableFrom([tag], [after])).toEqual(new Set());
      expect(await graph.reachableFrom([tag], [tag])).toEqual(new Set([tag]));
    } finally {
      await store.close();
    }
  });

  it('refuses a malformed commit or tag with PROTOCOL_BAD_OBJECT', async () => {
    const store = new FsObjectStore(nodeFs, dir);
    try {
      const badCommit = await store.write('commit', new TextEncoder().encode('no tree here\n'));
      const badTag = await store.write('tag', new TextEncoder().encode('object nonsense\n'));
      const graph = new CommitGraph(store);
      await expect(graph.commit(badCommit)).rejects.toMatchObject({ code: 'PROTOCOL_BAD_OBJECT' });
      await expect(graph.peel(badTag)).rejects.toMatchObject({ code: 'PROTOCOL_BAD_OBJECT' });
    } finally {
      await store.close();
    }
  });
});
