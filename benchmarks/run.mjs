#!/usr/bin/env node
/**
 * The performance suite runner (`pnpm bench`, after `pnpm build`).
 *
 *   node benchmarks/run.mjs [--quick] [--out <dir>] [--dir <bench dir under the root>] [filter...]
 *
 * Runs `vitest bench --run --config benchmarks/vitest.config.ts` once per `benchmarks/**\/*.bench.ts`
 * file (one process per file, one file at a time, so figures do not disturb each other and a
 * broken file is attributed), then collects the rows the files recorded through
 * `benchmarks/report.ts` into:
 *
 *   results.json  { "rows": [{ id, value, unit, peer, peerValue, ratio, better }], ... }
 *   RESULTS.md    figure, peer figure from the same run, ratio, goal met or not
 *   chart.svg     bar chart of gitport's advantage over each peer (log scale)
 *
 * `--quick` sets GITPORT_BENCH_QUICK=1 (tiny sizes, few iterations: the CI smoke run) and writes
 * its report to benchmarks/.cache/quick/, a filtered run to benchmarks/.cache/partial/, so only a
 * full run replaces the committed report (`--out` chooses another directory). A bench file that fails makes the exit code non-zero; a
 * slow figure, or a goal not met, never does.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(benchDir);

/** Goals stated by the issues, by row id (a row may also carry its own `goal`). */
const GOALS = {
  'pktline.decode.mbps': { min: 1000, source: 'issue 2' },
  'pktline.sideband-demux.mbps': { min: 1000, source: 'issue 2' },
};

/**
 * The rows of the reference transport report (../shared/reference/004_*.txt) that issue 9 asks
 * the suite to reproduce, and which of our row ids answer each.
 */
const REFERENCE_ROWS = [
  { row: 'pack creation, 10 MB+ pack of incompressible blobs', figure: '21.11 MB/s', match: /^pack\.create\./ },
  { row: 'pack import, the same pack', figure: '54.44 MB/s', match: /^pack\.import\./ },
  {
    row: 'MessagePort duplex raw transfer, 10 MB in 64 KB chunks',
    figure: '630 MB/s',
    match: /^transport\.(?!.*concurren)/,
  },
  { row: 'end-to-end fetch over MessagePort, full protocol', figure: '11.43 MB/s', match: /^clone\./ },
  { row: 'ref discovery, 10 branches', figure: '0.05 ms', match: /^refs\./ },
  { row: 'negotiation, 25 commits / 5 new', figure: '0.85 ms', match: /^negotiation\./ },
  { row: 'heap overhead during a 5 MB transfer', figure: '< 50 MB', match: /^memory\.heap\./ },
  { row: 'leak check, repeated create-pack-import cycles', figure: '3.5% variance', match: /^memory\.leak\./ },
  { row: 'pack import concurrency, 10 concurrent', figure: '7.8x time for 10x work', match: /^concurrency\./ },
  { row: 'concurrent MessagePort transfers, 10 x 128 KB', figure: '767 MB/s', match: /^transport\..*concurren/ },
  { row: 'incremental pack size, 5 of 20 commits', figure: '25%', match: /^incremental\./ },
];

