import { encodeText, FLUSH, PacketReader } from '@gitport/pktline';
import { describe, expect, it } from 'vitest';
import { decodeAdvertisement } from './advertisement.js';
import { connectionPair } from './channel.js';
import { CommitGraph } from './commit-graph.js';
import { type Connection, concatBytes } from './connection.js';
import { fetch, lsRemote } from './fetch-client.js';
import { Negotiator } from './negotiator.js';
import { chain, emptyRepo } from './test-repo.js';

const line = (s: string) => encodeText(`${s}\n`);

/** A scripted server: writes `advertisement`, then answers each client flush with the next reply. */
function scripted(conn: Connection, advertisement: Uint8Array, replies: Uint8Array[]): Promise<void> {
  return (async () => {
    await conn.write(advertisement);
    const reader = new PacketReader(conn.input);
    for (const reply of replies) {
      for (;;) {
        const p = await reader.read();
        if (!p) return;
        if (p.kind === 'flush' || (p.kind === 'data' && new TextDecoder().decode(p.payload) === 'done\n')) break;
      }
      await conn.write(reply);
    }
    await conn.end();
  })();
}

describe('fetch client against a hostile server', () => {
  it('refuses an ACK for an object it never offered', async () => {
    const local = emptyRepo();
    const mine = await chain(local, 3);
    await local.refs.update([{ name: 'refs/heads/main', old: null, new: mine[2]! }]);
    const theirs = 'f'.repeat(40);
    const [client, server] = connectionPair();
    const served = scripted(
      server,
      concatBytes([encodeText(`${theirs} refs/heads/main\0multi_ack_detailed side-band-64k\n`), FLUSH]),
      [concatBytes([]), concatBytes([line(`ACK ${'e'.repeat(40)} common`), line('NAK')])],
    );
    await expect(
      fetch(local, { connection: client }, { refspecs: ['refs/heads/main:refs/heads/theirs'] }),
    ).rejects.toMatchObject({
      code: 'PROTOCOL_BAD_LINE',
    });
    await client.end();
    await served.catch(() => {});
  });

  it('bounds the size of an advertisement', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => line(`${'a'.repeat(40)} refs/heads/b${i}`));
    const bytes = concatBytes([...lines, FLUSH]);
    await expect(
      decodeAdvertisement(
        new PacketReader(
          (async function* () {
            yield bytes;
          })(),
        ),
        { maxRefs: 10 },
      ),
    ).rejects.toMatchObject({ code: 'PROTOCOL_LIMIT' });
  });

  it('turns ERR from the server into PROTOCOL_REMOTE_ERROR', async () => {
    const [client, server] = connectionPair();
    const served = (async () => {
      await server.write(line('ERR access denied'));
      await server.end();
    })();
    await expect(lsRemote({ connection: client })).rejects.toMatchObject({ code: 'PROTOCOL_REMOTE_ERROR' });
    await served;
  });

  it('a server that hangs up mid-advertisement gives PROTOCOL_UNEXPECTED_EOF or a pkt-line error', async () => {
    const [client, server] = connectionPair();
    const served = (async () => {
      await server.write(line(`${'a'.repeat(40)} refs/heads/main`));
      await server.end();
    })();
    await expect(lsRemote({ connection: client })).rejects.toMatchObject({
      code: expect.stringMatching(/EOF|TRUNCATED/),
    });
    await served;
  });
});

describe('smart HTTP client', () => {
  const body = (text: string) =>
    (async function* () {
      yield new TextEncoder().encode(text);
    })();
  it('reports HTTP failures and dumb servers with PROTOCOL_HTTP', async () => {
    const denied = { url: 'http://x/r.git', http: async () => ({ status: 401, headers: {}, body: body('no') }) };
    await expect(lsRemote(denied)).rejects.toMatchObject({ code: 'PROTOCOL_HTTP', data: { status: 401 } });
    const dumb = {
      url: 'http://x/r.git',
      http: async () => ({
        status: 200,
        headers: { 'Content-Type': 'text/plain' },
        body: body('abc\trefs/heads/main\n'),
      }),
    };
    await expect(lsRemote(dumb)).rejects.toMatchObject({ code: 'PROTOCOL_HTTP' });
  });

  it('accepts media type parameters and asks for v2 with Git-Protocol', async () => {
    const seen: Record<string, string>[] = [];
    const adv = concatBytes([
      encodeText('# service=git-upload-pack\n'),
      FLUSH,
      encodeText(`${'a'.repeat(40)} refs/heads/main\0agent=x\n`),
      FLUSH,
    ]);
    const remote = {
      url: 'http://x/r.git/',
      http: async (request: { url: string; headers: Record<string, string> }) => {
        seen.push(request.headers);
        expect(request.url).toBe('http://x/r.git/info/refs?service=git-upload-pack');
        return {
          status: 200,
          headers: { 'content-type': 'application/x-git-upload-pack-advertisement; charset=binary' },
          body: (async function* () {
            yield adv;
          })(),
        };
      },
    };
    const listed = await lsRemote(remote, { protocol: 2 });
    expect(listed.version).toBe(0); // the server answered v0: the client follows it
    expect(listed.refs).toEqual([{ name: 'refs/heads/main', oid: 'a'.repeat(40) }]);
    expect(seen[0]?.['Git-Protocol']).toBe('version=2');
  });
});

describe('negotiator', () => {
  it('offers local commits newest first and skips the ancestors of acknowledged ones', async () => {
    const repo = emptyRepo();
    const commits = await chain(repo, 40);
    const graph = new CommitGraph(repo.objects);
    const n = new Negotiator(graph);
    await n.addTip(commits[39]!);
    const first: string[] = [];
    for (let i = 0; i < 5; i++) first.push((await n.next())!);
    expect(first).toEqual(commits.slice(35).reverse());
    await n.ack(commits[30]!);
    const rest: string[] = [];
    for (let o = await n.next(); o; o = await n.next()) rest.push(o);
    // 34..31 are still unknown; 30 and below are common now
    expect(rest).toEqual(commits.slice(31, 35).reverse());
  });

  it('sends a known-common remote tip but none of its ancestors', async () => {
    const repo = emptyRepo();
    const commits = await chain(repo, 10);
    const n = new Negotiator(new CommitGraph(repo.objects));
    await n.knownCommon(commits[9]!);
    await n.addTip(commits[9]!);
    expect(await n.next()).toBe(commits[9]);
    expect(await n.next()).toBeUndefined();
  });
});
