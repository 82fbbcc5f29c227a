import { encodeText, FLUSH } from '@gitport/pktline';
import { describe, expect, it } from 'vitest';
import { concatBytes, type Repository } from './connection.js';
import type { FilterPolicy } from './filter-request.js';
import { advertiseRefsHttp, handleUploadPackHttp } from './http.js';
import { chain, emptyRepo, text } from './test-repo.js';

const line = (s: string) => encodeText(`${s}\n`);

async function repository(): Promise<{ repo: Repository; tip: string }> {
  const repo = emptyRepo();
  const commits = await chain(repo, 3);
  await repo.refs.update([{ name: 'refs/heads/main', old: null, new: commits[2]! }]);
  return { repo, tip: commits[2]! };
}

/** One stateless v0 request with `filter <spec>` lines; the reply as text and the server's error. */
async function v0Request(repo: Repository, tip: string, specs: string[], policy: FilterPolicy = {}) {
  const body = concatBytes([
    line(`want ${tip} multi_ack_detailed side-band-64k ofs-delta filter`),
    ...specs.map((s) => line(`filter ${s}`)),
    FLUSH,
    line('done'),
  ]);
  const handled = handleUploadPackHttp(
    repo,
    (async function* () {
      yield body;
    })(),
    { protocol: 0, ...policy },
  );
  const parts: Uint8Array[] = [];
  for await (const chunk of handled.body) parts.push(chunk);
  const error = await handled.done.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { reply: text(concatBytes(parts)), error };
}

describe('filter requests', () => {
  it('are advertised unless allowFilter is false, in v0 and v2', async () => {
    const { repo } = await repository();
    const v0 = text((await advertiseRefsHttp(repo, 'git-upload-pack')).body);
    expect(v0).toMatch(/\0[^\n]*\bfilter\b/);
    const v2 = text((await advertiseRefsHttp(repo, 'git-upload-pack', { protocol: 2 })).body);
    expect(v2).toMatch(/fetch=shallow wait-for-done filter\n/);
    const off0 = text((await advertiseRefsHttp(repo, 'git-upload-pack', { allowFilter: false })).body);
    expect(off0).not.toMatch(/\bfilter\b/);
    const off2 = text((await advertiseRefsHttp(repo, 'git-upload-pack', { protocol: 2, allowFilter: false })).body);
    expect(off2).toMatch(/fetch=shallow wait-for-done\n/);
  });

  it('send a pack for an allowed filter', async () => {
    const { repo, tip } = await repository();
    const { reply, error } = await v0Request(repo, tip, ['blob:none']);
    expect(error).toBeUndefined();
    expect(reply).toContain('PACK');
  });

  it('refuse what the policy or git refuses, with ERR and a typed error', async () => {
    const { repo, tip } = await repository();
    const cases: [string[], FilterPolicy, RegExp][] = [
      [['blob:none'], { allowFilter: false }, /filtering capability not negotiated/],
      [['blob:none', 'blob:none'], {}, /multiple filter-specs cannot be combined/],
      [['blob:limit=x'], {}, /invalid filter-spec 'blob:limit=x'/],
      [['tree:0'], { allowedFilters: ['blob:none'] }, /filter 'tree' not supported/],
      [['combine:blob:none+tree:5'], { maxTreeDepth: 2 }, /tree filter allows max depth 2, but got 5/],
      [[`sparse:oid=${tip}`], {}, /filter 'sparse:oid' not supported/],
      [[`sparse:oid=${tip}`], { allowedFilters: ['sparse:oid'] }, /filter 'sparse:oid' not supported/],
    ];
    for (const [specs, policy, message] of cases) {
      const { reply, error } = await v0Request(repo, tip, specs, policy);
      expect([specs, reply]).toEqual([specs, expect.stringMatching(new RegExp(`ERR .*${message.source}`))]);
      expect(error).toMatchObject({ code: 'PROTOCOL_BAD_LINE' });
    }
  });
});
