import { MemoryObjectStore } from '@gitport/pack';
import { PacketReader } from '@gitport/pktline';
import { createGitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AdvertisedRef,
  collectRefs,
  decodeAdvertisement,
  encodeAdvertisementV0,
  encodeCapabilitiesV2,
  encodeLsRefs,
  parseLsRefsLine,
} from './advertisement.js';
import { Capabilities, uploadPackCapabilities, v2Capabilities } from './capabilities.js';
import { CommitGraph } from './commit-graph.js';
import { MemoryRefStore } from './ref-store.js';
import { matchRefspec, parseRefspec } from './refspec.js';
import { countingRefs } from './test-repo.js';

function chunked(bytes: Uint8Array, cut: number[]): AsyncIterable<Uint8Array> {
  return (async function* () {
    let at = 0;
    for (const c of [...cut].sort((a, b) => a - b)) {
      if (c <= at || c >= bytes.length) continue;
      yield bytes.subarray(at, c);
      at = c;
    }
    yield bytes.subarray(at);
  })();
}

const decode = (bytes: Uint8Array, cut: number[] = []) => decodeAdvertisement(new PacketReader(chunked(bytes, cut)));

describe('advertisement', () => {
  it("re-encodes real git's upload-pack and receive-pack advertisements byte for byte", async () => {
    await using sandbox = await createGitSandbox('gitport-adv-');
    const work = sandbox.path('w');
    await sandbox.git(['init', '-q', work]);
    await sandbox.exec(
      'sh',
      ['-c', 'echo a > a && git add a && git commit -qm one && git tag -a v1 -m v1 && git tag light && git branch b'],
      { cwd: work },
    );
    for (const service of ['upload-pack', 'receive-pack']) {
      const { stdout } = await sandbox.run([service, '--advertise-refs', `${work}/.git`]);
      const adv = await decode(stdout);
      expect(adv.version).toBe(0);
      if (adv.version === 2) continue;
      expect(encodeAdvertisementV0(adv.refs, adv.capabilities)).toEqual(stdout);
      if (service === 'upload-pack') {
        expect(adv.symrefs.get('HEAD')).toBe('refs/heads/main');
        expect(adv.refs.find((r) => r.name === 'refs/tags/v1')?.peeled).toMatch(/^[0-9a-f]{40}$/);
      }
    }
    const empty = sandbox.path('e.git');
    await sandbox.git(['init', '-q', '--bare', empty]);
    const { stdout } = await sandbox.run(['receive-pack', '--advertise-refs', empty]);
    const adv = await decode(stdout);
    expect(adv).toMatchObject({ version: 0, refs: [] });
    if (adv.version !== 2) expect(encodeAdvertisementV0([], adv.capabilities)).toEqual(stdout);
  });

  it('round-trips at every chunking (seeded)', async () => {
    const hex = fc.stringMatching(/^[0-9a-f]{40}$/);
    const ref = fc.record({
      name: fc.stringMatching(/^refs\/(heads|tags)\/[a-z0-9][a-z0-9/_-]{0,20}[a-z0-9]$/),
      oid: hex,
      peeled: fc.option(hex, { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(ref, { selector: (r) => r.name, maxLength: 20 }),
        fc.array(fc.nat(4000)),
        async (refs, cuts) => {
          const list: AdvertisedRef[] = refs.map((r) =>
            r.peeled ? { name: r.name, oid: r.oid, peeled: r.peeled } : { name: r.name, oid: r.oid },
          );
          const caps = uploadPackCapabilities({
            stateless: true,
            agent: 'gitport/test',
            symrefs: new Map([['HEAD', 'refs/heads/main']]),
          });
          const bytes = encodeAdvertisementV0(list, caps, {
            service: 'git-upload-pack',
            shallow: refs.slice(0, 1).map((r) => r.oid),
          });
          const adv = await decode(bytes, cuts);
          if (adv.version === 2) throw new Error('v2');
          expect(adv.refs).toEqual(list);
          expect(adv.capabilities.toString()).toBe(caps.toString());
          expect(adv.shallow).toEqual(refs.slice(0, 1).map((r) => r.oid));
        },
      ),
      { seed: 6, numRuns: 100 },
    );
  });

  it('decodes the v2 capability advertisement with or without the # service prefix', async () => {
    const caps = v2Capabilities({ agent: 'gitport/test' });
    for (const bytes of [encodeCapabilitiesV2(caps), encodeCapabilitiesV2(caps, { service: 'git-upload-pack' })]) {
      const adv = await decode(bytes);
      expect(adv.version).toBe(2);
      expect(adv.capabilities.features('fetch')).toEqual(new Set(['shallow', 'wait-for-done', 'filter']));
      expect(adv.capabilities.get('ls-refs')).toBe('unborn');
    }
  });

  it('rejects malformed advertisements with typed errors', async () => {
    const enc = new TextEncoder();
    const cases = [
      enc.encode('0010nothing here0000'),
      enc.encode(`003b${'z'.repeat(40)} refs/heads/main\n0000`),
      enc.encode(`0032${'a'.repeat(40)} refs/x^{}\n0000`),
      enc.encode(`0030${'a'.repeat(40)} refs/heads/main`), // truncated
    ];
    for (const bytes of cases) {
      await expect(decode(bytes)).rejects.toMatchObject({ code: expect.stringMatching(/^(PROTOCOL|PKTLINE)_/) });
    }
  });

  it('ls-refs lines round-trip', async () => {
    const refs: AdvertisedRef[] = [
      { name: 'HEAD', oid: 'a'.repeat(40), target: 'refs/heads/main' },
      { name: 'refs/tags/v1', oid: 'b'.repeat(40), peeled: 'c'.repeat(40) },
    ];
    const bytes = encodeLsRefs(refs, { symrefs: true, peel: true, unbornHead: 'refs/heads/x' });
    const reader = new PacketReader(chunked(bytes, []));
    const lines: string[] = [];
    for (let p = await reader.read(); p && p.kind === 'data'; p = await reader.read()) {
      lines.push(new TextDecoder().decode(p.payload));
    }
    expect(parseLsRefsLine(lines[0]!.trimEnd())).toMatchObject({ unborn: true, name: 'HEAD', target: 'refs/heads/x' });
    expect(parseLsRefsLine(lines[1]!.trimEnd())).toEqual(refs[0]);
    expect(parseLsRefsLine(lines[2]!.trimEnd())).toEqual(refs[1]);
    expect(() => parseLsRefsLine('nope')).toThrow(expect.objectContaining({ code: 'PROTOCOL_BAD_LINE' }));
  });

  it('capability lists keep order and repeated names', () => {
    const caps = Capabilities.parse('multi_ack symref=HEAD:refs/heads/main symref=refs/x:refs/y agent=git/2.39');
    expect(caps.getAll('symref')).toEqual(['HEAD:refs/heads/main', 'refs/x:refs/y']);
    expect(caps.toString()).toBe('multi_ack symref=HEAD:refs/heads/main symref=refs/x:refs/y agent=git/2.39');
  });
});

describe('collectRefs', () => {
  const a = 'a'.repeat(40);
  const b = 'b'.repeat(40);
  const graph = () => new CommitGraph(new MemoryObjectStore());

  it('resolves a symbolic HEAD from the listing, and falls back to following it', async () => {
    const listed = countingRefs(new MemoryRefStore({ refs: { 'refs/heads/main': a, 'refs/heads/b': b } }));
    const got = await collectRefs(listed.refs, graph(), { peel: false });
    expect(got.refs).toEqual([
      { name: 'HEAD', oid: a, target: 'refs/heads/main' },
      { name: 'refs/heads/b', oid: b },
      { name: 'refs/heads/main', oid: a },
    ]);
    expect(got.symrefs.get('HEAD')).toBe('refs/heads/main');
    expect(got.listed.map((r) => r.name)).toEqual(['refs/heads/b', 'refs/heads/main']);
    expect(listed.calls).toEqual({ read: 1, resolve: 0, list: 1 });

    // HEAD -> a symbolic ref -> a branch: not in the listing, followed
    const nested = new MemoryRefStore({ refs: { 'refs/heads/main': a }, head: 'refs/heads/alias' });
    await nested.setSymbolic('refs/heads/alias', 'refs/heads/main');
    const followed = countingRefs(nested);
    const viaAlias = await collectRefs(followed.refs, graph(), { peel: false });
    expect(viaAlias.refs[0]).toEqual({ name: 'HEAD', oid: a, target: 'refs/heads/alias' });
    expect(followed.calls.resolve).toBe(1);

    // HEAD -> a branch that does not exist: unborn, not advertised
    const unborn = await collectRefs(new MemoryRefStore({ refs: { 'refs/heads/b': b } }), graph(), { peel: false });
    expect(unborn.unbornHead).toBe('refs/heads/main');
    expect(unborn.refs.map((r) => r.name)).toEqual(['refs/heads/b']);
  });

  it('takes a listing given instead of listing again (and with head: false reads no HEAD)', async () => {
    const { refs, calls } = countingRefs(new MemoryRefStore({ refs: { 'refs/heads/main': a } }));
    const got = await collectRefs(refs, graph(), { head: false, listed: [{ name: 'refs/heads/old', oid: b }] });
    expect(got.refs).toEqual([{ name: 'refs/heads/old', oid: b }]);
    expect(calls).toEqual({ read: 0, resolve: 0, list: 0 });
  });
});

describe('refspecs', () => {
  it('match with one wildcard and map to the destination', () => {
    const spec = parseRefspec('+refs/heads/*:refs/remotes/origin/*');
    expect(spec.force).toBe(true);
    expect(matchRefspec(spec, 'refs/heads/feature/x')).toEqual({ dst: 'refs/remotes/origin/feature/x' });
    expect(matchRefspec(spec, 'refs/tags/v1')).toBeUndefined();
    expect(matchRefspec(parseRefspec('refs/heads/main'), 'refs/heads/main')).toEqual({});
    expect(() => parseRefspec('refs/*/a/*:x')).toThrow(expect.objectContaining({ code: 'PROTOCOL_BAD_REFSPEC' }));
  });
});
