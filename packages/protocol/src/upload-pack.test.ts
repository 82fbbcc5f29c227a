import type { ObjectStore } from '@gitport/pack';
import { DELIM, encodeText, FLUSH, PacketReader } from '@gitport/pktline';
import { describe, expect, it } from 'vitest';
import { connectionPair } from './channel.js';
import { type Connection, concatBytes, type Repository } from './connection.js';
import { clone, fetch, lsRemote } from './fetch-client.js';
import { handleUploadPackHttp } from './http.js';
import {
  annotatedTag,
  chain,
  commit,
  countingRefs,
  emptyRepo,
  packOf,
  readAll,
  type TestRepo,
  text,
} from './test-repo.js';
import { serveUploadPack } from './upload-pack.js';

async function server(): Promise<{ repo: TestRepo; commits: string[]; tag: string }> {
  const repo = emptyRepo();
  const commits = await chain(repo, 6);
  const tag = await annotatedTag(repo, commits[2]!, 'v1');
  await repo.refs.update([
    { name: 'refs/heads/main', old: null, new: commits[5]! },
    { name: 'refs/tags/v1', old: null, new: tag },
  ]);
  return { repo, commits, tag };
}

async function packets(bytes: Uint8Array): Promise<string[]> {
  const reader = new PacketReader(
    (async function* () {
      yield bytes;
    })(),
  );
  const out: string[] = [];
  for (;;) {
    const p = await reader
      .read()
      .catch((e: { code?: string; message: string }) => ({ kind: `error ${e.code}: ${e.message}` }) as const);
    if (!p) break;
    if (p.kind.startsWith('error')) {
      out.push(p.kind);
      break;
    }
    out.push(p.kind === 'data' && 'payload' in p ? text(p.payload).trimEnd() : p.kind);
  }
  return out;
}

/** `conn` noting each `write` and `flush` in `events`, in order. */
function recording(conn: Connection, events: string[]): Connection {
  return {
    ...conn,
    write: (bytes, options) => {
      events.push('write');
      return conn.write(bytes, options);
    },
    flush: () => {
      events.push('flush');
      conn.flush?.();
    },
  };
}

async function stateless(repo: Repository, body: Uint8Array, protocol: 0 | 2 = 0) {
  const handled = handleUploadPackHttp(
    repo,
    (async function* () {
      yield body;
    })(),
    { protocol },
  );
  const parts: Uint8Array[] = [];
  for await (const chunk of handled.body) parts.push(chunk);
  const outcome = await handled.done.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { bytes: concatBytes(parts), outcome };
}

const line = (s: string) => encodeText(`${s}\n`);

