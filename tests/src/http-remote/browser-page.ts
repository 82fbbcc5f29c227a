/**
 * The HTTP remote page (tests/browser/http-remote/) in headless Chromium (vite-page.ts): the
 * dev server serves the page and its worker on one origin; the git servers the worker reaches
 * listen on others (CORS). Used by
 * chromium-remote.test.ts and benchmarks/http-remote.bench.ts.
 */
import type { Page } from 'playwright-core';
import { openVitePage } from './vite-page.js';

/** What a worker operation rejected with. */
export interface WorkerFailure {
  code: string;
  message: string;
  data: { status?: number; message?: string } | null;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: WorkerFailure };

export interface HttpRemotePage {
  /** The page's origin (what the git servers allow with CORS). */
  origin: string;
  page: Page;
  /** Runs one operation in the page's worker. */
  run<T>(op: string, args: unknown): Promise<Outcome<T>>;
  /** Runs one operation in the page's worker; a failure throws. */
  call<T>(op: string, args: unknown): Promise<T>;
  /** The ref updates the worker's watchers heard so far. */
  updates(): Promise<{ repo: string; ref: string; old: string; new: string }[]>;
  /** When the worker heard each update (ms since the epoch, fractional; the machine's one clock). */
  arrivals(): Promise<number[]>;
  close(): Promise<void>;
}

export async function openHttpRemotePage(): Promise<HttpRemotePage> {
  const opened = await openVitePage({ folder: 'http-remote' });
  const { origin, page, errors } = opened;
  const call = (op: string, args: unknown) =>
    page.evaluate(([o, a]) => (window as unknown as { call(op: string, a: unknown): Promise<unknown> }).call(o, a), [
      op,
      args,
    ] as const);
  try {
    // the worker has loaded its modules once it answers
    await opened.load(/Execution context was destroyed|navigation|Timeout/i, () => call('unwatch', {}));
  } catch (error) {
    await opened.close();
    throw error;
  }
  const run = <T>(op: string, args: unknown) =>
    page.evaluate(
      ([o, a]) =>
        (window as unknown as { call(op: string, a: unknown): Promise<unknown> }).call(o, a).then(
          (value) => ({ ok: true, value }),
          (error) => ({ ok: false, error }),
        ),
      [op, args] as const,
    ) as Promise<Outcome<T>>;
  return {
    origin,
    page,
    run,
    async call<T>(op: string, args: unknown) {
      const outcome = await run<T>(op, args);
      if (!outcome.ok) throw new Error(`${op}: ${outcome.error.code}: ${outcome.error.message}`);
      if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
      return outcome.value;
    },
    updates: () =>
      page.evaluate(
        () => (window as unknown as { updates: { repo: string; ref: string; old: string; new: string }[] }).updates,
      ),
    arrivals: () => page.evaluate(() => (window as unknown as { arrivals: number[] }).arrivals),
    close: () => opened.close(),
  };
}
