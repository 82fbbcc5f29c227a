/**
 * The packages as a user meets them: packed into tarballs (`pnpm pack`, as publishing does),
 * checked by publint and arethetypeswrong, installed into a fresh app outside the workspace,
 * typechecked with a plain `lib: ES2022` and built with Vite's defaults, then run in Chromium:
 * one worker hosts a repository, another clones it into memory and OPFS, commits and pushes; a
 * third clones, commits and pushes over HTTP through `gitport serve` (the packed CLI, `--cors`).
 * Workers that only clone or only host (read-only) stay within a size budget.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { chromium } from 'playwright-core';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const appSources = fileURLToPath(new URL('../../packaging/app', import.meta.url));
const budgetSources = fileURLToPath(new URL('../../packaging/budget', import.meta.url));

/**
 * The most a worker that clones, or one that hosts, with MemoryFs may weigh once built with
 * Vite's defaults and gzipped (what a browser downloads), every chunk it loads included, using
 * the lighter entry points (`busRemote`, `hostReadOnly`): a ceiling that only comes down as the
 * packages lose weight.
 */
const WORKER_BUDGETS: Record<string, number> = { clone: 60 * 1024, host: 60 * 1024 };
const require = createRequire(import.meta.url);

interface Tarball {
  file: string;
  name: string;
  bytes: Uint8Array;
  manifest: PackageManifest;
  entries: string[];
}

interface PackageManifest {
  name: string;
  license?: string;
  repository?: unknown;
  homepage?: string;
  engines?: { node?: string };
  sideEffects?: unknown;
  exports: Record<string, string | Record<string, string>>;
}

