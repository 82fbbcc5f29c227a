/**
 * The browser project: tests under `tests/browser/` run in real headless Chromium (Debian's
 * `/usr/bin/chromium`, never a downloaded browser) through vitest browser mode and
 * `@vitest/browser-playwright`. Packages resolve to their TypeScript sources (`source`
 * condition), exactly as in the Node projects.
 */
import { playwright } from '@vitest/browser-playwright';
import { defineProject } from 'vitest/config';

const conditions = ['source', 'browser', 'module', 'import', 'development|production'];

export default defineProject({
  resolve: { conditions },
  worker: { format: 'es' },
  optimizeDeps: { include: ['isomorphic-git', 'comlink', '@isomorphic-git/lightning-fs', 'buffer'] },
  test: {
    name: 'browser',
    include: ['**/*.test.ts'],
    // OPFS on the main thread costs milliseconds per file operation; the 2,000-ref conformance test needs time.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({
        launchOptions: {
          executablePath: process.env.GITPORT_CHROMIUM ?? '/usr/bin/chromium',
          args: [
            '--no-sandbox',
            '--disable-gpu',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        },
      }),
      instances: [{ browser: 'chromium' }],
    },
  },
});
