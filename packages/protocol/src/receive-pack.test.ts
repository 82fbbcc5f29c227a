import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { createDelta, MemoryObjectStore, type ObjectType, ZERO_ID } from '@gitport/pack';
import { encodeText, FLUSH, PacketReader } from '@gitport/pktline';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { connectionPair } from './channel.js';
import { concatBytes, type Repository } from './connection.js';
import { push } from './push-client.js';
import { type ReceivePackOptions, type ReceivePackResult, serveReceivePack } from './receive-pack.js';
import type { RefUpdateResult } from './ref-store.js';
import { fuzzParameters } from './test-fuzz.js';
import { chain, commit, emptyRepo, packOf, readAll, type TestRepo, text } from './test-repo.js';

/** A server repository with main at c2, and a client that has c0..c4 (c3, c4 new). */
async function setup(): Promise<{ server: TestRepo; client: TestRepo; base: string[]; ahead: string[] }> {
  const client = emptyRepo();
  const base = await chain(client, 3);
  const ahead = await chain(client, 2, base[2], 'ahead');
  const server = emptyRepo();
  for (const oid of client.objects.keys()) {
    if (ahead.includes(oid)) continue;
    const o = (await client.objects.read(oid))!;
    await server.objects.writeHashed([{ oid, type: o.type, data: o.data }]);
  }
  await server.refs.update([{ name: 'refs/heads/main', old: null, new: base[2]! }]);
  await client.refs.update([{ name: 'refs/heads/main', old: null, new: ahead[1]! }]);
  return { server, client, base, ahead };
}

const line = (s: string) => encodeText(`${s}\n`);

/** Sends a raw request (commands, flush, optional pack) and returns the raw response. */
async function raw(server: Repository, request: Uint8Array, options: ReceivePackOptions & { end?: boolean } = {}) {
  const [client, host] = connectionPair();
  const { end: _end, ...serverOptions } = options;
  const served = serveReceivePack(server, host, { advertise: false, ...serverOptions });
  const response = readAll(client);
  await client.write(request);
  if (options.end !== false) await client.end();
  const result = await served.catch((e: unknown) => e);
  return { result, response: await response };
}

async function reportOf(bytes: Uint8Array): Promise<string[]> {
  const reader = new PacketReader(
    (async function* () {
      yield bytes;
    })(),
  );
  const lines: string[] = [];
  for (;;) {
    const p = await reader.read();
    if (!p) break;
    lines.push(p.kind === 'data' ? text(p.payload).trimEnd() : p.kind);
  }
  return lines;
}