let scratch: string;
let tarballs: Tarball[];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'gitport-packed-'));
  const destination = join(scratch, 'tarballs');
  await run('pnpm', ['-r', '--filter', './packages/*', 'pack', '--pack-destination', destination], { cwd: repoRoot });
  tarballs = [];
  for (const file of (await readdir(destination)).filter((name) => name.endsWith('.tgz')).sort()) {
    const path = join(destination, file);
    const { stdout: listing } = await run('tar', ['tzf', path]);
    const { stdout: manifest } = await run('tar', ['xzOf', path, 'package/package.json']);
    const parsed = JSON.parse(manifest) as PackageManifest;
    const entries = listing
      .split('\n')
      .filter(Boolean)
      .map((entry) => entry.replace(/^package\//, ''));
    tarballs.push({
      file: path,
      name: parsed.name,
      bytes: new Uint8Array(await readFile(path)),
      manifest: parsed,
      entries,
    });
  }
}, 300_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the packed packages', () => {
  it('are every package of the workspace', async () => {
    const workspace = await readdir(join(repoRoot, 'packages'));
    expect(tarballs.map((tarball) => tarball.name).sort()).toEqual(
      await Promise.all(
        workspace.map(
          async (dir) =>
            (JSON.parse(await readFile(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as PackageManifest)
              .name,
        ),
      ).then((names) => names.sort()),
    );
  });

  it('carry their metadata, README and LICENSE, and no build or test leftovers', () => {
    for (const { name, manifest, entries } of tarballs) {
      expect(manifest, name).toMatchObject({ license: 'MIT', sideEffects: false, engines: { node: '>=20.19' } });
      expect(manifest.repository, name).toBeDefined();
      expect(manifest.homepage, name).toMatch(/^https:\/\//);
      expect(entries, name).toContain('README.md');
      expect(entries, name).toContain('LICENSE');
      const leftovers = entries.filter(
        (entry) => /\.tsbuildinfo$/.test(entry) || /(^|\/)test-[^/]*$/.test(entry) || /\.test\.[jt]s$/.test(entry),
      );
      expect(leftovers, name).toEqual([]);
    }
  });

  it('export only files they carry, JavaScript and declarations from dist/', () => {
    for (const { name, manifest, entries } of tarballs) {
      for (const [subpath, target] of Object.entries(manifest.exports)) {
        for (const [condition, file] of leafConditions(target)) {
          const path = file.replace(/^\.\//, '');
          if (path.includes('*')) {
            // a subpath pattern: some file the package carries matches it
            const pattern = new RegExp(`^${path.split('*').map(escapeRegExp).join('[^/]+')}$`);
            expect(
              entries.some((entry) => pattern.test(entry)),
              `${name} ${subpath} ${condition}`,
            ).toBe(true);
          } else expect(entries, `${name} ${subpath} ${condition}`).toContain(path);
          if (condition === 'types') expect(path, `${name} ${subpath}`).toMatch(/^dist\/.*\.d\.ts$/);
          else if (condition !== 'source' && subpath !== './package.json')
            expect(path, `${name} ${subpath} ${condition}`).toMatch(/^dist\/.*\.js$/);
        }
      }
    }
  });

  it('pass publint (strict, down to suggestions)', async () => {
    for (const { name, bytes } of tarballs) {
      const tarball = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
      const { messages, pkg } = await publint({ pack: { tarball }, level: 'suggestion', strict: true });
      expect(
        messages.map((message) => formatMessage(message, pkg)),
        name,
      ).toEqual([]);
    }
  });

  it('pass arethetypeswrong for ESM consumers (node16 ESM and bundlers)', async () => {
    for (const { name, bytes } of tarballs) {
      const analysis = await checkPackage(createPackageFromTarballData(bytes));
      expect(analysis.types, name).not.toBe(false);
      if (analysis.types === false) continue;
      // The packages are ESM only: CommonJS `require` (node10, node16-cjs) is not offered.
      const problems = analysis.problems.filter(
        (problem) =>
          !('resolutionKind' in problem) ||
          (problem.resolutionKind !== 'node10' && problem.resolutionKind !== 'node16-cjs'),
      );
      expect(problems, name).toEqual([]);
    }
  });
});

describe("the README's browser guide", () => {
  it('is the app this file builds and runs, file by file', async () => {
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const shown = [...readme.matchAll(/<!-- file: ([\w.]+) -->\n```ts\n([\s\S]*?)```\n/g)];
    expect(shown.map(([, name]) => name)).toEqual(['main.ts', 'host.worker.ts', 'client.worker.ts', 'http.worker.ts']);
    for (const [, name, code] of shown) expect(code, name).toBe(await readFile(join(appSources, name!), 'utf8'));
  });

  it('shows the workers held to the size budget, as they are', async () => {
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const shown = [...readme.matchAll(/<!-- budget: ([\w.]+) -->\n```ts\n([\s\S]*?)```\n/g)];
    expect(shown.map(([, name]) => name)).toEqual(Object.keys(WORKER_BUDGETS).map((name) => `${name}.worker.ts`));
    for (const [, name, code] of shown) expect(code, name).toBe(await readFile(join(budgetSources, name!), 'utf8'));
  });
});

describe('a fresh app on the packed packages', () => {
  let app: string;
  let server: Server | undefined;
  let gateway: Gateway | undefined;

  beforeAll(async () => {
    app = join(scratch, 'app');
    await mkdir(app);
    await cp(appSources, app, { recursive: true });
    // the budget's workers sit beside the app's, typechecked with them, built on their own
    for (const name of Object.keys(WORKER_BUDGETS)) {
      await cp(join(budgetSources, `${name}.worker.ts`), join(app, `budget-${name}.worker.ts`));
    }
    // Every gitport package from its tarball, also where one tarball depends on another.
    const fromTarball = Object.fromEntries(tarballs.map(({ name, file }) => [name, `file:${file}`]));
    await writeFile(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'packed-app',
        private: true,
        type: 'module',
        dependencies: { gitport: fromTarball.gitport, '@gitport/bus': fromTarball['@gitport/bus'] },
        devDependencies: { '@gitport/cli': fromTarball['@gitport/cli'] },
        pnpm: { overrides: fromTarball },
      }),
    );
    await run('pnpm', ['install', '--ignore-workspace', '--prefer-offline', '--config.confirmModulesPurge=false'], {
      cwd: app,
      env: { ...process.env, CI: 'true' },
    });
  }, 300_000);

  afterAll(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    if (gateway && gateway.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exit;
    }
  });

  it('typechecks under strict TypeScript with lib ES2022 and DOM, library declarations included', async () => {
    const tsc = join(require.resolve('typescript/package.json'), '..', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', join(app, 'tsconfig.json')], { cwd: app }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe('');
  });

  it("builds with Vite's defaults and clones, commits and pushes between workers and through the gateway in Chromium", async () => {
    const { build } = await loadVite();
    await build({ root: app, configFile: false, logLevel: 'silent' });
    const dist = join(app, 'dist');
    server = await serveStatic(dist);
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    // the gateway as the packed CLI runs it, open to the page's origin, pushes with a token
    const repos = join(scratch, 'repos');
    const token = 'packed-app-token';
    gateway = await startGateway(app, [
      '--root',
      repos,
      '--port',
      '0',
      '--token',
      token,
      '--cors',
      `http://127.0.0.1:${address.port}`,
    ]);
    const demo = join(repos, 'demo.git');
    const before = await git(demo, 'rev-parse', 'refs/heads/main');

    const browser = await chromium.launch({
      executablePath: process.env.GITPORT_CHROMIUM ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
    });
    try {
      const page = await (await browser.newContext()).newPage();
      const query = new URLSearchParams({ remote: `${gateway.url}/demo.git`, token });
      await page.goto(`http://127.0.0.1:${address.port}/?${query}`);
      await page.waitForFunction(
        () =>
          document.querySelector('#result')?.textContent !== '' &&
          document.querySelector('#http-result')?.textContent !== '',
        undefined,
        { timeout: 120_000 },
      );
      const result = JSON.parse((await page.textContent('#result')) ?? '') as {
        ok: boolean;
        error?: string;
        clones: Record<string, { readme: string; pushed: string }>;
        refs: { name: string; oid: string }[];
        updates: { ref: string; new: string }[];
      };
      expect(result.error).toBeUndefined();
      expect(result.ok).toBe(true);
      expect(result.clones.memory?.readme).toBe('# notes\n');
      expect(result.clones.opfs?.readme).toBe('# notes\n');
      const pushed = [result.clones.memory!.pushed, result.clones.opfs!.pushed];
      expect(result.refs).toEqual([{ name: 'refs/heads/main', oid: pushed[1] }]);
      expect(result.updates.map((update) => [update.ref, update.new])).toEqual(
        pushed.map((oid) => ['refs/heads/main', oid]),
      );

      const overHttp = JSON.parse((await page.textContent('#http-result')) ?? '') as {
        ok: boolean;
        error?: string;
        files: string[];
        pushed: string;
      };
      expect(overHttp.error).toBeUndefined();
      expect(overHttp.ok).toBe(true);
      // the work tree of the demo repository's main, then git's own view of the pushed commit
      const tree = (await git(demo, 'ls-tree', '--name-only', before)).split('\n');
      expect(overHttp.files.filter((name) => name !== '.git').sort()).toEqual(tree.sort());
      expect(await git(demo, 'rev-parse', 'refs/heads/main')).toBe(overHttp.pushed);
      expect(await git(demo, 'rev-parse', `${overHttp.pushed}^`)).toBe(before);
      expect(await git(demo, 'show', `${overHttp.pushed}:web.txt`)).toBe('web');
      await git(demo, 'fsck', '--strict', '--no-dangling');
    } finally {
      await browser.close();
    }
  });

  it("keeps a worker that clones, or hosts, with MemoryFs within its gzip budget (Vite's defaults)", async () => {
    const { build } = await loadVite();
    const sizes: Record<string, number> = {};
    for (const name of Object.keys(WORKER_BUDGETS)) {
      const built = (await build({
        root: app,
        configFile: false,
        logLevel: 'silent',
        build: { write: false, rollupOptions: { input: join(app, `budget-${name}.worker.ts`) } },
      })) as BuildOutput | BuildOutput[];
      const chunks = (Array.isArray(built) ? built : [built]).flatMap(({ output }) => output);
      expect(chunks.filter((chunk) => chunk.type === 'chunk').length, name).toBeGreaterThan(0);
      sizes[name] = chunks.reduce((n, chunk) => n + (chunk.type === 'chunk' ? gzipSync(chunk.code).length : 0), 0);
    }
    for (const [name, budget] of Object.entries(WORKER_BUDGETS)) expect(sizes[name], name).toBeLessThanOrEqual(budget);
  });
});

/** What Vite's `build` resolves to with `write: false`: the chunks and assets of each output. */
interface BuildOutput {
  output: ({ type: 'chunk'; fileName: string; code: string } | { type: 'asset'; fileName: string })[];
}

interface Gateway {
  child: ChildProcess;
  url: string;
  exit: Promise<number | null>;
}

/** `gitport serve` from the app's packed `@gitport/cli`, once it printed its listening line. */
function startGateway(app: string, args: string[]): Promise<Gateway> {
  const bin = join(app, 'node_modules', '@gitport', 'cli', 'bin', 'gitport.js');
  const child = spawn(process.execPath, [bin, 'serve', ...args], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const listening = /^gitport listening on (http:\/\/[\d.]+:\d+)\n/.exec(out);
      if (listening) resolve({ child, url: listening[1]!, exit });
    });
    void exit.then((code) => reject(new Error(`gitport serve exited ${code}: ${err}`)));
  });
}

