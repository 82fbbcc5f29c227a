import { defineConfig } from 'vitest/config';

/**
 * The performance suite: `vitest bench` over every `benchmarks/**\/*.bench.ts`, on the package
 * sources (the `source` export condition, as in the root config). Run it through
 * `pnpm bench` (benchmarks/run.mjs), which also writes results.json, RESULTS.md and chart.svg.
 */
const conditions = ['source', 'module', 'node', 'development|production'];

export default defineConfig({
  root: new URL('..', import.meta.url).pathname,
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['source'] } },
  test: {
    include: [],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // Figures from bench files running side by side on 2 cores would measure each other.
    fileParallelism: false,
    // Memory figures call gc() before sampling (process.memoryUsage()).
    pool: 'forks',
    execArgv: ['--expose-gc'],
    benchmark: { include: ['benchmarks/**/*.bench.ts'], exclude: ['**/node_modules/**'] },
  },
});
