/**
 * The suite runner (run.mjs) against fixture bench files (benchmarks/fixtures/): rows collected
 * with their ratios, goals judged, a broken file reported and failing the run, quick mode
 * passed to the files, and a well-formed chart.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];

async function runSuite(args: string[]): Promise<{ code: number; out: string; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-bench-run-'));
  dirs.push(dir);
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.GITPORT_BENCH_QUICK;
  delete env.GITPORT_BENCH_ROWS;
  const child = spawn(process.execPath, ['benchmarks/run.mjs', '--dir', 'benchmarks/fixtures', '--out', dir, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, out, dir };
}

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('benchmarks/run.mjs', () => {
  it('collects rows, reports broken bench files and exits non-zero for them', async () => {
    const { code, dir } = await runSuite([]);
    expect(code).toBe(1);
    const results = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8'));
    expect(results.rows).toEqual([
      {
        id: 'pktline.fixture.mbps',
        value: 300,
        unit: 'MB/s',
        peer: 'peer | x',
        peerValue: 100,
        ratio: 3,
        better: 'higher',
      },
      { id: 'pktline.fixture.ms', value: 2, unit: 'ms', peer: 'peer', peerValue: 8, ratio: 0.25, better: 'lower' },
    ]);
    expect(results.files.map((f: { file: string; ok: boolean }) => [f.file, f.ok])).toEqual([
      ['benchmarks/fixtures/ok.bench.ts', true],
      ['benchmarks/fixtures/throws.bench.ts', false],
      ['benchmarks/fixtures/unloadable.bench.ts', false],
    ]);
    const md = await readFile(join(dir, 'RESULTS.md'), 'utf8');
    expect(md).toContain(
      '| `pktline.fixture.mbps` | 300.0 | MB/s | peer \\| x | 100.0 | 3.00 | higher | 3.00× | ≥ 1000 (fixture): not met |',
    );
    expect(md).toContain('| `pktline.fixture.ms` | 2.00 | ms | peer | 8.00 | 0.250 | lower | 4.00× |');
    expect(md).toContain('2 figures; 2 beside a peer: gitport ahead in 2, behind in 0; goals met: 0 of 1.');
    expect(md).toContain('## Failures');
    expect(md).toContain('fixture: broken bench');
    expect(md).toContain('fixture: cannot load');
    expect(md).toContain('| `benchmarks/fixtures/ok.bench.ts` | ok |');
    const svg = await readFile(join(dir, 'chart.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/fill="#2e8b57"/g)).toHaveLength(2); // both rows: gitport ahead
    expect(svg).toContain('peer | x');
  });

  it('exits 0 when every file works, slow figures and unmet goals included; --quick reaches the files', async () => {
    const { code, dir } = await runSuite(['--quick', 'ok.bench']);
    expect(code).toBe(0);
    const results = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8'));
    expect(results.quick).toBe(true);
    expect(results.rows).toHaveLength(2);
    const md = await readFile(join(dir, 'RESULTS.md'), 'utf8');
    expect(md).toContain('Quick smoke run');
    expect(md).toMatch(/\| `pktline\.fixture\.ms` .*\| quick \|$/m);
  });
});
