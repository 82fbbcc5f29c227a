/**
 * Fuzzing the pack package's parsers of client bytes: pack entries (headers, zlib streams,
 * deltas and their resolution), delta application, .idx reading, stored packs read back, and
 * commit, tag and tree parsing. Inputs start from real git output (a pack made by
 * `git pack-objects` from a small repository built here, its .idx, its objects) and are
 * truncated, corrupted, spliced, repeated, oversized or random. Every input must give a valid
 * result or a PackError with a string `code`: never another kind of error, a hang, or an
 * allocation past the limits given.
 *
 * Seeded: the seed is printed, GITPORT_FUZZ_SEED replays it. GITPORT_FUZZ_RUNS multiplies the
 * number of runs of every property (brief by default), for longer runs from a script, e.g.
 * `GITPORT_FUZZ_RUNS=50 pnpm exec vitest run tests/src/pack/fuzz.test.ts`.
 */
import { createHash } from 'node:crypto';
import {
  applyDelta,
  createDelta,
  FsObjectStore,
  importPack,
  isPackError,
  MemoryObjectStore,
  type ObjectStoreFs,
  openPackSpool,
  PackIndex,
  PackReader,
  parseCommit,
  parseCommitLinks,
  parseTag,
  parseTree,
  readIdx,
} from '@gitport/pack';
import { createGitSandbox, type GitSandbox } from '@gitport/test-helpers/git';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allObjects } from './helpers.js';

const SEED = process.env.GITPORT_FUZZ_SEED ? Number(process.env.GITPORT_FUZZ_SEED) : (Math.random() * 2 ** 31) >>> 0;
const SCALE = Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
console.log(`pack fuzz: seed ${SEED} (GITPORT_FUZZ_SEED=${SEED} replays it), runs x${SCALE}`);
const runs = (n: number) => ({ seed: SEED, numRuns: n * SCALE });

/** Limits small enough that no input can make a parser allocate much. */
const LIMITS = { maxObjectSize: 1 << 20, maxDeltaResultSize: 1 << 20, maxInflatedBytes: 16 << 20, maxObjects: 4096 };

/** Runs `f`: a valid result, or a PackError with a code; anything else fails the property. */
async function typed<T>(f: () => T | Promise<T>): Promise<T | undefined> {
  try {
    return await f();
  } catch (error) {
    if (!isPackError(error) || typeof error.code !== 'string' || error.code === '') {
      throw new Error(`not a coded PackError: ${String(error)}`, { cause: error });
    }
    return undefined;
  }
}

interface Corpus {
  pack: Uint8Array;
  idx: Uint8Array;
  objects: { type: string; data: Uint8Array }[];
  /** Deltas of the pack with the data of their base. */
  deltas: { base: Uint8Array; delta: Uint8Array }[];
}

let sandbox: GitSandbox;
let corpus: Corpus;

beforeAll(async () => {
  sandbox = await createGitSandbox('gitport-fuzz-');
  const repo = sandbox.path('repo');
  await sandbox.git(['init', '-q', repo]);
  const { writeFile } = await import('node:fs/promises');
  let text = '';
  for (let i = 0; i < 12; i++) {
    text += `line ${i}: ${'some text that deltas well '.repeat(3)}\n`;
    await writeFile(`${repo}/file.txt`, text);
    await writeFile(`${repo}/other-${i % 3}.txt`, `${i}\n${text.slice(0, 200)}`);
    await sandbox.git(['-C', repo, 'add', '-A']);
    await sandbox.git(['-C', repo, 'commit', '-q', '-m', `commit ${i}\n\nbody ${i}`]);
    if (i % 5 === 0) await sandbox.git(['-C', repo, 'tag', '-a', `v${i}`, '-m', `tag ${i}`]);
  }
  const gitDir = `${repo}/.git`;
  const { stdout: pack } = await sandbox.run(
    ['--git-dir', gitDir, 'pack-objects', '--all', '--revs', '--stdout', '-q'],
    {
      input: '',
    },
  );
  await writeFile(sandbox.path('corpus.pack'), pack);
  await sandbox.git(['index-pack', sandbox.path('corpus.pack')]);
  const { readFile } = await import('node:fs/promises');
  const idx = new Uint8Array(await readFile(sandbox.path('corpus.idx')));
  const objects = [...(await allObjects(sandbox, gitDir)).values()];
  // every delta of the pack with its base's data (bases by offset, through an import)
  const store = new MemoryObjectStore();
  const { objects: ids } = await importPack(store, [pack]);
  const byOffset = new Map<number, string>();
  const entries = [];
  let k = 0;
  for await (const e of new PackReader([pack]).entries()) {
    byOffset.set(e.offset, ids[k++]!);
    entries.push(e);
  }
  const deltas: Corpus['deltas'] = [];
  for (const e of entries) {
    if (e.kind === 'whole') continue;
    const baseId = e.kind === 'ofs-delta' ? byOffset.get(e.baseOffset)! : e.baseOid;
    deltas.push({ base: (await store.read(baseId))!.data, delta: e.data.slice() });
  }
  expect(deltas.length).toBeGreaterThan(5);
  expect(objects.some((o) => o.type === 'tag')).toBe(true);
  corpus = { pack, idx, objects, deltas };
});

