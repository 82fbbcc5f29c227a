/**
 * Seeded fuzzing of upload-pack's request parsers (v0 want/shallow/deepen/have lines, the v2
 * command, capability and argument lines, ls-refs and fetch arguments) from real git requests:
 * `git clone`/`git fetch`/`git ls-remote` (v0 and v2, shallow, deepen-not, deepen) are run
 * against git-upload-pack through `--upload-pack "tee <file> | git-upload-pack"`, and what they
 * sent is mutated packet by packet (lines dropped, repeated, swapped, replaced by lines from the
 * request grammar with good and bad values, special packets spliced in, the stream cut short)
 * and byte by byte, then served by gitport from a copy of the same repository. Every request
 * ends with an answer or an error with a stable code; never another exception or a hang, and the
 * answer stays bounded. `GITPORT_FUZZ_RUNS=N` runs N times longer, `GITPORT_FUZZ_SEED` replays one.
 */
import { readFile } from 'node:fs/promises';
import { decodePackets, encodePacket, type Packet } from '@gitport/pktline';
import { Capabilities, type Connection, serveUploadPack } from '@gitport/protocol';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRepository, type MemoryRepository } from './helpers.js';

const STABLE_CODE = /^(?:PROTOCOL|PKTLINE|PACK|OBJECT|REF)_[A-Z0-9_]+$/;
const MAX_ANSWER = 4 << 20;

function parameters(name: string, runs: number): { seed: number; numRuns: number } {
  const seed = Number(process.env.GITPORT_FUZZ_SEED ?? Date.now() % 2_147_483_647);
  const numRuns = runs * Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
  console.log(`${name}: fast-check seed ${seed}, ${numRuns} runs (replay with GITPORT_FUZZ_SEED=${seed})`);
  return { seed, numRuns };
}

let sandbox: GitSandbox;
let repo: MemoryRepository;
const requests = new Map<string, { protocol: 0 | 2; packets: Packet[] }>();
let known: string[] = [];

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-fuzz-upload-');
  const src = sandbox.path('src');
  await sandbox.git(['init', '-q', src]);
  for (let i = 1; i <= 5; i++) {
    await sandbox.exec('sh', ['-c', `echo "line ${i}" >> f.txt`], { cwd: src });
    await sandbox.git(['add', 'f.txt'], { cwd: src });
    await sandbox.git(['commit', '-qm', `c${i}`], { cwd: src });
  }
  await sandbox.git(['tag', '-a', 'v1', '-m', 'v1', 'HEAD~2'], { cwd: src });
  await sandbox.git(['tag', 'light', 'HEAD~1'], { cwd: src });
  await sandbox.git(['branch', 'side', 'HEAD~3'], { cwd: src });
  const url = `file://${src}`;
  const upload = (name: string) => `f() { tee ${sandbox.path(`${name}.req`)} | git-upload-pack "$1"; }; f`;
  const capture = async (name: string, protocol: 0 | 2, args: string[], cwd?: string) => {
    await sandbox.git(['-c', `protocol.version=${protocol}`, ...args.map((a) => a.replace('%UP', upload(name)))], {
      ...(cwd ? { cwd } : {}),
    });
    const bytes = new Uint8Array(await readFile(sandbox.path(`${name}.req`)));
    const packets: Packet[] = [];
    for await (const p of decodePackets(
      (async function* () {
        yield bytes;
      })(),
    )) {
      packets.push(p.kind === 'data' ? { kind: 'data', payload: p.payload.slice() } : p);
    }
    requests.set(name, { protocol, packets });
  };
  await capture('v0-clone', 0, ['clone', '-q', '--upload-pack', '%UP', url, sandbox.path('c0')]);
  await capture('v2-clone', 2, ['clone', '-q', '--upload-pack', '%UP', url, sandbox.path('c2')]);
  await capture('v0-depth', 0, ['clone', '-q', '--depth', '2', '--upload-pack', '%UP', url, sandbox.path('d0')]);
  await capture('v2-exclude', 2, [
    'clone',
    '-q',
    '--shallow-exclude=v1',
    '--upload-pack',
    '%UP',
    url,
    sandbox.path('e2'),
  ]);
  await sandbox.exec('sh', ['-c', 'echo more >> f.txt'], { cwd: src });
  await sandbox.git(['commit', '-qam', 'more'], { cwd: src });
  await capture('v0-fetch', 0, ['fetch', '-q', '--upload-pack', '%UP', 'origin'], sandbox.path('c0'));
  await capture('v2-fetch', 2, ['fetch', '-q', '--upload-pack', '%UP', 'origin'], sandbox.path('c2'));
  await capture('v2-deepen', 2, ['fetch', '-q', '--deepen=1', '--upload-pack', '%UP', 'origin'], sandbox.path('d0'));
  await capture('v2-ls-remote', 2, ['ls-remote', '--upload-pack', '%UP', url]);
  repo = await loadRepository(sandbox, `${src}/.git`);
  known = (await sandbox.git(['rev-list', '--objects', '--all'], { cwd: src })).split('\n').map((l) => l.slice(0, 40));
  known.push(...(await repo.refs.list()).map((r) => r.oid));
}, 120_000);

