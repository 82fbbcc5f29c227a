/**
 * Requests that are cheap to send and were costly to answer: many wants, many unknown haves,
 * many ref prefixes, many deepen-not refs, many shallow lines. Each test checks a work counter
 * (lines read, commits walked, ref lookups) or that the answer is correct and complete; none
 * measures time.
 */
import type { ObjectId } from '@gitport/pack';
import { DELIM, encodeText, FLUSH, PacketReader, packetText } from '@gitport/pktline';
import { beforeAll, describe, expect, it } from 'vitest';
import { concatBytes, type Repository } from './connection.js';
import { handleUploadPackHttp } from './http.js';
import { chain, countingRefs, emptyRepo, type TestRepo } from './test-repo.js';
import { UploadSession } from './upload-pack.js';

const line = (s: string) => encodeText(`${s}\n`);
/** An object id that no repository here has. */
const unknown = (i: number) => `e${i.toString(16).padStart(39, '0')}`;
const tagName = (i: number) => `t${String(i).padStart(5, '0')}`;

interface Fixture {
  repo: TestRepo;
  root: ObjectId;
  other: ObjectId[];
  main: ObjectId[];
}

let f: Fixture;

beforeAll(async () => {
  // root <- other (5 commits, older), root <- main (3000 commits); 25,000 tags on main
  const repo = emptyRepo();
  const [root] = await chain(repo, 1, undefined, 'root');
  const other = await chain(repo, 5, root, 'other');
  const main = await chain(repo, 3000, root, 'main');
  const updates = [
    { name: 'refs/heads/main', old: null, new: main.at(-1) as ObjectId },
    { name: 'refs/heads/other', old: null, new: other.at(-1) as ObjectId },
  ];
  for (let i = 0; i < 25_000; i++) {
    updates.push({ name: `refs/tags/${tagName(i)}`, old: null, new: main[i % 3000] as ObjectId });
  }
  await repo.refs.update(updates);
  f = { repo, root: root as ObjectId, other, main };
}, 120_000);

/** A request body in chunks of `per` lines, counting the chunks the server pulled. */
function lazyBody(
  parts: readonly Uint8Array[],
  per: number,
): { body: AsyncIterable<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  return {
    body: (async function* () {
      for (let i = 0; i < parts.length; i += per) {
        pulled++;
        yield concatBytes(parts.slice(i, i + per));
      }
    })(),
    pulled: () => pulled,
  };
}

async function post(repo: Repository, body: AsyncIterable<Uint8Array> | Uint8Array, protocol: 0 | 2 = 0) {
  const source =
    body instanceof Uint8Array
      ? (async function* () {
          yield body;
        })()
      : body;
  const handled = handleUploadPackHttp(repo, source, { protocol, pack: { deltas: false } });
  const parts: Uint8Array[] = [];
  for await (const chunk of handled.body) parts.push(chunk);
  const outcome = await handled.done.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { bytes: concatBytes(parts), outcome };
}

/** The text lines and special packets of a reply up to a raw `PACK` (whose object count is given). */
async function reply(bytes: Uint8Array): Promise<{ lines: string[]; packObjects?: number }> {
  const at = indexOfPack(bytes);
  const head = at < 0 ? bytes : bytes.subarray(0, at);
  const reader = new PacketReader(
    (async function* () {
      yield head;
    })(),
  );
  const lines: string[] = [];
  for (;;) {
    const p = await reader.read().catch((e: { code: string }) => ({ kind: `error ${e.code}` }) as const);
    if (!p) break;
    lines.push(p.kind === 'data' ? (packetText(p) as string) : p.kind);
    if (p.kind.startsWith('error')) break;
  }
  if (at < 0) return { lines };
  const view = new DataView(bytes.buffer, bytes.byteOffset + at);
  return { lines, packObjects: view.getUint32(8) };
}

function indexOfPack(bytes: Uint8Array): number {
  for (let i = 0; i + 4 <= bytes.length; i++) {
    if (bytes[i] === 0x50 && bytes[i + 1] === 0x41 && bytes[i + 2] === 0x43 && bytes[i + 3] === 0x4b) return i;
  }
  return -1;
}