afterAll(async () => {
  await sandbox?.cleanup();
});

/** Edits of a byte string: flips, truncation, cut-outs, repeats, insertions, random bytes. */
function mutated(source: () => Uint8Array, minEdits = 1): fc.Arbitrary<Uint8Array> {
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
    fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.constantFrom(0, 0x7f, 0x80, 0xff) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 64 }) }),
    fc.record({
      kind: fc.constant('repeat' as const),
      at: fc.nat(),
      n: fc.integer({ min: 1, max: 256 }),
      times: fc.integer({ min: 1, max: 8 }),
    }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 32 }),
    }),
  );
  return fc.array(edit, { minLength: minEdits, maxLength: 4 }).map((edits) => {
    let b: Uint8Array = source().slice();
    for (const e of edits) {
      const at = b.length === 0 ? 0 : e.at % b.length;
      if (e.kind === 'flip' && b.length > 0) b[at]! ^= e.xor;
      else if (e.kind === 'set' && b.length > 0) b[at] = e.byte;
      else if (e.kind === 'truncate') b = b.slice(0, at);
      else if (e.kind === 'cut') b = concat([b.subarray(0, at), b.subarray(at + e.n)]);
      else if (e.kind === 'repeat') {
        const piece = b.subarray(at, at + e.n);
        b = concat([b.subarray(0, at), ...Array.from({ length: e.times + 1 }, () => piece), b.subarray(at + e.n)]);
      } else if (e.kind === 'insert') b = concat([b.subarray(0, at), e.bytes, b.subarray(at)]);
    }
    return b;
  });
}

/**
 * Packs edited as `mutated` does (some not at all), half of them with their trailer made right
 * again: those get past the checksum, into entry resolution and storing.
 */
function mutatedPack(): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(
      mutated(() => corpus.pack, 0),
      fc.boolean(),
    )
    .map(([pack, sign]) => {
      if (!sign || pack.length < 32) return pack;
      const body = pack.subarray(0, pack.length - 20);
      return concat([body, createHash('sha1').update(body).digest()]);
    });
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** `bytes` in pieces cut at the given points. */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % bytes.length)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    out.push(bytes.slice(from, p));
    from = p;
  }
  out.push(bytes.slice(from));
  return out;
}

const varint = (v: number): number[] => {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
};

