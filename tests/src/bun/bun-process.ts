/**
 * Bun as a real child process for tests that run under vitest on Node: the `bun` binary of the
 * `bun` dev dependency, `gitport serve` started with it, and Bun's own test runner on a suite
 * file (reported as JUnit XML, read back case by case).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** The `bun` executable the `bun` package installed (its postinstall puts the binary there). */
export const bunBinary = join(dirname(require.resolve('bun/package.json')), 'bin', 'bun.exe');

/** The `gitport` bin as the @gitport/cli package declares it. */
const cliManifest = require.resolve('@gitport/cli/package.json');
const gitportBin = join(dirname(cliManifest), (require(cliManifest) as { bin: { gitport: string } }).bin.gitport);
const workspace = fileURLToPath(new URL('../../..', import.meta.url));

export interface BunServe {
  child: ChildProcess;
  url: string;
  host: string;
  port: number;
  /** What the command said it serves with: `Bun.serve` or `node:http`. */
  adapter: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/**
 * `bun packages/cli/bin/gitport.js serve ARGS` (or `bunx --bun gitport serve ARGS` at the workspace
 * root); resolves once it printed its listening line (stdout)
 * and the Bun version and HTTP server it runs on (stderr).
 */
export function startBunServe(args: readonly string[], via: 'bin' | 'bunx' = 'bin'): Promise<BunServe> {
  // `bunx --bun gitport` (here `bun --bun x`) finds the workspace's linked bin and runs it on Bun
  // despite its `node` shebang
  const command = via === 'bin' ? [gitportBin, 'serve', ...args] : ['--bun', 'x', 'gitport', 'serve', ...args];
  const child = spawn(bunBinary, command, { cwd: workspace, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = /^gitport listening on (http:\/\/([\d.]+):(\d+))\n/.exec(out);
      const runtime = /^gitport: Bun (\S+), (Bun\.serve|node:http)$/m.exec(err);
      if (m && runtime) {
        resolve({
          child,
          url: m[1]!,
          host: m[2]!,
          port: Number(m[3]),
          adapter: runtime[2]!,
          stdout: () => out,
          stderr: () => err,
          exit,
        });
      }
    };
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      check();
    });
    child.stderr!.on('data', check);
    void exit.then((code) => reject(new Error(`bun gitport serve exited ${code}: ${err}`)));
  });
}

export interface BunCase {
  /** The `it` title. */
  name: string;
  /** The enclosing `describe` titles as Bun's report gives them (innermost first). */
  suite: string;
  passed: boolean;
  failure?: string;
}

export interface BunSuiteResult {
  cases: BunCase[];
  exitCode: number | null;
  output: string;
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, '&');
}

/** The cases of a JUnit report: every `<testcase>`, failed when it holds a `<failure>` or `<error>`. */
export function parseJunit(xml: string): BunCase[] {
  const cases: BunCase[] = [];
  const pattern = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const match of xml.matchAll(pattern)) {
    const attributes = match[1]!;
    const name = /\bname="([^"]*)"/.exec(attributes)?.[1] ?? '';
    const suite = /\bclassname="([^"]*)"/.exec(attributes)?.[1] ?? '';
    const body = match[3] ?? '';
    const failure = /<(failure|error)\b[^>]*?(?:message="([^"]*)")?[^>]*?(?:\/>|>)/.exec(body);
    const skipped = /<skipped\b/.test(body);
    cases.push({
      name: unescapeXml(name),
      suite: unescapeXml(suite),
      passed: failure === null && !skipped,
      ...(failure !== null ? { failure: unescapeXml(failure[2] ?? failure[1]!) } : {}),
    });
  }
  return cases;
}

/**
 * Runs `bun test` on suite files (relative to this directory), in one Bun process, with the
 * workspace packages resolved to their sources, and returns each case's outcome.
 */
export async function runBunSuite(files: string | readonly string[], timeoutMs = 120_000): Promise<BunSuiteResult> {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-bun-suite-'));
  const report = join(dir, 'report.xml');
  try {
    const child = spawn(
      bunBinary,
      [
        'test',
        '--conditions=source',
        `--timeout=${timeoutMs}`,
        '--reporter=junit',
        `--reporter-outfile=${report}`,
        ...(typeof files === 'string' ? [files] : files).map((file) => fileURLToPath(new URL(file, import.meta.url))),
      ],
      { cwd: workspace, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout!.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (output += b.toString()));
    const exitCode = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const xml = await readFile(report, 'utf8').catch(() => '');
    return { cases: parseJunit(xml), exitCode, output };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