describe('receive-pack', () => {
  it('a push through the client: fast-forward, then delete', async () => {
    const { server, client, ahead } = await setup();
    const [ours, theirs] = connectionPair();
    const served = serveReceivePack(server, theirs);
    const result = await push(client, { connection: ours }, { refspecs: ['refs/heads/main:refs/heads/main'] });
    const serverResult = await served;
    expect(result).toMatchObject({ ok: true, unpack: 'ok' });
    expect(serverResult.updated).toEqual([{ name: 'refs/heads/main', old: expect.any(String), new: ahead[1] }]);
    expect(await server.refs.resolve('refs/heads/main')).toBe(ahead[1]);
    // HEAD points to main: deleting it is refused, as git's receive.denyDeleteCurrent does
    const [o2, t2] = connectionPair();
    const served2 = serveReceivePack(server, t2);
    const refused = await push(client, { connection: o2 }, { refspecs: [':refs/heads/main'] });
    await served2;
    expect(refused.ok).toBe(false);
    expect(JSON.stringify(refused)).toContain('deletion of the current branch prohibited');
    expect(await server.refs.resolve('refs/heads/main')).toBe(ahead[1]);
    // unless the server allows it
    const [o3, t3] = connectionPair();
    const served3 = serveReceivePack(server, t3, { allowDeleteCurrent: true });
    const del = await push(client, { connection: o3 }, { refspecs: [':refs/heads/main'] });
    await served3;
    expect(del.ok).toBe(true);
    expect(await server.refs.read('refs/heads/main')).toEqual({ kind: 'missing' });
  });

  it('a half-received pack moves no ref', async () => {
    const { server, client, base, ahead } = await setup();
    const pack = await packOf(client.objects, ahead.flatMap((c) => [c]).concat([]));
    const head = concatBytes([encodeText(`${base[2]} ${ahead[1]} refs/heads/main\0report-status\n`), FLUSH]);
    const { result, response } = await raw(server, concatBytes([head, pack.subarray(0, pack.length - 30)]));
    expect(result).toMatchObject({ unpack: expect.stringMatching(/^unpacker error/) });
    expect((await reportOf(response))[0]).toMatch(/^unpack unpacker error/);
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('a corrupt pack trailer moves no ref', async () => {
    const { server, client, base, ahead } = await setup();
    const pack = await packOf(client.objects, ahead);
    pack[pack.length - 1]! ^= 0xff;
    const head = concatBytes([encodeText(`${base[2]} ${ahead[1]} refs/heads/main\0report-status\n`), FLUSH]);
    const { result } = await raw(server, concatBytes([head, pack]));
    expect(result).toMatchObject({ unpack: expect.stringMatching(/^unpacker error/) });
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('missing objects: the connectivity check refuses the ref', async () => {
    const { server, client, base, ahead } = await setup();
    // only the newest commit: its parent, tree and blob are not sent
    const pack = await packOf(client.objects, [ahead[1]!]);
    const head = concatBytes([encodeText(`${base[2]} ${ahead[1]} refs/heads/main\0report-status\n`), FLUSH]);
    const { response } = await raw(server, concatBytes([head, pack]));
    expect(await reportOf(response)).toEqual(['unpack ok', 'ng refs/heads/main missing necessary objects', 'flush']);
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('objects left by a refused push do not count as connected later', async () => {
    const { server, client, base, ahead } = await setup();
    // first push brings only the newest commit (refused: its parent is missing) ...
    const pack1 = await packOf(client.objects, [ahead[1]!]);
    await raw(
      server,
      concatBytes([encodeText(`${base[2]} ${ahead[1]} refs/heads/main\0report-status\n`), FLUSH, pack1]),
    );
    // ... a second push with an empty pack must not be accepted on the strength of that object
    const empty = await packOf(client.objects, []);
    const { response } = await raw(
      server,
      concatBytes([encodeText(`${ZERO_ID} ${ahead[1]} refs/heads/other\0report-status\n`), FLUSH, empty]),
    );
    expect(await reportOf(response)).toEqual(['unpack ok', 'ng refs/heads/other missing necessary objects', 'flush']);
  });

  it('compare-and-swap, funny ref names, and atomic all-or-nothing', async () => {
    const { server, client, base, ahead } = await setup();
    const pack = await packOf(client.objects, [...ahead, ...(await treeAndBlobs(client, ahead))]);
    const stale = await raw(
      server,
      concatBytes([
        encodeText(`${base[0]} ${ahead[1]} refs/heads/main\0report-status\n`),
        line(`${ZERO_ID} ${ahead[1]} refs/heads/bad..name`),
        line(`${ZERO_ID} ${ahead[1]} refs/heads/fine`),
        FLUSH,
        pack,
      ]),
    );
    expect(await reportOf(stale.response)).toEqual([
      'unpack ok',
      'ng refs/heads/main stale info',
      'ng refs/heads/bad..name funny refname',
      'ok refs/heads/fine',
      'flush',
    ]);
    const atomic = await raw(
      server,
      concatBytes([
        encodeText(`${base[0]} ${ahead[1]} refs/heads/main\0report-status atomic\n`),
        line(`${ZERO_ID} ${ahead[0]} refs/heads/new`),
        FLUSH,
        await packOf(client.objects, []),
      ]),
    );
    expect(await reportOf(atomic.response)).toEqual([
      'unpack ok',
      'ng refs/heads/main stale info',
      'ng refs/heads/new atomic push failure',
      'flush',
    ]);
    expect(await server.refs.read('refs/heads/new')).toEqual({ kind: 'missing' });
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('refuses non-fast-forward updates when the repository says so', async () => {
    const { server, client, base } = await setup();
    const side = await commit(client, [base[0]!], 'side');
    const pack = await packOf(client.objects, [side, ...(await treeAndBlobs(client, [side]))]);
    const request = concatBytes([encodeText(`${base[2]} ${side} refs/heads/main\0report-status\n`), FLUSH, pack]);
    const strict = await raw(server, request, { allowNonFastForward: false });
    expect(await reportOf(strict.response)).toEqual(['unpack ok', 'ng refs/heads/main non-fast-forward', 'flush']);
    const lenient = await raw(server, request);
    expect(await reportOf(lenient.response)).toEqual(['unpack ok', 'ok refs/heads/main', 'flush']);
  });

  it('does not wait for a pack when every command is a delete', async () => {
    const { server, base } = await setup();
    await server.refs.update([{ name: 'refs/heads/topic', old: null, new: base[1]! }]);
    const { response } = await raw(
      server,
      concatBytes([encodeText(`${base[1]} ${ZERO_ID} refs/heads/topic\0report-status delete-refs\n`), FLUSH]),
      { end: false },
    );
    expect(await reportOf(response)).toEqual(['unpack ok', 'ok refs/heads/topic', 'flush']);
    expect(await server.refs.list()).toEqual([{ name: 'refs/heads/main', oid: base[2] }]);
  });

  it('accepts an empty pack for a ref to an existing commit, and side-bands the report', async () => {
    const { server, client, base } = await setup();
    const { response } = await raw(
      server,
      concatBytes([
        encodeText(`${ZERO_ID} ${base[1]} refs/heads/copy\0report-status side-band-64k\n`),
        FLUSH,
        await packOf(client.objects, []),
      ]),
    );
    const outer = await reportOf(response);
    expect(outer.at(-1)).toBe('flush');
    // band 1 carries the whole report, itself pkt-lines
    const reader = new PacketReader(
      (async function* () {
        yield response;
      })(),
    );
    const first = await reader.read();
    expect(first?.kind === 'data' && first.payload[0]).toBe(1);
    const inner = first?.kind === 'data' ? first.payload.subarray(1) : new Uint8Array();
    expect(await reportOf(inner)).toEqual(['unpack ok', 'ok refs/heads/copy', 'flush']);
    expect(await server.refs.resolve('refs/heads/copy')).toBe(base[1]);
  });

  it('rejects malformed commands with a typed error and moves nothing', async () => {
    const { server, base } = await setup();
    const { result } = await raw(
      server,
      concatBytes([encodeText(`${base[2]} not-an-id refs/heads/main\0report-status\n`), FLUSH]),
    );
    expect(result).toMatchObject({ code: 'PROTOCOL_BAD_LINE' });
    const eof = await raw(server, encodeText(`${base[2]} ${base[1]} refs/heads/main\0report-status\n`));
    expect(eof.result).toMatchObject({ code: 'PROTOCOL_UNEXPECTED_EOF' });
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('hooks can decline a ref or the whole push', async () => {
    const { server, client, ahead, base } = await setup();
    const [ours, theirs] = connectionPair();
    const served = serveReceivePack(server, theirs, {
      hooks: { preReceive: async (commands) => (commands.length > 0 ? 'frozen' : undefined) },
    });
    const result = await push(client, { connection: ours }, { refspecs: ['refs/heads/main:refs/heads/main'] });
    await served;
    expect(result.ok).toBe(false);
    expect(result.refs[0]).toMatchObject({ status: 'rejected', reason: 'pre-receive hook declined: frozen' });
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
    void ahead;
  });

  it('an aborted push rejects with PROTOCOL_ABORTED and moves nothing', async () => {
    const { server, base, ahead } = await setup();
    const [client, host] = connectionPair();
    const controller = new AbortController();
    const served = serveReceivePack(server, host, { advertise: false, signal: controller.signal });
    await client.write(concatBytes([encodeText(`${base[2]} ${ahead[1]} refs/heads/main\0report-status\n`), FLUSH]));
    await client.write(new TextEncoder().encode('PACK'));
    controller.abort();
    await client.end();
    await expect(served).rejects.toMatchObject({ code: expect.stringMatching(/ABORTED/) });
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });
});

/** The trees and blobs of commits (one file each in these repositories). */
async function treeAndBlobs(repo: TestRepo, commits: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const c of commits) {
    const data = text((await repo.objects.read(c))!.data);
    const tree = /^tree ([0-9a-f]{40})/.exec(data)![1]!;
    out.push(tree);
    const treeData = (await repo.objects.read(tree))!.data;
    const nul = treeData.indexOf(0);
    out.push([...treeData.subarray(nul + 1, nul + 21)].map((b) => b.toString(16).padStart(2, '0')).join(''));
  }
  return out;
}

const enc = (s: string) => new TextEncoder().encode(s);
const hexBytes = (oid: string) => Uint8Array.from(oid.match(/../g)!.map((h) => Number.parseInt(h, 16)));

/** Tree bytes from `[mode, name, oid]` entries, in the order given. */
function treeOf(entries: readonly [string, string, string][]): Uint8Array {
  return concatBytes(entries.flatMap(([mode, name, oid]) => [enc(`${mode} ${name}\0`), hexBytes(oid)]));
}

function commitText(tree: string, parents: readonly string[], message: string): Uint8Array {
  return enc(
    `tree ${tree}\n${parents.map((p) => `parent ${p}\n`).join('')}author t <t@x> 1700000000 +0000\ncommitter t <t@x> 1700000000 +0000\n\n${message}\n`,
  );
}

function request(commands: readonly string[], pack?: Uint8Array, caps = 'report-status'): Uint8Array {
  return concatBytes([
    encodeText(`${commands[0]}\0${caps}\n`),
    ...commands.slice(1).map((c) => line(c)),
    FLUSH,
    ...(pack ? [pack] : []),
  ]);
}

describe('receive-pack: a refused push leaves nothing behind', () => {
  it('a tree kept from a refused push does not let a later push point a branch at it unsent', async () => {
    const { server, client, base } = await setup();
    // push A brings a commit, its tree and blob; a hook refuses it
    const blob = await client.objects.write('blob', enc('kept from a refused push\n'));
    const tree = await client.objects.write('tree', treeOf([['100644', 'secret.txt', blob]]));
    const a = await client.objects.write('commit', commitText(tree, [base[2]!], 'A'));
    const first = await raw(
      server,
      request([`${base[2]} ${a} refs/heads/main`], await packOf(client.objects, [a, tree, blob])),
      {
        hooks: { preReceive: async () => 'not now' },
      },
    );
    expect(await reportOf(first.response)).toEqual([
      'unpack ok',
      'ng refs/heads/main pre-receive hook declined: not now',
      'flush',
    ]);
    for (const oid of [a, tree, blob]) expect(await server.objects.has(oid)).toBe(false);
    // push B reuses A's tree without sending it
    const b = await client.objects.write('commit', commitText(tree, [base[2]!], 'B'));
    const second = await raw(server, request([`${base[2]} ${b} refs/heads/main`], await packOf(client.objects, [b])));
    expect(await reportOf(second.response)).toEqual([
      'unpack ok',
      'ng refs/heads/main missing necessary objects',
      'flush',
    ]);
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
    expect(await server.objects.has(b)).toBe(false);
  });

  it('an existing tree is walked, not trusted: its missing blob refuses the push', async () => {
    const { server, client, base } = await setup();
    const blob = await client.objects.write('blob', enc('never sent\n'));
    const tree = await client.objects.write('tree', treeOf([['100644', 'lost.txt', blob]]));
    // the tree got into the store somehow (another writer), its blob did not
    await server.objects.writeHashed([{ oid: tree, type: 'tree', data: (await client.objects.read(tree))!.data }]);
    const c = await client.objects.write('commit', commitText(tree, [base[2]!], 'C'));
    const { response } = await raw(
      server,
      request([`${base[2]} ${c} refs/heads/main`], await packOf(client.objects, [c])),
    );
    expect(await reportOf(response)).toEqual(['unpack ok', 'ng refs/heads/main missing necessary objects', 'flush']);
  });

  it('the ref transaction refusing every ref takes the migrated objects out again', async () => {
    const { server, client, base, ahead } = await setup();
    const pack = await packOf(client.objects, [...ahead, ...(await treeAndBlobs(client, ahead))]);
    const refusing: Repository = {
      objects: server.objects,
      refs: {
        ...server.refs,
        list: (prefix) => server.refs.list(prefix),
        read: (name) => server.refs.read(name),
        resolve: (name) => server.refs.resolve(name),
        setSymbolic: (name, target) => server.refs.setSymbolic(name, target),
        update: async (updates) =>
          updates.map((u) => ({ name: u.name, status: 'rejected', reason: 'symbolic', message: 'is locked' }) as const),
      },
    };
    const { response } = await raw(refusing, request([`${base[2]} ${ahead[1]} refs/heads/main`], pack));
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      'ng refs/heads/main failed to update ref: is locked',
      'flush',
    ]);
    for (const oid of ahead) expect(await server.objects.has(oid)).toBe(false);
    // another writer moved a ref meanwhile: it may lean on them, they stay
    const racing = patched(server, {
      update: async (updates) => {
        await server.refs.update([{ name: 'refs/heads/other-writer', old: null, new: base[0]! }]);
        return updates.map(
          (u) => ({ name: u.name, status: 'rejected', reason: 'symbolic', message: 'is locked' }) as const,
        );
      },
    });
    const raced = await raw(racing, request([`${base[2]} ${ahead[1]} refs/heads/main`], pack));
    expect(await reportOf(raced.response)).toEqual([
      'unpack ok',
      'ng refs/heads/main failed to update ref: is locked',
      'flush',
    ]);
    for (const oid of ahead) expect(await server.objects.has(oid)).toBe(true);
    await server.objects.remove(ahead);
    // accepted, they stay
    const ok = await raw(server, request([`${base[2]} ${ahead[1]} refs/heads/main`], pack));
    expect(await reportOf(ok.response)).toEqual(['unpack ok', 'ok refs/heads/main', 'flush']);
    for (const oid of ahead) expect(await server.objects.has(oid)).toBe(true);
  });
});

/** `server` with some of its ref store's or object store's methods replaced. */
function patched(
  server: TestRepo,
  refs: Partial<Repository['refs']>,
  objects: Partial<Repository['objects']> = {},
): Repository {
  const r = server.refs;
  const o = server.objects;
  return {
    refs: {
      list: (prefix) => r.list(prefix),
      read: (name) => r.read(name),
      resolve: (name) => r.resolve(name),
      setSymbolic: (name, target) => r.setSymbolic(name, target),
      update: (updates, options) => r.update(updates, options),
      ...refs,
    },
    objects: {
      has: (oid) => o.has(oid),
      read: (oid) => o.read(oid),
      write: (type, data) => o.write(type, data),
      writeHashed: (objects) => o.writeHashed(objects),
      ...objects,
    },
  };
}

const fsError = (code: string) => Object.assign(new Error(`${code}: /srv/secret/path`), { code });

describe('receive-pack: every failure gets a report', () => {
  it('a malformed commit or tag: ng for its ref, not an empty response', async () => {
    const { server, client, base } = await setup();
    const noTree = await client.objects.write('commit', enc(`parent ${base[2]}\nauthor t <t@x> 1 +0000\n\nx\n`));
    const badTag = await client.objects.write('tag', enc(`object ${base[2]}\ntype commot\ntag v\n\nx\n`));
    const { result, response } = await raw(
      server,
      request(
        [
          `${ZERO_ID} ${noTree} refs/heads/broken`,
          `${ZERO_ID} ${badTag} refs/tags/broken`,
          `${ZERO_ID} ${base[1]} refs/heads/fine`,
        ],
        await packOf(client.objects, [noTree, badTag]),
      ),
    );
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      `ng refs/heads/broken invalid object ${noTree}: missingTree: invalid format - expected "tree" line`,
      `ng refs/tags/broken invalid object ${badTag}: badType: invalid "type" value`,
      'ok refs/heads/fine',
      'flush',
    ]);
    expect((result as ReceivePackResult).updated.map((c) => c.name)).toEqual(['refs/heads/fine']);
  });

  it('duplicate ref names in one push: neither is applied', async () => {
    const { server, base } = await setup();
    const { response } = await raw(
      server,
      request(
        [`${ZERO_ID} ${base[0]} refs/heads/twice`, `${ZERO_ID} ${base[1]} refs/heads/twice`],
        await packOf(new MemoryObjectStore(), []),
      ),
    );
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      'ng refs/heads/twice duplicate ref',
      'ng refs/heads/twice duplicate ref',
      'flush',
    ]);
    expect(await server.refs.read('refs/heads/twice')).toEqual({ kind: 'missing' });
  });

  it('a ref store that throws (a 5,000-character name): ng for that ref, the others go on', async () => {
    const { server, base } = await setup();
    const long = `refs/heads/${'x'.repeat(5000)}`;
    const throwing = patched(server, {
      read: async (name) => {
        if (name.length > 255) throw fsError('ENAMETOOLONG');
        return server.refs.read(name);
      },
    });
    const { result, response } = await raw(
      throwing,
      request(
        [`${ZERO_ID} ${base[1]} ${long}`, `${ZERO_ID} ${base[1]} refs/heads/short`],
        await packOf(new MemoryObjectStore(), []),
      ),
    );
    const report = await reportOf(response);
    expect(report).toEqual([
      'unpack ok',
      `ng ${long} failed to lock: internal error (ENAMETOOLONG)`,
      'ok refs/heads/short',
      'flush',
    ]);
    expect(report.join('\n')).not.toContain('/srv/secret');
    expect((result as ReceivePackResult).errors).toEqual([expect.objectContaining({ code: 'ENAMETOOLONG' })]);
  });

  it('the ref transaction throwing: ng for every ref it had; a hook throwing: ng for its ref', async () => {
    const { server, base } = await setup();
    const empty = await packOf(new MemoryObjectStore(), []);
    const broken = patched(server, {
      update: async () => {
        throw fsError('EIO');
      },
    });
    const tx = await raw(
      broken,
      request([`${ZERO_ID} ${base[0]} refs/heads/a`, `${ZERO_ID} ${base[1]} refs/heads/b`], empty),
    );
    expect(await reportOf(tx.response)).toEqual([
      'unpack ok',
      'ng refs/heads/a failed to update ref: internal error (EIO)',
      'ng refs/heads/b failed to update ref: internal error (EIO)',
      'flush',
    ]);
    const hooked = await raw(
      server,
      request([`${ZERO_ID} ${base[0]} refs/heads/a`, `${ZERO_ID} ${base[1]} refs/heads/b`], empty),
      {
        hooks: {
          update: async (c) => {
            if (c.name === 'refs/heads/a') throw new Error('hook crashed');
          },
        },
      },
    );
    expect(await reportOf(hooked.response)).toEqual([
      'unpack ok',
      'ng refs/heads/a hook declined: internal error',
      'ok refs/heads/b',
      'flush',
    ]);
    const pre = await raw(server, request([`${ZERO_ID} ${base[0]} refs/heads/c`], empty), {
      hooks: { preReceive: async () => Promise.reject(fsError('EACCES')) },
    });
    expect(await reportOf(pre.response)).toEqual([
      'unpack ok',
      'ng refs/heads/c pre-receive hook declined: internal error (EACCES)',
      'flush',
    ]);
  });

  it('an error in the connectivity walk: ng for the refs it concerns', async () => {
    const { server, client, base, ahead } = await setup();
    const pack = await packOf(client.objects, [...ahead, ...(await treeAndBlobs(client, ahead))]);
    const failing = patched(
      server,
      {},
      {
        read: async (oid) => {
          if (oid === base[2]) throw fsError('EIO');
          return server.objects.read(oid);
        },
      },
    );
    const { response } = await raw(failing, request([`${base[2]} ${ahead[1]} refs/heads/main`], pack));
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      'ng refs/heads/main missing necessary objects: internal error (EIO)',
      'flush',
    ]);
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
  });

  it('atomic: one ref refused by the transaction, every ref reported failed', async () => {
    const { server, base } = await setup();
    const partial = patched(server, {
      update: async (updates) =>
        updates.map(
          (u): RefUpdateResult =>
            u.name === 'refs/heads/b'
              ? { name: u.name, status: 'rejected', reason: 'symbolic', message: 'locked' }
              : { name: u.name, status: 'ok', old: u.old ?? null, new: u.new },
        ),
    });
    const { response } = await raw(
      partial,
      request(
        [`${ZERO_ID} ${base[0]} refs/heads/a`, `${ZERO_ID} ${base[1]} refs/heads/b`],
        await packOf(new MemoryObjectStore(), []),
        'report-status atomic',
      ),
    );
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      'ng refs/heads/a atomic push failure',
      'ng refs/heads/b failed to update ref: locked',
      'flush',
    ]);
  });
});