describe('wants', () => {
  it('100,000 want lines: repeats cost nothing, and the first unknown want ends the request as it arrives', async () => {
    const parts = [line(`want ${f.main.at(-1)} multi_ack_detailed no-progress`)];
    for (let i = 1; i < 50_000; i++) parts.push(line(`want ${f.main[i % 3000]}`));
    for (let i = 0; i < 50_000; i++) parts.push(line(`want ${unknown(i)}`));
    parts.push(FLUSH, line('done'));
    const { body, pulled } = lazyBody(parts, 1000);
    const { bytes, outcome } = await post(f.repo, body);
    expect(outcome).toMatchObject({ code: 'PROTOCOL_NOT_OUR_REF', data: { oid: unknown(0) } });
    expect((await reply(bytes)).lines).toEqual(['error PKTLINE_REMOTE_ERROR']);
    // git reads no further than the unknown want either (upload-pack.c, receive_needs)
    expect(pulled()).toBeLessThanOrEqual(51);
  });

  it('100,000 want lines naming 3,000 commits: the pack holds exactly their history', async () => {
    const parts = [line(`want ${f.main.at(-1)} multi_ack_detailed no-progress`)];
    for (let i = 1; i < 100_000; i++) parts.push(line(`want ${f.main[i % 3000]}`));
    parts.push(FLUSH, line('done'));
    const { bytes, outcome } = await post(f.repo, concatBytes(parts));
    expect(outcome).toBeUndefined();
    const { lines, packObjects } = await reply(bytes);
    expect(lines).toEqual(['NAK']);
    // root and main: a commit, a tree and a blob each
    expect(packObjects).toBe(3001 * 3);
  });
});

