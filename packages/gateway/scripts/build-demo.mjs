/**
 * Bundles the demo page's script and worker (src/demo-page/) for browsers into dist/demo/, at
 * package build time, from the packages' built output.
 */
import { build } from 'esbuild';

const src = new URL('../src/demo-page/', import.meta.url).pathname;
const out = new URL('../dist/demo/', import.meta.url).pathname;

await build({
  entryPoints: { app: `${src}app.ts`, worker: `${src}worker.ts` },
  outdir: out,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
});
