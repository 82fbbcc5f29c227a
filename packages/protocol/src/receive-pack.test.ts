import { encodeText, FLUSH, PacketReader } from '@gitport/pktline';
import { describe, expect, it } from 'vitest';
import { connectionPair } from './channel.js';
import { concatBytes } from './connection.js';
import { push } from './push-client.js';
import { serveReceivePack } from './receive-pack.js';
import { ZERO_OID } from './ref-store.js';
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
async function raw(
  server: TestRepo,
  request: Uint8Array,
  options: { end?: boolean; allowNonFastForward?: boolean } = {},
) {
  const [client, host] = connectionPair();
  const served = serveReceivePack(server, host, {
    advertise: false,
    ...(options.allowNonFastForward === false ? { allowNonFastForward: false } : {}),
  });
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
      concatBytes([encodeText(`${ZERO_OID} ${ahead[1]} refs/heads/other\0report-status\n`), FLUSH, empty]),
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
        line(`${ZERO_OID} ${ahead[1]} refs/heads/bad..name`),
        line(`${ZERO_OID} ${ahead[1]} refs/heads/fine`),
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
        line(`${ZERO_OID} ${ahead[0]} refs/heads/new`),
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
      concatBytes([encodeText(`${base[1]} ${ZERO_OID} refs/heads/topic\0report-status delete-refs\n`), FLUSH]),
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
        encodeText(`${ZERO_OID} ${base[1]} refs/heads/copy\0report-status side-band-64k\n`),
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