describe('want peeling', () => {
  /** The repository with its object reads of `watched` counted. */
  function countingReads(watched: ReadonlySet<ObjectId>): {
    repo: Repository;
    reads: () => number;
    reset: () => void;
  } {
    let reads = 0;
    const objects = f.repo.objects;
    const read = (oid: ObjectId) => {
      if (watched.has(oid)) reads++;
      return objects.read(oid);
    };
    // the store itself, but its reads go through `read` (its methods run on the store: it has
    // private fields)
    const counted = new Proxy(objects, {
      get: (target, key) => {
        if (key === 'read') return read;
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return {
      repo: { objects: counted, refs: f.repo.refs },
      reads: () => reads,
      reset: () => {
        reads = 0;
      },
    };
  }

  it('a clone (no haves, no shallow) reads none of its wants; a negotiation peels them once it has a common commit', async () => {
    const wants = f.main.slice(-200);
    const { repo, reads, reset } = countingReads(new Set(wants));
    const session = new UploadSession(repo, {});
    // the wants are tag targets here: listing the refs peels the tags (once per store), which
    // reads them; what is counted is what the wants cost after that
    await session.allRefs();
    reset();
    for (const oid of wants) await session.addWant(oid);
    await session.validateWants();
    // with no common commit the give-up check has nothing to walk
    expect(await session.okToGiveUp()).toBe(false);
    expect(reads()).toBe(0);
    expect(await session.have(f.root)).toBe(true);
    expect(await session.okToGiveUp()).toBe(true);
    expect(reads()).toBeGreaterThanOrEqual(wants.length);
    expect(await session.wantCommits()).toEqual(wants);
  });

  it('a shallow clone walks from its wants peeled to commits', async () => {
    const session = new UploadSession(f.repo, {});
    await session.addWant(f.main.at(-1) as ObjectId);
    await session.addWant(f.other.at(-1) as ObjectId);
    session.deepen = { depth: 1 };
    await session.validateWants();
    const info = await session.processShallow();
    expect(info.shallow.sort()).toEqual([f.main.at(-1), f.other.at(-1)].sort());
  });
});

describe('haves', () => {
  it('30,000 unknown haves after a common one: the give-up check walks each commit once', async () => {
    const session = new UploadSession(f.repo, {});
    await session.addWant(f.main.at(-1) as ObjectId);
    await session.validateWants();
    expect(await session.have(f.other.at(-1) as ObjectId)).toBe(true);
    let answers = 0;
    for (let i = 0; i < 30_000; i++) {
      // main does not reach what the client has within the dates the check walks
      if ((await session.have(unknown(i))) || (await session.okToGiveUp())) answers++;
    }
    expect(answers).toBe(0);
    expect(session.reachSteps).toBeLessThanOrEqual(f.main.length + f.other.length + 1);
    // a have on main's history settles it
    expect(await session.have(f.main[10] as ObjectId)).toBe(true);
    expect(await session.okToGiveUp()).toBe(true);
    expect(session.reachSteps).toBeLessThanOrEqual(f.main.length + f.other.length + 1);
  });

  it('v0: 30,000 unknown haves get no ACK; the common one is acknowledged and the pack is complete', async () => {
    const parts = [line(`want ${f.main.at(-1)} multi_ack_detailed no-progress`), FLUSH];
    parts.push(line(`have ${f.other.at(-1)}`));
    for (let i = 0; i < 30_000; i++) parts.push(line(`have ${unknown(i)}`));
    parts.push(line('done'));
    const { bytes, outcome } = await post(f.repo, concatBytes(parts));
    expect(outcome).toBeUndefined();
    const { lines, packObjects } = await reply(bytes);
    expect(lines).toEqual([`ACK ${f.other.at(-1)} common`, `ACK ${f.other.at(-1)}`]);
    expect(packObjects).toBe(3000 * 3);
  });

  it('v2: 30,000 unknown haves in one round; only the common one is acknowledged', async () => {
    const parts = [line('command=fetch'), DELIM, line(`want ${f.main.at(-1)}`), line(`have ${f.other.at(-1)}`)];
    for (let i = 0; i < 30_000; i++) parts.push(line(`have ${unknown(i)}`));
    parts.push(FLUSH);
    const { bytes, outcome } = await post(f.repo, concatBytes(parts), 2);
    expect(outcome).toBeUndefined();
    expect((await reply(bytes)).lines).toEqual(['acknowledgments', `ACK ${f.other.at(-1)}`, 'flush']);
  });
});

describe('ls-refs ref-prefix', () => {
  async function lsRefs(prefixes: readonly string[]): Promise<string[]> {
    const parts = [line('command=ls-refs'), DELIM, ...prefixes.map((p) => line(`ref-prefix ${p}`)), FLUSH];
    const { bytes, outcome } = await post(f.repo, concatBytes(parts), 2);
    expect(outcome).toBeUndefined();
    const { lines } = await reply(bytes);
    expect(lines.at(-1)).toBe('flush');
    return lines.slice(0, -1).map((l) => l.slice(41));
  }

  it('50,000 prefixes over 25,000 refs list exactly the refs they select', async () => {
    const prefixes: string[] = [];
    for (let i = 0; i < 50_000; i += 2) prefixes.push(`refs/tags/${tagName(i)}`);
    for (let i = 0; i < 25_000; i++) prefixes.push(`refs/nothing/${i}`);
    const expected: string[] = [];
    for (let i = 0; i < 25_000; i += 2) expected.push(`refs/tags/${tagName(i)}`);
    expect(await lsRefs(prefixes)).toEqual(expected);
  });

  it('overlapping prefixes select the union', async () => {
    expect(await lsRefs(['refs/tags/t2499', 'refs/tags/t24999', 'refs/heads/o', 'H'])).toEqual([
      'HEAD',
      'refs/heads/other',
      ...Array.from({ length: 10 }, (_, i) => `refs/tags/t2499${i}`),
    ]);
  });

  it("from git's 65,536th prefix on, the prefixes are dropped and every ref is listed", async () => {
    const none = Array.from({ length: 65_535 }, (_, i) => `refs/nothing/${i}`);
    expect(await lsRefs(none)).toEqual([]);
    const all = await lsRefs([...none, 'refs/nothing/more']);
    expect(all.length).toBe(1 + 2 + 25_000);
    expect(all.slice(0, 3)).toEqual(['HEAD', 'refs/heads/main', 'refs/heads/other']);
  });
});

describe('request size', () => {
  it('past 16 MiB of ref-prefix values, ls-refs lists every ref (as past too many prefixes)', async () => {
    const long = 'refs/nothing/'.padEnd(60_000, 'x');
    const under = [line('command=ls-refs'), DELIM, ...Array.from({ length: 270 }, () => line(`ref-prefix ${long}`))];
    const listed = async (parts: Uint8Array[]) => {
      const { bytes, outcome } = await post(f.repo, concatBytes([...parts, FLUSH]), 2);
      expect(outcome).toBeUndefined();
      return (await reply(bytes)).lines.length - 1;
    };
    expect(await listed(under)).toBe(0);
    expect(await listed([...under, ...Array.from({ length: 20 }, () => line(`ref-prefix ${long}`))])).toBe(25_003);
  });

  it('a v2 request with more than 1 MiB of capability lines is refused with a typed error', async () => {
    const parts = [line('command=ls-refs')];
    for (let i = 0; i < 20; i++) parts.push(line(`agent=${'x'.repeat(60_000)}`));
    parts.push(DELIM, FLUSH);
    const { outcome } = await post(f.repo, concatBytes(parts), 2);
    expect(outcome).toMatchObject({ code: 'PROTOCOL_LIMIT' });
  });
});

describe('deepen-not and shallow', () => {
  it('25,000 deepen-not refs: the refs are listed once and each name resolved once', async () => {
    const { refs, calls } = countingRefs(f.repo.refs);
    const repo = { objects: f.repo.objects, refs };
    const parts = [line(`want ${f.main.at(-1)} multi_ack_detailed no-progress`)];
    // tags t00000..t01499 point at main[0..1499]; each is named several times
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 1500; i++) parts.push(line(`deepen-not ${tagName(i)}`));
    }
    for (let i = 0; i < 19_000; i++) parts.push(line(`deepen-not refs/tags/${tagName(i % 1500)}`));
    parts.push(FLUSH, line('done'));
    const { bytes, outcome } = await post(repo, concatBytes(parts));
    expect(outcome).toBeUndefined();
    const { lines, packObjects } = await reply(bytes);
    expect(lines).toEqual([`shallow ${f.main[1500]}`, 'flush', 'NAK']);
    expect(packObjects).toBe(1500 * 3);
    expect(calls.list).toBeLessThanOrEqual(2);
    // the short names are first tried as given (outside refs/), once each
    expect(calls.resolve).toBeLessThanOrEqual(1500 + 2);
  });

  it('100,000 shallow lines naming unknown objects are ignored, as git does', async () => {
    const session = new UploadSession(f.repo, {});
    for (let i = 0; i < 100_000; i++) await session.addShallow(unknown(i));
    expect(session.clientShallow.size).toBe(0);
    await session.addShallow(f.main[5] as ObjectId);
    expect([...session.clientShallow]).toEqual([f.main[5]]);
    const commit = await f.repo.objects.read(f.main[5] as ObjectId);
    const tree = new TextDecoder().decode(commit?.data).slice(5, 45);
    await expect(session.addShallow(tree)).rejects.toMatchObject({ code: 'PROTOCOL_BAD_LINE' });
  });

  it('v2: a fetch with only unknown shallow lines has no shallow-info section', async () => {
    const parts = [line('command=fetch'), DELIM, line(`want ${f.other.at(-1)}`), line('no-progress')];
    for (let i = 0; i < 20_000; i++) parts.push(line(`shallow ${unknown(i)}`));
    parts.push(line('done'), FLUSH);
    const { bytes, outcome } = await post(f.repo, concatBytes(parts), 2);
    expect(outcome).toBeUndefined();
    expect(new TextDecoder().decode(bytes.subarray(0, 40))).toMatch(/^000dpackfile\n/);
  });

  it('a v2 request with more than 1,000 capability lines is refused with a typed error', async () => {
    const parts = [line('command=ls-refs')];
    for (let i = 0; i < 1001; i++) parts.push(line(`agent=x${i}`));
    parts.push(DELIM, FLUSH);
    const { outcome } = await post(f.repo, concatBytes(parts), 2);
    expect(outcome).toMatchObject({ code: 'PROTOCOL_LIMIT' });
  });
});
