/**
 * Runs tests/browser/partial-clone/ in headless Chromium (../http-remote/vite-page.ts), with
 * the dev server proxying `/git/*` to a gateway, so the page's worker clones over smart HTTP
 * from its own origin. Used by the Chromium test beside this file and by
 * benchmarks/partial-clone.bench.ts.
 */
import type { Page } from 'playwright-core';
import type { CloneReport, CloneRequest } from '../../browser/partial-clone/clone.worker.js';
import { openVitePage } from '../http-remote/vite-page.js';

export type { CloneReport, CloneRequest };

/** The page, with `/git/<name>.git` proxied to `gatewayUrl`; `run` clones in a fresh worker. */
export async function withPartialClonePage<T>(
  gatewayUrl: string,
  fn: (
    run: (request: Omit<CloneRequest, 'url'> & { repository: string }) => Promise<CloneReport>,
    page: Page,
  ) => Promise<T>,
): Promise<T> {
  const opened = await openVitePage({
    folder: 'partial-clone',
    proxy: { '/git/': { target: gatewayUrl, rewrite: (path: string) => path.slice('/git'.length) } },
  });
  const { origin, page, errors } = opened;
  try {
    // a reload while `fn` runs (the first worker's imports) runs it again on the reloaded page
    return await opened.load(
      /Execution context was destroyed|navigation/i,
      async () => {
        const run = async ({ repository, ...request }: Omit<CloneRequest, 'url'> & { repository: string }) =>
          (await page.evaluate(
            (r) => (window as unknown as { runPartialClone(r: unknown): Promise<unknown> }).runPartialClone(r),
            { ...request, url: `${origin}/git/${repository}` },
          )) as CloneReport;
        const result = await fn(run, page);
        if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
        return result;
      },
      () => {
        errors.length = 0;
      },
    );
  } finally {
    await opened.close();
  }
}