/** Real git on a bare repository, its output trimmed. */
async function git(gitDir: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['--git-dir', gitDir, ...args]);
  return stdout.trim();
}

/** Vite as installed for vitest (the workspace has no direct dependency on it). */
async function loadVite(): Promise<{ build(config: Record<string, unknown>): Promise<unknown> }> {
  const fromVitest = createRequire(require.resolve('vitest/package.json'));
  const vitePackage = fromVitest.resolve('vite/package.json');
  const { exports } = JSON.parse(await readFile(vitePackage, 'utf8')) as { exports: { '.': string } };
  return import(pathToFileURL(join(vitePackage, '..', exports['.'])).href);
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** A static file server for the built app on 127.0.0.1 (a secure context, as OPFS needs). */
async function serveStatic(root: string): Promise<Server> {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname));
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(root)) return void response.writeHead(403).end();
    try {
      const body = await readFile(file);
      response.writeHead(200, { 'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** The [condition, file] leaves of an export target, nested conditions (`node`: {...}) flattened. */
function leafConditions(target: unknown): [string, string][] {
  if (typeof target === 'string') return [['default', target]];
  return Object.entries(target as Record<string, unknown>).flatMap(([condition, value]) =>
    typeof value === 'string' ? [[condition, value] as [string, string]] : leafConditions(value),
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