function parseArgs(argv) {
  const options = { quick: false, out: undefined, dir: undefined, filters: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') options.quick = true;
    else if (arg === '--out') options.out = argv[++i];
    else if (arg === '--dir') options.dir = argv[++i];
    else if (arg === '--') continue;
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}`);
    else options.filters.push(arg);
  }
  return options;
}

function findBenchFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // fixtures/ holds the runner's own test inputs (benchmarks/run.test.ts), not benchmarks
    if (entry.name === 'node_modules' || entry.name === 'fixtures' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findBenchFiles(path));
    else if (/\.bench\.[cm]?[jt]s$/.test(entry.name)) found.push(path);
  }
  return found.sort();
}

function runFile(file, env, timeoutMs, jsonPath) {
  return new Promise((resolve) => {
    const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
    const config = join(benchDir, 'vitest.config.ts');
    const args = [vitest, 'bench', '--run', '--config', config, '--outputJson', jsonPath, relative(root, file)];
    rmSync(jsonPath, { force: true });
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    // The child leads its own process group (so a timeout can end its workers too): pass Ctrl-C on.
    const onSignal = (signal) => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      process.exit(signal === 'SIGINT' ? 130 : 143);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    let output = '';
    const keep = (chunk) => {
      process.stdout.write(chunk);
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      try {
        // whatever the bench file left running in its process group (servers, git processes)
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is empty: nothing left behind
      }
      const seconds = (performance.now() - started) / 1000;
      const reason = timedOut
        ? `timed out after ${Math.round(timeoutMs / 1000)} s`
        : code !== 0
          ? `exit code ${code ?? signal}`
          : /Unhandled (Errors?|Rejection)/.test(stripAnsi(output))
            ? 'unhandled errors'
            : benchFailures(jsonPath);
      resolve({
        file: relative(root, file),
        ok: !reason,
        reason,
        seconds,
        tail: reason ? lastLines(stripAnsi(output), 30) : '',
      });
    });
  });
}

/**
 * vitest bench exits 0 when a bench function throws or the file fails to load; its JSON report
 * tells: a file without groups did not load, a bench without samples threw.
 */
function benchFailures(jsonPath) {
  if (!existsSync(jsonPath)) return 'no vitest report';
  let report;
  try {
    report = JSON.parse(readFileSync(jsonPath, 'utf8'));
  } catch (error) {
    return `unreadable vitest report (${error.message})`;
  }
  const problems = [];
  for (const file of report.files ?? []) {
    if (!file.groups || file.groups.length === 0) problems.push('no benchmark ran (the file failed to load?)');
    for (const group of file.groups ?? []) {
      for (const b of group.benchmarks ?? []) {
        if (!b.sampleCount) problems.push(`bench "${b.name}" threw or took no sample`);
      }
    }
  }
  if ((report.files ?? []).length === 0) problems.push('no bench file collected');
  return problems.length > 0 ? problems.join('; ') : undefined;
}

function stripAnsi(text) {
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

function lastLines(text, n) {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}

/** Topics in report order (the list `report.ts` checks ids against). */
const TOPIC_ORDER = JSON.parse(readFileSync(new URL('./topics.json', import.meta.url), 'utf8'));

function topicIndex(id) {
  let best = TOPIC_ORDER.length;
  let bestLength = 0;
  TOPIC_ORDER.forEach((topic, i) => {
    if (id.startsWith(`${topic}.`) && topic.length > bestLength) {
      best = i;
      bestLength = topic.length;
    }
  });
  return best;
}

function byTopic(a, b) {
  return topicIndex(a.id) - topicIndex(b.id) || a.id.localeCompare(b.id);
}

function readRows(dir) {
  const rows = new Map();
  const problems = [];
  if (!existsSync(dir)) return { rows: [], problems };
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.jsonl')) continue;
    const lines = readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean);
    for (const line of lines) {
      try {
        const row = JSON.parse(line);
        const earlier = rows.get(row.id);
        if (earlier && earlier.file !== row.file) {
          problems.push(`\`${row.id}\` is recorded by both ${earlier.file} and ${row.file}: ids must be unique`);
        }
        rows.set(row.id, row); // a figure recorded twice by one file: the last recording wins
      } catch (error) {
        problems.push(`${name}: unreadable row (${error.message})`);
      }
    }
  }
  return { rows: [...rows.values()].sort(byTopic), problems };
}

/** How many times better than the peer gitport is (> 1 wins), whichever direction is better. */
export function advantage(row) {
  if (row.ratio === null || row.ratio === undefined || row.ratio <= 0) return null;
  return row.better === 'higher' ? row.ratio : 1 / row.ratio;
}

function goalOf(row) {
  return row.goal ?? GOALS[row.id];
}

/** 'met' | 'not met' | undefined when no goal is stated. */
export function goalStatus(row) {
  const goal = goalOf(row);
  if (!goal) return undefined;
  const subject = goal.on === 'ratio' ? row.ratio : row.value;
  if (subject === null || subject === undefined) return 'not met';
  const okMin = goal.min === undefined || subject >= goal.min;
  const okMax = goal.max === undefined || subject <= goal.max;
  return okMin && okMax ? 'met' : 'not met';
}

function goalText(row) {
  const goal = goalOf(row);
  if (!goal) return '';
  const what = goal.on === 'ratio' ? 'ratio ' : '';
  const parts = [];
  if (goal.min !== undefined) parts.push(`${what}≥ ${goal.min}`);
  if (goal.max !== undefined) parts.push(`${what}≤ ${goal.max}`);
  return `${parts.join(', ')}${goal.source ? ` (${goal.source})` : ''}: ${goalStatus(row)}`;
}

export function fmt(n) {
  if (n === null || n === undefined) return '—';
  const abs = Math.abs(n);
  if (abs >= 1000) return n.toFixed(0);
  if (abs >= 100) return n.toFixed(1);
  if (abs >= 1) return n.toFixed(2);
  if (abs === 0) return '0';
  return n.toPrecision(3);
}

