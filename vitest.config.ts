import { existsSync, readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * Tests run on the TypeScript sources: every workspace package exports a `source`
 * condition pointing at `src/index.ts`, which vite resolves first.
 */
const conditions = ['source', 'module', 'node', 'development|production'];

const packages = readdirSync(new URL('./packages', import.meta.url)).filter((name) =>
  existsSync(new URL(`./packages/${name}/package.json`, import.meta.url)),
);

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['source'] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      ...packages.map((name) => ({
        extends: true as const,
        test: { name, include: [`packages/${name}/src/**/*.test.ts`] },
      })),
      { extends: true as const, test: { name: 'tests', include: ['tests/src/**/*.test.ts'] } },
      { extends: true as const, test: { name: 'benchmarks', include: ['benchmarks/*.test.ts'] } },
      'tests/browser/vitest.config.ts',
    ],
  },
});