afterAll(async () => {
  await sandbox?.cleanup();
});

const encoder = new TextEncoder();

/** Serves `bytes` (cut at `cuts`) as one upload-pack exchange; returns the error code, if any. */
async function serve(
  bytes: Uint8Array,
  cuts: readonly number[],
  protocol: 0 | 2,
  stateless: boolean,
): Promise<string | undefined> {
  let written = 0;
  const conn: Connection = {
    input: (async function* () {
      let at = 0;
      for (const cut of cuts) {
        yield bytes.slice(at, cut);
        at = cut;
      }
      yield bytes.slice(at);
    })(),
    write: async (chunk) => {
      written += chunk.byteLength;
      expect(written).toBeLessThanOrEqual(MAX_ANSWER);
    },
    end: async () => {},
  };
  try {
    await serveUploadPack(repo, conn, { protocol, stateless, advertise: false, pack: { deltas: false } });
    return undefined;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !STABLE_CODE.test(code)) throw error;
    return code;
  }
}

const oid = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(...Array.from({ length: 1 }, () => '')).chain(() => fc.constantFrom(...known)),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-f]{40}$/) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', '0'.repeat(40), 'F'.repeat(40), 'z'.repeat(40), '1'.repeat(39), '1'.repeat(41)),
  },
);
const number = fc.constantFrom('1', '2', '0', '-1', '2147483647', '2147483648', '1e3', 'NaN', '', ' 1', '1700000000');
const name = fc.constantFrom('v1', 'light', 'main', 'side', 'refs/heads/main', 'HEAD', 'nope', '', 'refs/', '../x');
const capability = fc.constantFrom(
  'multi_ack',
  'multi_ack_detailed',
  'no-done',
  'side-band',
  'side-band-64k',
  'thin-pack',
  'ofs-delta',
  'no-progress',
  'include-tag',
  'shallow',
  'deepen-relative',
  'agent=git/2.39',
  'agent=',
  'object-format=sha256',
  '=',
  'x=y=z',
);
/** A line from the request grammar (v0 and v2), with good and bad values. */
const grammarLine = fc.oneof(
  fc.tuple(oid, fc.array(capability, { maxLength: 4 })).map(([o, caps]) => `want ${o} ${caps.join(' ')}`.trimEnd()),
  oid.map((o) => `have ${o}`),
  oid.map((o) => `shallow ${o}`),
  number.map((n) => `deepen ${n}`),
  number.map((n) => `deepen-since ${n}`),
  fc.oneof(name, oid).map((n) => `deepen-not ${n}`),
  fc.constantFrom(
    'done',
    'deepen-relative',
    'thin-pack',
    'ofs-delta',
    'include-tag',
    'no-progress',
    'wait-for-done',
    'peel',
    'symrefs',
    'unborn',
    'filter blob:none',
    'command=ls-refs',
    'command=fetch',
    'command=bogus',
    'command=',
    'agent=git/2.39.5',
    'object-format=sha1',
    'server-option=x',
  ),
  fc.oneof(name, fc.string({ maxLength: 12 })).map((p) => `ref-prefix ${p}`),
  capability,
  fc.string({ maxLength: 20 }),
);

type Edit =
  | { kind: 'drop' | 'repeat' | 'cut'; at: number }
  | { kind: 'swap'; at: number; to: number }
  | { kind: 'replace' | 'insert'; at: number; line: string; lf: boolean }
  | { kind: 'special'; at: number; special: 'flush' | 'delim' | 'response-end' };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constantFrom('drop' as const, 'repeat' as const, 'cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), to: fc.nat() }),
  fc.record({
    kind: fc.constantFrom('replace' as const, 'insert' as const),
    at: fc.nat(),
    line: grammarLine,
    lf: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('special' as const),
    at: fc.nat(),
    special: fc.constantFrom('flush' as const, 'delim' as const, 'response-end' as const),
  }),
);