describe('receive-pack: object checks', () => {
  it('a branch must point at a commit; a commit at a tree; a tag must name what it says', async () => {
    const { server, client, base } = await setup();
    const blob = await client.objects.write('blob', enc('just a blob\n'));
    const treeIsBlob = await client.objects.write('commit', commitText(blob, [base[2]!], 'tree is a blob'));
    const liar = await client.objects.write(
      'tag',
      enc(`object ${blob}\ntype commit\ntag liar\ntagger t <t@x> 1 +0000\n\nx\n`),
    );
    const { response } = await raw(
      server,
      request(
        [
          `${ZERO_ID} ${blob} refs/heads/blob`,
          `${ZERO_ID} ${treeIsBlob} refs/heads/tree-is-blob`,
          `${ZERO_ID} ${liar} refs/tags/liar`,
          `${ZERO_ID} ${blob} refs/tags/blob`,
        ],
        await packOf(client.objects, [blob, treeIsBlob, liar]),
      ),
    );
    expect(await reportOf(response)).toEqual([
      'unpack ok',
      `ng refs/heads/blob failed to update ref: trying to write non-commit object ${blob} to branch`,
      `ng refs/heads/tree-is-blob invalid object ${blob}: typeMismatch: object ${blob} is a blob, not a tree`,
      `ng refs/tags/liar invalid object ${blob}: typeMismatch: object ${blob} is a blob, not a commit`,
      'ok refs/tags/blob',
      'flush',
    ]);
  });

  const hostile: [string, [string, string][]][] = [
    ['hasDotgit', [['100644', '.git']]],
    ['hasDotgit', [['40000', '.GIT']]],
    ['hasDotgit', [['100644', 'GIT~1']]],
    ['hasDotgit', [['100644', '.git. ']]],
    ['hasDotgit', [['100644', '.g\u200cit']]],
    ['hasDotdot', [['40000', '..']]],
    ['hasDot', [['40000', '.']]],
    ['fullPathname', [['100644', 'a/b']]],
    ['badFilemode', [['100600', 'a']]],
    ['zeroPaddedFilemode', [['040000', 'a']]],
    [
      'duplicateEntries',
      [
        ['100644', 'a'],
        ['100644', 'a'],
      ],
    ],
    [
      'duplicateEntries',
      [
        ['100644', 'a'],
        ['40000', 'a'],
      ],
    ],
    [
      'treeNotSorted',
      [
        ['100644', 'b'],
        ['100644', 'a'],
      ],
    ],
    [
      'treeNotSorted',
      [
        ['40000', 'a'],
        ['100644', 'a.c'],
      ],
    ],
  ];
  it.each(hostile)("fsckObjects refuses a tree with %s (%j), and git's default lets .git pass", async (id, entries) => {
    const { server, client, base } = await setup();
    const blob = await client.objects.write('blob', enc('x\n'));
    const sub = await client.objects.write('tree', treeOf([['100644', 'f', blob]]));
    const tree = await client.objects.write(
      'tree',
      treeOf(entries.map(([mode, name]) => [mode, name, mode.endsWith('40000') ? sub : blob])),
    );
    const c = await client.objects.write('commit', commitText(tree, [base[2]!], 'hostile'));
    const pack = await packOf(client.objects, [c, tree, sub, blob]);
    const req = request([`${base[2]} ${c} refs/heads/main`, `${ZERO_ID} ${base[1]} refs/heads/other`], pack);
    const strict = await raw(server, req, { fsckObjects: true });
    const report = await reportOf(strict.response);
    expect(report[0]).toMatch(new RegExp(`^unpack unpacker error: object ${tree}: ${id}: `));
    expect(report.slice(1)).toEqual([
      'ng refs/heads/main unpacker error',
      'ng refs/heads/other unpacker error',
      'flush',
    ]);
    expect(await server.refs.resolve('refs/heads/main')).toBe(base[2]);
    expect(await server.objects.has(tree)).toBe(false);
    if (id === 'hasDotgit' && entries[0]![1] === '.git') {
      const lenient = await raw(server, req);
      expect(await reportOf(lenient.response)).toEqual([
        'unpack ok',
        'ok refs/heads/main',
        'ok refs/heads/other',
        'flush',
      ]);
    }
  });

  it('fsckObjects refuses bad idents and NUL in headers, and accepts what git writes', async () => {
    const { server, client, base } = await setup();
    const tree = /^tree ([0-9a-f]{40})/.exec(text((await client.objects.read(base[2]!))!.data))![1]!;
    const bad: [string, string][] = [
      ['missingAuthor', `tree ${tree}\ncommitter t <t@x> 1 +0000\n\nx\n`],
      ['badEmail', `tree ${tree}\nauthor t <t@x 1 +0000\ncommitter t <t@x> 1 +0000\n\nx\n`],
      ['badTimezone', `tree ${tree}\nauthor t <t@x> 1 +00\ncommitter t <t@x> 1 +0000\n\nx\n`],
      ['zeroPaddedDate', `tree ${tree}\nauthor t <t@x> 01 +0000\ncommitter t <t@x> 1 +0000\n\nx\n`],
      ['missingSpaceBeforeEmail', `tree ${tree}\nauthor t<t@x> 1 +0000\ncommitter t <t@x> 1 +0000\n\nx\n`],
      ['nulInHeader', `tree ${tree}\nauthor t <t@x> 1 +0000\ncommitter t <t@x>\0 1 +0000\n\nx\n`],
    ];
    for (const [id, body] of bad) {
      const c = await client.objects.write('commit', enc(body));
      const { response } = await raw(
        server,
        request([`${ZERO_ID} ${c} refs/heads/x`], await packOf(client.objects, [c])),
        {
          fsckObjects: true,
        },
      );
      expect((await reportOf(response))[0], id).toMatch(new RegExp(`^unpack unpacker error: object ${c}: ${id}: `));
    }
    const good = await client.objects.write('commit', commitText(tree, [base[2]!], 'fine'));
    const { response } = await raw(
      server,
      request([`${ZERO_ID} ${good} refs/heads/x`], await packOf(client.objects, [good])),
      {
        fsckObjects: true,
      },
    );
    expect(await reportOf(response)).toEqual(['unpack ok', 'ok refs/heads/x', 'flush']);
  });
});