describe('fuzzing the pack parsers', () => {
  it('pack entries: corrupted, truncated, spliced and repeated packs, in any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedPack(), fc.array(fc.nat(), { maxLength: 6 }), async (pack, cuts) => {
        await typed(async () => {
          let n = 0;
          for await (const e of new PackReader(split(pack, cuts), { limits: LIMITS }).entries()) {
            n++;
            expect(e.end).toBeGreaterThan(e.offset);
          }
          return n;
        });
      }),
      runs(150),
    );
  });

  it('pack import: every entry resolved (deltas, REF bases) or a coded error, store unchanged on error', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedPack(), async (pack) => {
        const store = new MemoryObjectStore();
        const r = await typed(() => importPack(store, [pack], { limits: LIMITS }));
        if (r === undefined) expect(store.size).toBe(0);
      }),
      runs(100),
    );
  });

  it('pack import into a store over .git: a coded error leaves no file; a stored pack agrees with its index', async () => {
    const { mkdtemp, readdir, readFile, rm } = await import('node:fs/promises');
    const fs = await import('node:fs');
    const dir = await mkdtemp(sandbox.path('fs-'));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(mutatedPack(), async (pack) => {
        const gitDir = `${dir}/${n++}`;
        const store = new FsObjectStore(fs, gitDir, { packSpool: openPackSpool });
        const r = await typed(() => importPack(store, [pack], { limits: LIMITS }));
        await store.close();
        const names = await readdir(`${gitDir}/objects/pack`).catch(() => [] as string[]);
        if (r === undefined) {
          expect(names).toEqual([]);
        } else {
          expect(names.sort()).toEqual([`pack-${r.hash}.idx`, `pack-${r.hash}.pack`]);
          const index = new PackIndex(new Uint8Array(await readFile(`${gitDir}/objects/pack/pack-${r.hash}.idx`)));
          expect(index.count).toBe(r.objects.length);
        }
        await rm(gitDir, { recursive: true, force: true });
      }),
      runs(40),
    );
  });

  it('pack entry headers: random bytes after a valid pack header', async () => {
    const header = (count: number) => Uint8Array.of(0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0, count >> 8, count & 255);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4000 }), fc.uint8Array({ maxLength: 300 }), async (count, body) => {
        await typed(async () => {
          for await (const _ of new PackReader([concat([header(count), body])], { limits: LIMITS }).entries()) {
            // entries are read and dropped
          }
        });
      }),
      runs(300),
    );
  });

  it('deltas: real deltas corrupted, and random instructions, applied to their base', async () => {
    const pick = fc.nat().map((i) => corpus.deltas[i % corpus.deltas.length]!);
    await fc.assert(
      fc.asyncProperty(
        pick.chain((d) =>
          fc.tuple(
            fc.constant(d.base),
            mutated(() => d.delta),
          ),
        ),
        async ([base, delta]) => {
          const out = await typed(() => applyDelta(base, delta, LIMITS.maxDeltaResultSize));
          if (out) expect(out).toBeInstanceOf(Uint8Array);
        },
      ),
      runs(300),
    );
    // the base size right, then any result size (up to 2^53) and any instructions
    const sizes = fc.oneof(fc.nat(4096), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
    await fc.assert(
      fc.asyncProperty(pick, sizes, fc.uint8Array({ maxLength: 200 }), async ({ base }, resultSize, ops) => {
        const delta = Uint8Array.from([...varint(base.length), ...varint(resultSize), ...ops]);
        await typed(() => applyDelta(base, delta));
        await typed(() => applyDelta(base, delta, LIMITS.maxDeltaResultSize));
      }),
      runs(300),
    );
  });

  it('deltas: a lying result size allocates nothing large', async () => {
    // a 10-byte delta that declares 900 MiB: refused before the result is allocated
    const base = new Uint8Array(64);
    const delta = Uint8Array.from([...varint(64), ...varint(900 * 2 ** 20), 0x90, 0x40]);
    const before = process.memoryUsage().arrayBuffers;
    await expect(Promise.resolve().then(() => applyDelta(base, delta))).rejects.toMatchObject({
      code: 'PACK_BAD_DELTA',
    });
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 2 ** 20);
    // and deltas made by the encoder round-trip
    const a = new TextEncoder().encode('x'.repeat(5000));
    const b = new TextEncoder().encode(`${'x'.repeat(2500)}y${'x'.repeat(2500)}`);
    expect(applyDelta(a, createDelta(a, b)!)).toEqual(b);
  });

  it('.idx: corrupted, truncated and repeated indexes', async () => {
    await fc.assert(
      fc.asyncProperty(
        mutated(() => corpus.idx),
        fc.boolean(),
        async (idx, verify) => {
          await typed(() => {
            const index = new PackIndex(idx, { verify });
            for (let i = 0; i < Math.min(index.count, 200); i++) {
              const oid = index.oidAt(i);
              index.offsetAt(i);
              index.crcAt(i);
              expect(index.find(oid)).toBeGreaterThanOrEqual(-1);
            }
            return readIdx(idx);
          });
        },
      ),
      runs(200),
    );
    // random bodies behind a valid magic and version
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2000 }), fc.nat(40), async (body, count) => {
        const fanout = new Uint8Array(1024);
        const view = new DataView(fanout.buffer);
        for (let i = 0; i < 256; i++) view.setUint32(i * 4, Math.min(count, Math.floor((i * count) / 200)));
        const idx = concat([Uint8Array.of(0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2), fanout, body]);
        await typed(() => {
          const index = new PackIndex(idx);
          for (const e of index.entries()) index.find(e.oid);
        });
      }),
      runs(200),
    );
  });

  it('stored packs: a corrupted pack read back through its index', async () => {
    const packName = 'pack-fuzz';
    await fc.assert(
      fc.asyncProperty(
        mutated(() => corpus.pack),
        async (pack) => {
          // the index of the real pack beside corrupted pack bytes (a damaged disk, or a pack
          // changed under a reader)
          const files = new Map<string, Uint8Array>([
            [`/r/objects/pack/${packName}.pack`, pack],
            [`/r/objects/pack/${packName}.idx`, corpus.idx],
          ]);
          const store = new FsObjectStore(memoryFs(files), '/r', { maxRebuildBytes: 16 << 20 });
          const index = new PackIndex(corpus.idx);
          for (const e of index.entries()) await typed(() => store.read(e.oid));
        },
      ),
      runs(30),
    );
  });

  it('commits, tags and trees: real objects corrupted, truncated, repeated; random bytes', async () => {
    const of = (type: string) => corpus.objects.filter((o) => o.type === type).map((o) => o.data);
    const parsers: [string, (d: Uint8Array) => unknown][] = [
      ['commit', parseCommit],
      ['commit', parseCommitLinks],
      ['tag', parseTag],
      ['tree', parseTree],
    ];
    for (const [type, parse] of parsers) {
      const real = of(type);
      expect(real.length).toBeGreaterThan(0);
      for (const d of real) expect(parse(d)).toBeTruthy();
      const pick = fc.nat().map((i) => real[i % real.length]!);
      await fc.assert(
        fc.asyncProperty(
          pick.chain((d) => mutated(() => d)),
          async (data) => {
            await typed(() => parse(data));
          },
        ),
        runs(200),
      );
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 400 }), async (data) => {
          await typed(() => parse(data));
        }),
        runs(100),
      );
    }
    // oversized: a header line, a name, a parent list far beyond anything real
    const big = new TextEncoder().encode(
      `tree ${'a'.repeat(40)}\n${`parent ${'b'.repeat(40)}\n`.repeat(20_000)}author ${'<'.repeat(100_000)}\n`,
    );
    await typed(() => parseCommit(big));
    await typed(() => parseCommitLinks(big));
    await typed(() => parseTag(big));
    await typed(() => parseTree(new Uint8Array(200_000).fill(0x31)));
  });
});

/** An in-memory fs with the calls FsObjectStore makes for reading (no positional reads). */
function memoryFs(files: Map<string, Uint8Array>): ObjectStoreFs {
  const missing = (path: string) => Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return {
    async readFile(path) {
      const f = files.get(path);
      if (!f) throw missing(path);
      return f;
    },
    async writeFile(path: string, data: Uint8Array) {
      files.set(path, data);
    },
    async mkdir() {
      return undefined;
    },
    async readdir(path) {
      const prefix = `${path}/`;
      return [...files.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
    },
    async stat(path) {
      const f = files.get(path);
      if (!f) throw missing(path);
      return { size: f.length };
    },
    async rename(from, to) {
      const f = files.get(from);
      if (!f) throw missing(from);
      files.delete(from);
      files.set(to, f);
    },
    async unlink(path) {
      files.delete(path);
    },
  };
}