function applyEdits(packets: readonly Packet[], edits: readonly Edit[]): Packet[] {
  const out = [...packets];
  for (const e of edits) {
    const at = out.length === 0 ? 0 : e.at % out.length;
    if (e.kind === 'drop') out.splice(at, 1);
    else if (e.kind === 'repeat' && out[at]) out.splice(at, 0, out[at] as Packet);
    else if (e.kind === 'cut') out.length = at;
    else if (e.kind === 'swap' && out.length > 0) {
      const to = e.to % out.length;
      [out[at], out[to]] = [out[to] as Packet, out[at] as Packet];
    } else if (e.kind === 'replace' || e.kind === 'insert') {
      const text = e.lf ? `${e.line}\n` : e.line;
      const packet: Packet = text === '' ? { kind: 'flush' } : { kind: 'data', payload: encoder.encode(text) };
      out.splice(at, e.kind === 'replace' ? 1 : 0, packet);
    } else if (e.kind === 'special') out.splice(at, 0, { kind: e.special });
  }
  return out;
}

function encodeAll(packets: readonly Packet[]): Uint8Array {
  const parts = packets.map(encodePacket);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

const byteEdit = fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 });

function request() {
  return fc
    .tuple(
      fc.constantFrom(...requests.keys()),
      fc.array(edit, { maxLength: 5 }),
      byteEdit,
      fc.array(fc.nat(), { maxLength: 4 }),
      fc.boolean(),
    )
    .map(([key, edits, bytesEdits, rawCuts, stateless]) => {
      const { protocol, packets } = requests.get(key) as { protocol: 0 | 2; packets: Packet[] };
      const bytes = encodeAll(applyEdits(packets, edits));
      for (const [at, value] of bytesEdits) if (bytes.length > 0) bytes[at % bytes.length] = value;
      const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      return { key, protocol, stateless, bytes, cuts };
    });
}

describe('fuzz: upload-pack requests from real git, mutated', () => {
  it('the captured requests are served as they are', async () => {
    expect([...requests.keys()].sort()).toEqual([
      'v0-clone',
      'v0-depth',
      'v0-fetch',
      'v2-clone',
      'v2-deepen',
      'v2-exclude',
      'v2-fetch',
      'v2-ls-remote',
    ]);
    for (const [key, { protocol, packets }] of requests) {
      expect(await serve(encodeAll(packets), [], protocol, false), key).toBeUndefined();
    }
  });

  it('every mutated request gets an answer or an error with a stable code', async () => {
    const { seed, numRuns } = parameters('upload-pack requests', 200);
    const outcomes = new Map<string, number>();
    const note = (code: string | undefined) =>
      outcomes.set(code ?? 'answered', (outcomes.get(code ?? 'answered') ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(request(), async ({ protocol, stateless, bytes, cuts }) => {
        note(await serve(bytes, cuts, protocol, stateless));
        // the same bytes under the other protocol version, too
        note(await serve(bytes, [], protocol === 2 ? 0 : 2, stateless));
      }),
      { seed, numRuns },
    );
    console.log('upload-pack outcomes:', JSON.stringify(Object.fromEntries([...outcomes].sort())));
    expect(outcomes.get('answered') ?? 0).toBeGreaterThan(0);
  });

  it('capability lists: any first want line parses, and a list round-trips through its text', () => {
    const { seed, numRuns } = parameters('capabilities', 500);
    const word = fc.stringMatching(/^[a-z0-9_-]{1,12}$/);
    const cap = fc.tuple(word, fc.option(fc.stringMatching(/^[!-~]{0,12}$/), { nil: undefined }));
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.array(cap, { maxLength: 10 }), (text, list) => {
        const parsed = Capabilities.parse(text);
        for (const c of parsed.list) {
          expect(c.name).not.toContain(' ');
          expect(parsed.has(c.name)).toBe(true);
        }
        const caps = new Capabilities(
          list.map(([n, v]) => (v === undefined ? { name: n } : { name: n, value: v.replaceAll(' ', '') })),
        );
        expect(Capabilities.parse(caps.toString()).list).toEqual(caps.list);
      }),
      { seed, numRuns },
    );
  });
});