describe('receive-pack: random objects (seeded fuzz)', () => {
  it('any object pushed to a branch and a tag gets a report line per ref, never a crash', async () => {
    const { seed, numRuns } = fuzzParameters('receive-pack', 300);
    const { server, client, base } = await setup();
    const tree = /^tree ([0-9a-f]{40})/.exec(text((await client.objects.read(base[2]!))!.data))![1]!;
    const valid = [
      commitText(tree, [base[2]!], 'valid'),
      enc(`object ${base[2]}\ntype commit\ntag t\ntagger t <t@x> 1 +0000\n\nx\n`),
      (await client.objects.read(tree))!.data,
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ObjectType>('commit', 'tree', 'tag', 'blob'),
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }),
          fc
            .tuple(
              fc.constantFrom(...valid),
              fc.nat(300),
              fc.array(fc.tuple(fc.nat(300), fc.nat(255)), { maxLength: 4 }),
            )
            .map(([bytes, cut, edits]) => {
              const out = bytes.slice(0, cut % (bytes.length + 1));
              for (const [at, value] of edits) if (out.length > 0) out[at % out.length] = value;
              return out;
            }),
        ),
        fc.boolean(),
        async (type, data, fsckObjects) => {
          const objects = new MemoryObjectStore();
          const oid = await objects.write(type, data);
          const { result, response } = await raw(
            server,
            request(
              [`${ZERO_ID} ${oid} refs/heads/fuzz`, `${ZERO_ID} ${oid} refs/tags/fuzz`],
              await packOf(objects, [oid]),
            ),
            { fsckObjects },
          );
          expect(result).toMatchObject({ unpack: expect.any(String) });
          const lines = await reportOf(response);
          expect(lines).toHaveLength(4);
          expect(lines[0]).toMatch(/^unpack /);
          expect(lines[1]).toMatch(/^(ok|ng) refs\/heads\/fuzz/);
          expect(lines[2]).toMatch(/^(ok|ng) refs\/tags\/fuzz/);
          // a branch only ever points at a commit
          if (lines[1]!.startsWith('ok')) expect(type).toBe('commit');
          await server.refs.update(
            (await server.refs.list())
              .filter((r) => r.name.endsWith('/fuzz'))
              .map((r) => ({ name: r.name, old: r.oid, new: null })),
          );
        },
      ),
      { seed, numRuns },
    );
  });
});

