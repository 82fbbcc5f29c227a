/**
 * The main entry is web-only: it bundles for the browser platform, where a bundler refuses Node
 * built-ins, and reaches none of the `@gitport/gateway/node` files. The bundle is then run as a
 * fetch handler (over a real git-process backend handed in from Node), so what a web runtime
 * loads is a working gateway, not only an importable one.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoRepository } from './node/demo-repository.js';
import { createGitProcessBackend } from './node/git-process-backend.js';

const src = fileURLToPath(new URL('.', import.meta.url));
let dir: string;

/** Bundles one entry for the browser, resolving workspace packages to their sources. */
async function bundleForBrowser(entry: string): Promise<{ code: string; metafile: Metafile }> {
  const result = await build({
    entryPoints: [join(src, entry)],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    conditions: ['source'],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return { code: result.outputFiles[0]!.text, metafile: result.metafile };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gitport-web-entry-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('@gitport/gateway main entry', () => {
  it('bundles for the browser without Node built-ins or the node entry', async () => {
    const { metafile } = await bundleForBrowser('index.ts');
    const inputs = Object.keys(metafile.inputs);
    expect(inputs.some((path) => path.endsWith('src/handler.ts'))).toBe(true);
    expect(inputs.filter((path) => /^node:|\/src\/node(\/|\.ts$)|\.node\.ts$/.test(path))).toEqual([]);
  });

  it('is what tells the two entries apart: the node entry does not bundle for the browser', async () => {
    const failure = await bundleForBrowser('node.ts').then(
      () => undefined,
      (error: { errors?: { text: string }[] }) => error,
    );
    expect(failure?.errors?.some((e) => /node:(http|worker_threads|child_process|fs)/.test(e.text))).toBe(true);
  });

  it('serves discovery as a fetch handler from the browser bundle', async () => {
    const { code } = await bundleForBrowser('index.ts');
    const file = join(dir, 'gateway.browser.mjs');
    await writeFile(file, code);
    const web = (await import(pathToFileURL(file).href)) as typeof import('./index.js');
    const root = join(dir, 'root');
    await createDemoRepository(root);
    const gateway = web.createGateway({ backend: createGitProcessBackend({ root }), sse: { heartbeatMs: 0 } });
    try {
      const reply = await gateway.fetch(
        new Request('http://gateway.test/demo.git/info/refs?service=git-upload-pack', {
          headers: { 'git-protocol': 'version=2' },
        }),
      );
      expect(reply.status).toBe(200);
      expect(reply.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
      const expected = execFileSync(
        'git',
        ['upload-pack', '--advertise-refs', '--stateless-rpc', join(root, 'demo.git')],
        {
          env: { ...process.env, GIT_PROTOCOL: 'version=2' },
        },
      );
      expect(new Uint8Array(await reply.arrayBuffer())).toEqual(new Uint8Array(expected));
      const missing = await gateway.fetch(
        new Request('http://gateway.test/nope.git/info/refs?service=git-upload-pack'),
      );
      expect([missing.status, missing.headers.get('x-gitport-error')]).toEqual([404, 'GATEWAY_NOT_FOUND']);
    } finally {
      await gateway.close();
      await gateway.backend.close();
    }
  });
});
