import {
  hashObject,
  type ObjectId,
  type ObjectType,
  serializeCommit,
  serializeTree,
  type TreeEntry,
} from '@gitport/pack';
import { describe, expect, it } from 'vitest';
import { listFiles } from './commit-files.js';
import { type HeadView, headViewCollector } from './head-view.js';

const encoder = new TextEncoder();
const person = { name: 'A', email: 'a@example.com', timestamp: 1_700_000_000, timezone: '+0000' };

/** A small history's objects: HEAD's commit, its trees and blobs, and an older commit's tree. */
async function history() {
  const objects = new Map<ObjectId, { type: ObjectType; data: Uint8Array }>();
  const put = async (type: ObjectType, data: Uint8Array) => {
    const oid = await hashObject(type, data);
    objects.set(oid, { type, data });
    return oid;
  };
  const blob = (text: string) => put('blob', encoder.encode(text));
  const tree = (entries: TreeEntry[]) => put('tree', serializeTree(entries));
  const deep = await tree([{ name: 'c.txt', mode: '100644', type: 'blob', oid: await blob('c') }]);
  const dir = await tree([
    { name: 'b.txt', mode: '100644', type: 'blob', oid: await blob('b') },
    { name: 'deep', mode: '40000', type: 'tree', oid: deep },
  ]);
  const root = await tree([
    { name: 'a.txt', mode: '100644', type: 'blob', oid: await blob('a') },
    { name: 'dir', mode: '40000', type: 'tree', oid: dir },
  ]);
  const old = await tree([{ name: 'a.txt', mode: '100644', type: 'blob', oid: await blob('old') }]);
  const commit = (tree: ObjectId, parents: ObjectId[]) =>
    put(
      'commit',
      serializeCommit({ tree, parents, author: person, committer: person, extraHeaders: [], message: 'm\n' }),
    );
  const first = await commit(old, []);
  const head = await commit(root, [first]);
  return { objects, head, first, root, dir, deep, old };
}

describe('headViewCollector', () => {
  it("hands over HEAD's trees once the last came, whatever their order, copies kept", async () => {
    const h = await history();
    const views: HeadView[] = [];
    const collector = headViewCollector((view) => views.push(view));
    collector.onRefs(
      [
        { name: 'HEAD', oid: h.head },
        { name: 'refs/heads/main', oid: h.head },
        { name: 'refs/heads/old', oid: h.first },
      ],
      'refs/heads/main',
    );
    // the deepest tree before its parent (kept ahead), an unrelated tree, the root last
    const order = [h.first, h.deep, h.old, h.head, h.dir];
    for (const oid of order) {
      const { type, data } = h.objects.get(oid)!;
      // a lent buffer: the collector must copy what it keeps
      const lent = data.slice();
      collector.onObject(oid, type, lent);
      lent.fill(0);
    }
    expect(views).toEqual([]);
    const root = h.objects.get(h.root)!;
    collector.onObject(h.root, root.type, root.data);
    expect(views).toHaveLength(1);
    const view = views[0]!;
    expect(view.early).toBe(true);
    expect(view.head).toBe(h.head);
    expect(view.paths).toEqual(['a.txt', 'dir/b.txt', 'dir/deep/c.txt']);
    expect(await listFiles(view, 'HEAD')).toEqual(view.paths);
    expect(await view.refs.resolve('refs/heads/old')).toBe(h.first);
    expect(await view.objects.has(h.old)).toBe(false);
    // once handed over, nothing more is taken, and the finished clone is not handed over again
    await collector.finish({ objects: view.objects, refs: view.refs });
    expect(views).toHaveLength(1);
  });

  it('without the trees in the pack, hands over the finished clone', async () => {
    const h = await history();
    const views: HeadView[] = [];
    const collector = headViewCollector((view) => views.push(view), 0);
    collector.onRefs([{ name: 'refs/heads/main', oid: h.head }], 'refs/heads/main');
    // the subtree comes first and the budget keeps nothing ahead: the early view cannot complete
    for (const oid of [h.deep, h.head, h.root, h.dir]) {
      const { type, data } = h.objects.get(oid)!;
      collector.onObject(oid, type, data);
    }
    expect(views).toEqual([]);
    // the finished clone: here a view made by a collector that got every object in order
    let done: HeadView | undefined;
    const full = headViewCollector((view) => {
      done = view;
    });
    full.onRefs([{ name: 'refs/heads/main', oid: h.head }], 'refs/heads/main');
    for (const oid of [h.head, h.root, h.dir, h.deep]) {
      const { type, data } = h.objects.get(oid)!;
      full.onObject(oid, type, data);
    }
    await collector.finish({ objects: done!.objects, refs: done!.refs });
    expect(views).toHaveLength(1);
    expect(views[0]!.early).toBe(false);
    expect(views[0]!.objects).toBe(done!.objects);
    expect(views[0]!.paths).toEqual(['a.txt', 'dir/b.txt', 'dir/deep/c.txt']);
  });
});