describe('upload-pack', () => {
  it('a want that is not ours gets ERR and a typed error', async () => {
    const { repo } = await server();
    const { bytes, outcome } = await stateless(
      repo,
      concatBytes([line(`want ${'1'.repeat(40)} multi_ack_detailed`), FLUSH, line('done')]),
    );
    expect(outcome).toMatchObject({ code: 'PROTOCOL_NOT_OUR_REF' });
    expect(await packets(bytes)).toEqual([
      `error PKTLINE_REMOTE_ERROR: remote error: upload-pack: not our ref ${'1'.repeat(40)}`,
    ]);
  });

  it('accepts a want that is reachable from a ref but no longer a tip (refs moved between GET and POST)', async () => {
    const { repo, commits } = await server();
    const { bytes, outcome } = await stateless(
      repo,
      concatBytes([line(`want ${commits[3]} multi_ack_detailed no-done`), FLUSH, line('done')]),
    );
    expect(outcome).toBeUndefined();
    const lines = await packets(bytes);
    expect(lines[0]).toBe('NAK');
    expect(text(concatBytes([bytes])).includes('PACK')).toBe(true);
  });

  it('rejects malformed requests with typed errors', async () => {
    const { repo, commits } = await server();
    for (const [body, code] of [
      [concatBytes([line('want nothex'), FLUSH]), 'PROTOCOL_BAD_LINE'],
      [concatBytes([line(`want ${commits[5]}`), line('bogus'), FLUSH]), 'PROTOCOL_BAD_LINE'],
      [concatBytes([line(`want ${commits[5]}`), line('deepen 0'), FLUSH]), 'PROTOCOL_BAD_LINE'],
      [concatBytes([line(`want ${commits[5]}`), FLUSH, line('have zz'), FLUSH]), 'PROTOCOL_BAD_LINE'],
    ] as const) {
      const { outcome, bytes } = await stateless(repo, body);
      expect(outcome, text(body)).toMatchObject({ code });
      expect((await packets(bytes)).at(-1)).toMatch(/^error PKTLINE_REMOTE_ERROR/);
    }
  });

  it('bounds the number of wants', async () => {
    const { repo, commits } = await server();
    const body = concatBytes([...commits.map((c) => line(`want ${c}`)), FLUSH, line('done')]);
    const handled = handleUploadPackHttp(
      repo,
      (async function* () {
        yield body;
      })(),
      { limits: { maxWants: 3 } },
    );
    for await (const _ of handled.body);
    await expect(handled.done).rejects.toMatchObject({ code: 'PROTOCOL_LIMIT' });
  });

  it('multi_ack_detailed: ACK common, ready, NAK, then the final ACK and the pack (stateful)', async () => {
    const { repo, commits } = await server();
    const [client, host] = connectionPair();
    const served = serveUploadPack(repo, host, { advertise: false });
    const response = readAll(client);
    await client.write(concatBytes([line(`want ${commits[5]} multi_ack_detailed side-band-64k ofs-delta`), FLUSH]));
    await client.write(concatBytes([line(`have ${commits[4]}`), line(`have ${'2'.repeat(40)}`), FLUSH]));
    await client.write(line('done'));
    await client.end();
    await served;
    const lines = await packets(await response);
    // as upload-pack.c: `ready` rides on the first unknown have once every want reaches a common commit
    expect(lines.slice(0, 4)).toEqual([
      `ACK ${commits[4]} common`,
      `ACK ${'2'.repeat(40)} ready`,
      'NAK',
      `ACK ${commits[4]}`,
    ]);
    expect(lines[4]?.startsWith('\x01PACK')).toBe(true);
  });

  it('v2 in stateless mode never sends response-end, and answers ls-refs with peeled tags and symrefs', async () => {
    const { repo, commits, tag } = await server();
    const request = concatBytes([
      line('command=ls-refs'),
      line('agent=test'),
      new TextEncoder().encode('0001'),
      line('peel'),
      line('symrefs'),
      FLUSH,
    ]);
    const { bytes, outcome } = await stateless(repo, request, 2);
    expect(outcome).toBeUndefined();
    expect(await packets(bytes)).toEqual([
      `${commits[5]} HEAD symref-target:refs/heads/main`,
      `${commits[5]} refs/heads/main`,
      `${tag} refs/tags/v1 peeled:${commits[2]}`,
      'flush',
    ]);
    expect(await packets(bytes)).not.toContain('response-end');
  });

  it('gitport client and server: clone with tags, ls-remote, fetch of nothing new', async () => {
    const { repo, tag } = await server();
    for (const protocol of [0, 2] as const) {
      const local = emptyRepo();
      const [a, b] = connectionPair();
      const served = serveUploadPack(repo, b, { protocol });
      const result = await clone(local, { connection: a }, { protocol });
      await served;
      expect(await local.refs.list()).toEqual(await repo.refs.list());
      expect(await local.objects.has(tag)).toBe(true);
      expect(result.head).toBe('refs/heads/main');
      const [c, d] = connectionPair();
      const served2 = serveUploadPack(repo, d, { protocol });
      const again = await fetch(local, { connection: c }, { protocol, refspecs: ['+refs/heads/*:refs/heads/*'] });
      await served2;
      expect(again.pack).toBeUndefined();
      expect(again.updates).toEqual([]);
      const [e, f] = connectionPair();
      const served3 = serveUploadPack(repo, f, { protocol });
      const listed = await lsRemote({ connection: e }, { protocol });
      await served3;
      expect(listed.refs.map((r) => r.name)).toEqual(['HEAD', 'refs/heads/main', 'refs/tags/v1']);
    }
  });

  it('a connection lists the refs once: its fetch checks wants against what it listed, and lists again only for a want beyond it', async () => {
    const { repo, commits } = await server();
    // every listing the server makes, and the refs moved after the first one
    const refs = repo.refs;
    const { refs: countedRefs, calls } = countingRefs(refs);
    const counted: Repository = { ...repo, refs: countedRefs };
    for (const protocol of [0, 2] as const) {
      calls.list = 0;
      const [a, b] = connectionPair();
      const served = serveUploadPack(counted, b, { protocol });
      const local = emptyRepo();
      await clone(local, { connection: a }, { protocol });
      await served;
      expect(calls.list, `protocol ${protocol}`).toBe(1);
      expect(await local.refs.resolve('refs/heads/main')).toBe(commits[5]);
    }
    // a want of a tip the connection listed is served after the ref moved on meanwhile (as git
    // v0 checks wants against its advertisement); a want beyond what it listed (a branch made
    // since) is checked against the refs as they are now; a new connection checks them anew
    calls.list = 0;
    const [a, b] = connectionPair();
    const served = serveUploadPack(counted, b, { protocol: 2 });
    const reader = new PacketReader(a.input);
    const untilFlush = async () => {
      const out: string[] = [];
      for (let p = await reader.read(); p && p.kind !== 'flush'; p = await reader.read()) {
        out.push(p.kind === 'data' ? text(p.payload).trimEnd() : p.kind);
      }
      return out;
    };
    expect(await untilFlush()).toContain('version 2');
    await a.write(concatBytes([line('command=ls-refs'), FLUSH]));
    expect(await untilFlush()).toContain(`${commits[5]} refs/heads/main`);
    await refs.update([{ name: 'refs/heads/main', old: commits[5]!, new: commits[0]! }]);
    await a.write(concatBytes([line('command=fetch'), DELIM, line(`want ${commits[5]}`), line('done'), FLUSH]));
    expect((await untilFlush())[0]).toBe('packfile');
    expect(calls.list).toBe(1);
    const made = await commit(repo, [commits[5]!], 'made after the listing');
    await refs.update([{ name: 'refs/heads/new', old: null, new: made }]);
    await a.write(concatBytes([line('command=fetch'), DELIM, line(`want ${made}`), line('done'), FLUSH]));
    expect((await untilFlush())[0]).toBe('packfile');
    expect(calls.list).toBe(2);
    await a.end();
    await served;
    await refs.update([{ name: 'refs/heads/new', old: made, new: null }]);
    const fresh = await stateless(
      counted,
      concatBytes([line('command=fetch'), DELIM, line(`want ${commits[5]}`), line('done'), FLUSH]),
      2,
    );
    expect(fresh.outcome).toMatchObject({ code: 'PROTOCOL_NOT_OUR_REF' });
    expect(calls.list).toBe(3);
  });

  it('pipelineLsRefs: ls-refs goes out before the advertisement is read; a v0 answer is a typed error', async () => {
    const { repo } = await server();
    const [a, b] = connectionPair();
    const events: string[] = [];
    const served = serveUploadPack(repo, b, { protocol: 2 });
    const local = emptyRepo();
    const result = await clone(local, { connection: recording(a, events) }, { protocol: 2, pipelineLsRefs: true });
    await served;
    expect(result.version).toBe(2);
    expect(await local.refs.list()).toEqual(await repo.refs.list());
    // ls-refs, then fetch (with done): one round trip fewer than reading the advertisement first
    expect(events.filter((e) => e === 'write')).toHaveLength(2);
    const [c, d] = connectionPair();
    const old = serveUploadPack(repo, d, { protocol: 0 }).catch((e: unknown) => e);
    await expect(clone(emptyRepo(), { connection: c }, { pipelineLsRefs: true })).rejects.toMatchObject({
      code: 'PROTOCOL_UNEXPECTED',
    });
    await old;
  });

  it('a repository given as a function is made once the fetch request is written and flushed', async () => {
    const { repo } = await server();
    const [a, b] = connectionPair();
    const events: string[] = [];
    const served = serveUploadPack(repo, b, { protocol: 2 });
    const local = emptyRepo();
    const result = await clone(
      () => {
        events.push('create');
        return Promise.resolve(local);
      },
      { connection: recording(a, events) },
      { protocol: 2, pipelineLsRefs: true },
    );
    await served;
    expect(result.version).toBe(2);
    expect(await local.refs.list()).toEqual(await repo.refs.list());
    // ls-refs, then the fetch written and flushed, then the repository made
    expect(events).toEqual(['write', 'write', 'flush', 'create']);
  });

  it('include-tag: an annotated tag pointing into the pack is packed with it', async () => {
    const { repo, commits, tag } = await server();
    const local = emptyRepo();
    const [a, b] = connectionPair();
    const served = serveUploadPack(repo, b);
    await fetch(local, { connection: a }, { refspecs: ['refs/heads/main:refs/heads/main'], tags: 'follow' });
    await served;
    expect(await local.objects.has(tag)).toBe(true);
    expect(await local.refs.resolve('refs/tags/v1')).toBe(tag);
    expect(await local.objects.has(commits[0]!)).toBe(true);
  });

  it('a pack that fails mid-way reaches the client on side-band 3, and both sides get typed errors', async () => {
    const broken = emptyRepo();
    const encoder = new TextEncoder();
    // a commit whose tree is missing: wants validate, the pack cannot be written
    const commitId = await broken.objects.write(
      'commit',
      encoder.encode(`tree ${'4'.repeat(40)}\nauthor t <t@x> 1 +0000\ncommitter t <t@x> 1 +0000\n\nbroken\n`),
    );
    await broken.refs.update([{ name: 'refs/heads/main', old: null, new: commitId }]);
    for (const protocol of [0, 2] as const) {
      const [a, b] = connectionPair();
      const served = serveUploadPack(broken, b, { protocol }).then(
        () => undefined,
        (e: unknown) => e,
      );
      await expect(clone(emptyRepo(), { connection: a }, { protocol })).rejects.toMatchObject({
        code: 'PROTOCOL_REMOTE_ERROR',
      });
      expect(await served).toMatchObject({ code: expect.stringMatching(/NOT_FOUND|MISSING/) });
    }
  });

  it('with a write size, pack frames go out several to a buffer (handed over whole), progress in its place', async () => {
    const repo = emptyRepo();
    let seed = 7;
    const noise = (n: number) =>
      Array.from({ length: n }, () => {
        // xorshift32: incompressible enough that the pack spans many frames
        seed ^= seed << 13;
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        return String.fromCharCode(33 + ((seed >>> 24) % 90));
      }).join('');
    const commits = await chain(repo, 1);
    for (let i = 0; i < 4; i++) commits.push(await commit(repo, [commits.at(-1)!], noise(100_000), `f${i}`));
    await repo.refs.update([{ name: 'refs/heads/main', old: null, new: commits.at(-1)! }]);
    const run = async (protocol: 0 | 2, writeSize?: number) => {
      const [a, b] = connectionPair();
      const writes: { size: number; transfer: boolean }[] = [];
      const host = {
        input: b.input,
        end: () => b.end(),
        write: (bytes: Uint8Array, options?: { transfer?: boolean }) => {
          writes.push({ size: bytes.length, transfer: options?.transfer === true });
          return b.write(bytes);
        },
        ...(writeSize ? { writeSize } : {}),
      };
      const served = serveUploadPack(repo, host, { protocol, pack: { deltas: false } });
      const progress: string[] = [];
      const local = emptyRepo();
      const result = await clone(local, { connection: a }, { protocol, onProgress: (t) => progress.push(t) });
      await served;
      expect(await local.refs.list()).toEqual(await repo.refs.list());
      for (const c of commits) {
        expect(text((await local.objects.read(c))!.data)).toBe(text((await repo.objects.read(c))!.data));
      }
      return { result, writes: writes.filter((w) => w.transfer), progress };
    };
    for (const protocol of [0, 2] as const) {
      const one = await run(protocol);
      const size = 3 * 65_520 + 100;
      const grouped = await run(protocol, size);
      const frames = Math.ceil(one.result.pack!.bytes / 65_515);
      expect(one.result.pack!.bytes).toBeGreaterThan(4 * 65_515);
      expect(grouped.result.pack).toEqual(one.result.pack);
      expect(grouped.progress.join('')).toEqual(one.progress.join(''));
      expect(grouped.progress.join('')).toContain('Total');
      expect(one.writes.length).toBeGreaterThanOrEqual(frames);
      expect(grouped.writes.length).toBeLessThanOrEqual(Math.ceil(frames / 3) + 1);
      expect(Math.max(...grouped.writes.map((w) => w.size))).toBeLessThanOrEqual(size);
    }
  });

  it('a clone writes its refs through the initialize of the ref store, with the results of the update path', async () => {
    const { repo, commits } = await server();
    await repo.refs.update([{ name: 'refs/heads/side', old: null, new: commits[1]! }]);
    const calls: number[] = [];
    const withInitialize = () => {
      const local = emptyRepo();
      const refs = Object.assign(local.refs, {
        async initialize(list: readonly { name: string; oid: string }[]) {
          calls.push(list.length);
          if ((await local.refs.list()).length > 0) return false;
          await local.refs.update(list.map((r) => ({ name: r.name, old: null, new: r.oid })));
          return true;
        },
      });
      return { objects: local.objects, refs };
    };
    for (const protocol of [0, 2] as const) {
      const cloneInto = async (local: TestRepo | ReturnType<typeof withInitialize>) => {
        const [a, b] = connectionPair();
        const served = serveUploadPack(repo, b, { protocol });
        const result = await clone(local as TestRepo, { connection: a }, { protocol });
        await served;
        return { result, refs: await local.refs.list() };
      };
      const plain = await cloneInto(emptyRepo());
      const initialized = await cloneInto(withInitialize());
      expect(initialized.refs).toEqual(plain.refs);
      expect(initialized.refs).toEqual(await repo.refs.list());
      expect(initialized.result.updates).toEqual(plain.result.updates);
      expect(initialized.result.updates).toHaveLength(3);
    }
    expect(calls).toEqual([3, 3]);
  });

  it('a clone claims its refs (prepareInitialize) before the pack and commits them once the objects are stored; a failed one gives them up', async () => {
    const { repo, commits } = await server();
    const events: string[] = [];
    const withPrepare = () => {
      const local = emptyRepo();
      const objects = local.objects;
      const refs = Object.assign(local.refs, {
        async prepareInitialize(list: readonly { name: string; oid: string }[]) {
          // claimed before any object of the pack is stored
          events.push(`prepare ${list.length} with ${(await objects.has(commits[5]!)) ? 'objects' : 'no objects'}`);
          return {
            commit: async () => {
              events.push(`commit with ${(await objects.has(commits[5]!)) ? 'objects' : 'no objects'}`);
              await local.refs.update(list.map((r) => ({ name: r.name, old: null, new: r.oid })));
              return true;
            },
            abort: async () => {
              events.push('abort');
            },
          };
        },
      });
      return { objects, refs };
    };
    for (const protocol of [0, 2] as const) {
      events.length = 0;
      const [a, b] = connectionPair();
      const served = serveUploadPack(repo, b, { protocol });
      const local = withPrepare();
      const result = await clone(local as unknown as TestRepo, { connection: a }, { protocol });
      await served;
      expect(events).toEqual(['prepare 2 with no objects', 'commit with objects']);
      expect(await local.refs.list()).toEqual(await repo.refs.list());
      expect(result.updates).toEqual([
        { name: 'refs/heads/main', status: 'ok', old: null, new: commits[5] },
        { name: 'refs/tags/v1', status: 'ok', old: null, new: expect.any(String) },
      ]);
    }
    // the pack fails after the refs were claimed: they are given up, none appears
    const broken = emptyRepo();
    const commitId = await broken.objects.write(
      'commit',
      new TextEncoder().encode(`tree ${'4'.repeat(40)}\nauthor t <t@x> 1 +0000\ncommitter t <t@x> 1 +0000\n\nbroken\n`),
    );
    await broken.refs.update([{ name: 'refs/heads/main', old: null, new: commitId }]);
    events.length = 0;
    const [a, b] = connectionPair();
    const served = serveUploadPack(broken, b, { protocol: 2 }).catch((e: unknown) => e);
    const local = withPrepare();
    await expect(clone(local as unknown as TestRepo, { connection: a }, { protocol: 2 })).rejects.toMatchObject({
      code: 'PROTOCOL_REMOTE_ERROR',
    });
    await served;
    expect(events).toEqual(['prepare 1 with no objects', 'abort']);
    expect(await local.refs.list()).toEqual([]);
  });

  it('a clone into a store that refuses initialize (it holds refs) updates them like a fetch, from their current values', async () => {
    const { repo, commits } = await server();
    const prepared = async (initialize: boolean) => {
      const local = emptyRepo();
      const own = await chain(local, 2, undefined, 'own');
      await local.refs.update([
        { name: 'refs/heads/main', old: null, new: own[1]! },
        { name: 'refs/tags/v1', old: null, new: own[0]! },
      ]);
      let refused = 0;
      if (!initialize) return { local, refused: () => refused };
      const refs = Object.assign(local.refs, {
        async initialize() {
          refused++;
          return false;
        },
      });
      return { local: { objects: local.objects, refs }, refused: () => refused };
    };
    for (const initialize of [false, true]) {
      const { local, refused } = await prepared(initialize);
      const [a, b] = connectionPair();
      const served = serveUploadPack(repo, b);
      const result = await clone(local as TestRepo, { connection: a });
      await served;
      expect(refused()).toBe(initialize ? 1 : 0);
      // forced refspecs move main; the existing tag is a forced refspec target too (tags: all)
      expect(await local.refs.resolve('refs/heads/main')).toBe(commits[5]);
      expect(result.updates.map((u) => [u.name, u.status])).toEqual([
        ['refs/heads/main', 'ok'],
        ['refs/tags/v1', 'ok'],
      ]);
      expect(result.updates[0]).toMatchObject({ old: expect.any(String), new: commits[5] });
    }
  });

  it('a clone of wants whose objects are a stored pack reuses it, and the next clone asks for it without a walk', async () => {
    const { repo, commits, tag } = await server();
    const all = [...repo.objects.keys()];
    const stored = await packOf(repo.objects, all);
    let reads = 0;
    let findPacks = 0;
    let packThere = true;
    const objects: ObjectStore = {
      has: (oid) => repo.objects.has(oid),
      read: (oid) => {
        reads++;
        return repo.objects.read(oid);
      },
      write: (type, data) => repo.objects.write(type, data),
      async findPack(oids) {
        findPacks++;
        if (!packThere || oids.length !== all.length || !all.every((o) => oids.includes(o))) return undefined;
        return {
          ofsDeltas: false,
          async *stream() {
            yield stored.slice();
          },
        };
      },
    };
    const hosted = { objects, refs: repo.refs };
    const cloneOnce = async (protocol: 0 | 2) => {
      const [a, b] = connectionPair();
      const served = serveUploadPack(hosted, b, { protocol });
      const local = emptyRepo();
      const before = reads;
      const result = await clone(local, { connection: a }, { protocol });
      await served;
      expect(await local.refs.list()).toEqual(await repo.refs.list());
      for (const oid of [...commits, tag]) expect(await local.objects.has(oid)).toBe(true);
      return { result, reads: reads - before };
    };
    for (const protocol of [0, 2] as const) {
      packThere = true;
      findPacks = 0;
      const first = await cloneOnce(protocol);
      const second = await cloneOnce(protocol);
      expect(first.result.pack?.hash).toBe(second.result.pack?.hash);
      expect(findPacks).toBe(2);
      expect(first.reads).toBeGreaterThan(all.length / 2);
      // no history walk: only the wants' own checks read objects
      expect(second.reads).toBeLessThan(first.reads / 2);
      // the stored pack gone: the next clone walks and writes a pack again
      packThere = false;
      const third = await cloneOnce(protocol);
      expect(third.reads).toBeGreaterThan(all.length / 2);
      expect(third.result.pack?.objects).toBe(all.length);
    }
  });

  it('an empty repository advertises capabilities^{} and clones to nothing', async () => {
    const repo = emptyRepo();
    const [a, b] = connectionPair();
    const served = serveUploadPack(repo, b);
    const local = emptyRepo();
    const result = await clone(local, { connection: a });
    await served;
    expect(result.refs).toEqual([]);
    expect(await local.refs.list()).toEqual([]);
  });
});