function escapeMd(text) {
  return String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderMarkdown({ rows, files, quick, generated, problems, totalSeconds }) {
  const out = [];
  out.push('# Benchmark results', '');
  out.push(
    `Generated by \`pnpm bench${quick ? ' --quick' : ''}\` on ${generated} (Node ${process.version}, ` +
      `${process.platform}/${process.arch}). Every peer figure comes from the same run. ` +
      '`advantage` is how many times better gitport is than the peer in the direction that wins ' +
      '(ratio for higher-is-better figures, 1/ratio for lower-is-better ones); above 1 gitport wins.',
    '',
  );
  if (quick) out.push('> Quick smoke run (`GITPORT_BENCH_QUICK=1`): tiny sizes, figures are not meaningful.', '');
  const compared = rows.map(advantage).filter((a) => a !== null);
  const judged = rows.map(goalStatus).filter((g) => g !== undefined);
  out.push(
    `${rows.length} figures; ${compared.length} beside a peer: gitport ahead in ${compared.filter((a) => a > 1).length}, ` +
      `behind in ${compared.filter((a) => a < 1).length}; goals met: ${judged.filter((g) => g === 'met').length} of ${judged.length}.`,
    '',
  );
  out.push('![ratios](chart.svg)', '');
  out.push('| id | gitport | unit | peer | peer figure | ratio | better | advantage | goal | note |');
  out.push('| --- | ---: | --- | --- | ---: | ---: | --- | ---: | --- | --- |');
  for (const row of rows) {
    const adv = advantage(row);
    out.push(
      `| \`${row.id}\` | ${fmt(row.value)} | ${escapeMd(row.unit)} | ${escapeMd(row.peer ?? '—')} | ${fmt(row.peerValue)} | ` +
        `${fmt(row.ratio)} | ${row.better} | ${adv === null ? '—' : `${fmt(adv)}×`} | ${escapeMd(goalText(row))} | ` +
        `${escapeMd(row.note ?? '')} |`,
    );
  }
  out.push('', '## The reference transport report, row by row', '');
  out.push('| reference row | reference figure | our figures in this run |');
  out.push('| --- | --- | --- |');
  for (const ref of REFERENCE_ROWS) {
    const ours = rows.filter((r) => ref.match.test(r.id));
    const text =
      ours.length === 0
        ? 'not measured in this run'
        : ours
            .map(
              (r) =>
                `\`${r.id}\` ${fmt(r.value)} ${r.unit}${r.peerValue === null ? '' : ` (${r.peer}: ${fmt(r.peerValue)})`}`,
            )
            .join('<br>');
    out.push(`| ${escapeMd(ref.row)} | ${escapeMd(ref.figure)} | ${escapeMd(text)} |`);
  }
  out.push('', '## Bench files', '');
  if (totalSeconds !== undefined) {
    out.push(
      `${files.length} files in ${totalSeconds.toFixed(0)} s${!quick && totalSeconds > 600 ? ' (over the 10-minute budget)' : ''}.`,
      '',
    );
  }
  out.push('| file | status | seconds | rows |');
  out.push('| --- | --- | ---: | ---: |');
  for (const f of files) {
    const count = rows.filter((r) => `benchmarks/${r.file}` === f.file || f.file.endsWith(`/${r.file}`)).length;
    out.push(
      `| \`${f.file}\` | ${f.ok ? 'ok' : `**FAILED**: ${escapeMd(f.reason)}`} | ${f.seconds.toFixed(1)} | ${count} |`,
    );
  }
  const failed = files.filter((f) => !f.ok);
  if (failed.length > 0 || problems.length > 0) {
    out.push('', '## Failures', '');
    for (const problem of problems) out.push(`- ${problem}`);
    for (const f of failed) out.push(`### \`${f.file}\` (${f.reason})`, '', '```', f.tail, '```', '');
  }
  return `${out.join('\n')}\n`;
}

function escapeXml(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A horizontal bar per row with a peer: log2(advantage), centred on 1× (parity). */
export function renderSvg(rows) {
  const charted = rows.filter((r) => advantage(r) !== null);
  const rowHeight = 22;
  // about 6.6 px per character of 12 px sans-serif
  const labelWidth = Math.max(
    200,
    Math.ceil(Math.max(0, ...charted.map((r) => `${r.id} vs ${r.peer}`.length)) * 6.6) + 16,
  );
  const plotWidth = 520;
  const valueWidth = 80;
  const top = 40;
  const width = labelWidth + plotWidth + valueWidth;
  const height = top + Math.max(1, charted.length) * rowHeight + 30;
  const logs = charted.map((r) => Math.log2(advantage(r)));
  // at most 64x either way on the axis; longer bars are clipped (their label keeps the figure)
  const MAX_SPAN = 6;
  const span = Math.min(MAX_SPAN, Math.max(1, Math.ceil(Math.max(0, ...logs.map(Math.abs)))));
  const x0 = labelWidth + plotWidth / 2;
  const scale = plotWidth / 2 / span;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">gitport vs peer, same run (log scale; right of the line: gitport wins)</text>`,
  ];
  for (let k = -span; k <= span; k++) {
    const x = x0 + k * scale;
    const label = k >= 0 ? `${2 ** k}×` : `1/${2 ** -k}×`;
    parts.push(
      `<line x1="${x}" y1="${top - 6}" x2="${x}" y2="${height - 24}" stroke="${k === 0 ? '#000' : '#ddd'}" stroke-width="${k === 0 ? 1.5 : 1}"/>`,
      `<text x="${x}" y="${height - 10}" text-anchor="middle" fill="#555">${label}</text>`,
    );
  }
  charted.forEach((row, i) => {
    const y = top + i * rowHeight;
    const log = Math.max(-span, Math.min(span, logs[i]));
    const w = Math.abs(log) * scale;
    const x = log >= 0 ? x0 : x0 - w;
    const colour = log >= 0 ? '#2e8b57' : '#c0392b';
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escapeXml(row.id)} <tspan fill="#777">vs ${escapeXml(row.peer)}</tspan></text>`,
      `<rect x="${x.toFixed(1)}" y="${y + 4}" width="${Math.max(1, w).toFixed(1)}" height="${rowHeight - 8}" fill="${colour}"/>`,
      `<text x="${labelWidth + plotWidth + 6}" y="${y + 15}">${escapeXml(fmt(advantage(row)))}×</text>`,
    );
  });
  if (charted.length === 0) {
    parts.push(`<text x="${x0}" y="${top + 15}" text-anchor="middle">no figure with a peer was recorded</text>`);
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const cacheDir = join(benchDir, '.cache');
  // A directory of its own, so that bench files run by hand meanwhile (into .cache/rows) do not mix in.
  const rowsDir = join(cacheDir, `rows-run-${process.pid}`);
  // Only a full, unfiltered run replaces the committed report.
  const outDir =
    options.out ??
    (options.quick
      ? join(cacheDir, 'quick')
      : options.filters.length > 0 || options.dir
        ? join(cacheDir, 'partial')
        : benchDir);
  rmSync(rowsDir, { recursive: true, force: true });
  mkdirSync(rowsDir, { recursive: true });
  mkdirSync(outDir, { recursive: true });

  let files = findBenchFiles(options.dir ? join(root, options.dir) : benchDir);
  if (options.filters.length > 0) files = files.filter((f) => options.filters.some((flt) => f.includes(flt)));
  const env = { ...process.env, GITPORT_BENCH_ROWS: rowsDir };
  if (options.quick) env.GITPORT_BENCH_QUICK = '1';
  const timeoutMs = (options.quick ? 3 : 10) * 60_000;
  // the scale file works on a repository the size of git's own history (its first run also builds it)
  const timeoutOf = (file) => (!options.quick && file.endsWith('scale.bench.ts') ? 60 * 60_000 : timeoutMs);

  const suiteStart = performance.now();
  const results = [];
  for (const file of files) {
    console.log(`\n==> ${relative(root, file)}${options.quick ? ' (quick)' : ''}`);
    results.push(await runFile(file, env, timeoutOf(file), join(cacheDir, `vitest-report-${process.pid}.json`)));
  }

  const totalSeconds = (performance.now() - suiteStart) / 1000;
  const { rows, problems } = readRows(rowsDir);
  const generated = new Date().toISOString();
  const json = {
    rows: rows.map(({ id, value, unit, peer, peerValue, ratio, better }) => ({
      id,
      value,
      unit,
      peer,
      peerValue,
      ratio,
      better,
    })),
    generated,
    quick: options.quick,
    node: process.version,
    seconds: totalSeconds,
    files: results.map(({ file, ok, reason, seconds }) => ({ file, ok, reason: reason ?? null, seconds })),
  };
  writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(
    join(outDir, 'RESULTS.md'),
    renderMarkdown({ rows, files: results, quick: options.quick, generated, problems, totalSeconds }),
  );
  writeFileSync(join(outDir, 'chart.svg'), renderSvg(rows));
  rmSync(rowsDir, { recursive: true, force: true });
  rmSync(join(cacheDir, `vitest-report-${process.pid}.json`), { force: true });

  const failed = results.filter((r) => !r.ok);
  console.log(
    `\n${rows.length} figures from ${results.length} bench files in ${totalSeconds.toFixed(0)} s; report in ${relative(root, outDir) || '.'}/`,
  );
  for (const row of rows) {
    const adv = advantage(row);
    console.log(
      `  ${row.id.padEnd(44)} ${fmt(row.value).padStart(10)} ${row.unit.padEnd(6)} ${adv === null ? '' : `${fmt(adv)}× vs ${row.peer}`}`,
    );
  }
  if (failed.length > 0 || problems.length > 0) {
    for (const f of failed) console.error(`FAILED: ${f.file} (${f.reason})`);
    for (const p of problems) console.error(`PROBLEM: ${p}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