/** A pack of whole objects and REF_DELTA entries, byte by byte (a thin pack when a base is not in it). */
function handPack(entries: readonly ({ type: ObjectType; data: Uint8Array } | { base: string; delta: Uint8Array })[]) {
  const codes = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;
  const header = (code: number, size: number) => {
    const out = [(code << 4) | (size & 15)];
    for (let rest = size >>> 4; rest > 0; rest >>>= 7) {
      out[out.length - 1]! |= 0x80;
      out.push(rest & 0x7f);
    }
    return Uint8Array.from(out);
  };
  const parts: Uint8Array[] = [enc('PACK'), Uint8Array.of(0, 0, 0, 2, 0, 0, 0, entries.length)];
  for (const e of entries) {
    if ('type' in e) parts.push(header(codes[e.type], e.data.length), deflateSync(e.data));
    else parts.push(header(7, e.delta.length), hexBytes(e.base), deflateSync(e.delta));
  }
  const body = concatBytes(parts);
  return concatBytes([body, createHash('sha1').update(body).digest()]);
}

describe('receive-pack: fsckObjects and thin packs', () => {
  it('a thin base from the repository is not checked again (a legacy tree with a zero-padded mode)', async () => {
    const { server, client, base } = await setup();
    const blob = await client.objects.write('blob', enc('legacy\n'));
    const sub = await client.objects.write('tree', treeOf([['100644', 'f', blob]]));
    // written by an old tool: git's fsck calls the mode zeroPaddedFilemode
    const legacy = await client.objects.write(
      'tree',
      treeOf([
        ['100644', 'a', blob],
        ['040000', 'd', sub],
      ]),
    );
    const old = await client.objects.write('commit', commitText(legacy, [base[2]!], 'legacy'));
    for (const oid of [blob, sub, legacy, old]) {
      const o = (await client.objects.read(oid))!;
      await server.objects.writeHashed([{ oid, type: o.type, data: o.data }]);
    }
    await server.refs.update([{ name: 'refs/heads/main', old: base[2]!, new: old }]);
    // the new tree, as git writes it, sent as a delta against the legacy one
    const added = await client.objects.write('blob', enc('new\n'));
    const fresh = treeOf([
      ['100644', 'a', blob],
      ['100644', 'b', added],
      ['40000', 'd', sub],
    ]);
    const freshId = await client.objects.write('tree', fresh);
    const next = await client.objects.write('commit', commitText(freshId, [old], 'next'));
    const delta = createDelta((await client.objects.read(legacy))!.data, fresh)!;
    const pack = handPack([
      { type: 'commit', data: (await client.objects.read(next))!.data },
      { base: legacy, delta },
      { type: 'blob', data: enc('new\n') },
    ]);
    const { response } = await raw(server, request([`${old} ${next} refs/heads/main`], pack), { fsckObjects: true });
    expect(await reportOf(response)).toEqual(['unpack ok', 'ok refs/heads/main', 'flush']);
    expect(await server.refs.resolve('refs/heads/main')).toBe(next);
  });
});
