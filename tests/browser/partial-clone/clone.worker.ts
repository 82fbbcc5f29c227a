/**
 * A Web Worker that clones a repository from the gateway over smart HTTP into OPFS and shows
 * HEAD's tree (the paths of its files) as soon as it can:
 *   - `partial`: gitport, `filter: 'blob:none'`; then one file is opened, its blob fetched lazily;
 *   - `full`: gitport, a whole clone;
 *   - `isomorphic-git`: isomorphic-git's clone (it has no partial clone) without checkout, then
 *     its `listFiles` of HEAD.
 * `firstViewMs` runs from the clone's start to the tree's paths in hand: gitport lists them from
 * the clone's `onHeadView` (from the pack, while the clone goes on), then checks that the
 * finished clone lists the same.
 */
import '../worker-globals.js';
import { GitFs, isGitportError, isPromisorStore, listFiles, OpfsFs, readFile, remote } from 'gitport';
import * as git from 'isomorphic-git';
import http from 'isomorphic-git/http/web';

export interface CloneRequest {
  mode: 'partial' | 'full' | 'isomorphic-git';
  /** The repository's URL (same origin as the page). */
  url: string;
  /** partial: the filter (default `blob:none`). */
  filter?: string;
  /** A file of HEAD's tree to open after the first view (partial mode). */
  open?: string;
  /** Report the phases of the first view (`trace`): HTTP requests and file-system calls. */
  trace?: boolean;
}

/** One phase of a traced first view, in ms from the clone's start. */
export interface TraceEvent {
  what: string;
  start: number;
  /** HTTP: when the response's first byte came. */
  firstByte?: number;
  end: number;
}

export interface CloneReport {
  error?: string;
  firstViewMs?: number;
  /** Of `firstViewMs`, the clone's part (until it resolved). */
  cloneMs?: number;
  /** Bytes of the clone's responses (gitport's transfer count; isomorphic-git: the stored pack). */
  bytes?: number;
  paths?: number;
  samplePaths?: string[];
  /** gitport: whether the clone's view came from the pack (`onHeadView`'s `early`). */
  viewEarly?: boolean;
  /** gitport: whether HEAD's files were listed before the clone resolved. */
  viewBeforeClone?: boolean;
  /** partial: the code of a read of `open` with `{ lazy: false }` before it was fetched. */
  missingCode?: string;
  /** partial: the opened file's text, and how long its lazy fetch took. */
  opened?: string;
  openMs?: number;
  lazyFetches?: number;
  config?: string;
  promisorFiles?: number;
  /** With `trace`: the HTTP requests and file-system calls of the first view, in start order. */
  trace?: TraceEvent[];
}

/** `fs` with each call of its `promises` recorded in `events` (times from `origin()`). */
function tracedFs(fs: OpfsFs, events: TraceEvent[], origin: () => number): OpfsFs {
  const promises = new Proxy(fs.promises, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const start = performance.now() - origin();
        try {
          return await value.apply(target, args);
        } finally {
          events.push({ what: `fs.${String(key)} ${String(args[0])}`, start, end: performance.now() - origin() });
        }
      };
    },
  });
  return new Proxy(fs, { get: (target, key) => (key === 'promises' ? promises : Reflect.get(target, key)) });
}

/** The HTTP requests made since `origin` (Resource Timing), as trace events. */
function httpEvents(origin: number): TraceEvent[] {
  return (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
    .filter((e) => e.startTime >= origin)
    .map((e) => ({
      what: `http ${e.name.replace(/^.*\/git\//, '')}`,
      start: e.startTime - origin,
      firstByte: e.responseStart - origin,
      end: e.responseEnd - origin,
    }));
}

async function packBytes(fs: GitFs, gitDir: string): Promise<number> {
  let total = 0;
  for (const name of await fs.list(`${gitDir}/objects/pack`)) {
    if (name.endsWith('.pack')) total += (await fs.stat(`${gitDir}/objects/pack/${name}`))?.size ?? 0;
  }
  return total;
}

async function run(request: CloneRequest): Promise<CloneReport> {
  const events: TraceEvent[] = [];
  let origin = 0;
  const raw = request.trace ? tracedFs(new OpfsFs(), events, () => origin) : new OpfsFs();
  const fs = new GitFs(raw);
  const dir = `/partial-${request.mode}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}.git`;
  try {
    if (request.mode === 'isomorphic-git') {
      const start = performance.now();
      await git.clone({ fs: raw, http, dir, gitdir: dir, url: request.url, noCheckout: true, singleBranch: false });
      const cloneMs = performance.now() - start;
      const paths = await git.listFiles({ fs: raw, dir, gitdir: dir, ref: 'HEAD' });
      const firstViewMs = performance.now() - start;
      return {
        firstViewMs,
        cloneMs,
        paths: paths.length,
        samplePaths: paths.slice(0, 5),
        bytes: await packBytes(fs, dir),
      };
    }
    let bytes = 0;
    performance.clearResourceTimings();
    const start = performance.now();
    origin = start;
    // the first view: HEAD's files as the clone's view gives them (from the pack while the
    // clone goes on, or from the finished clone when the pack has no trees)
    let shown: { paths: readonly string[]; at: number; early: boolean; listed: Promise<string[]> } | undefined;
    const repository = await remote(request.url).clone(fs, dir, {
      ...(request.mode === 'partial' ? { filter: request.filter ?? 'blob:none' } : {}),
      onProgress: (event) => {
        if (event.phase === 'transfer' && event.loaded !== undefined) bytes = event.loaded;
      },
      onHeadView: (view) => {
        shown = {
          paths: view.paths,
          at: performance.now() - start,
          early: view.early,
          listed: listFiles(view, 'HEAD'),
        };
      },
    });
    const cloneMs = performance.now() - start;
    if (shown === undefined) throw new Error('the clone gave no view of HEAD');
    const view = shown;
    const firstViewMs = view.at;
    // the view's own listing and the finished clone's list the same files
    const paths = await listFiles(repository, 'HEAD');
    const listed = await view.listed;
    if (paths.join('\n') !== view.paths.join('\n') || listed.join('\n') !== view.paths.join('\n')) {
      throw new Error('the first view and the clone list different files');
    }
    const report: CloneReport = {
      firstViewMs,
      cloneMs,
      bytes,
      paths: paths.length,
      samplePaths: paths.slice(0, 5),
      viewEarly: view.early,
      viewBeforeClone: view.at < cloneMs,
    };
    if (request.trace) {
      report.trace = [
        ...events,
        ...httpEvents(start),
        { what: 'clone', start: 0, end: cloneMs },
        { what: 'first view', start: view.at, end: view.at },
      ].sort((a, b) => a.start - b.start);
    }
    if (request.mode === 'partial' && request.open !== undefined) {
      try {
        await readFile(repository, 'HEAD', request.open, { lazy: false });
        report.missingCode = 'none';
      } catch (error) {
        report.missingCode = isGitportError(error) ? error.code : String(error);
      }
      const openStart = performance.now();
      const data = await readFile(repository, 'HEAD', request.open);
      report.openMs = performance.now() - openStart;
      report.opened = new TextDecoder().decode(data);
      report.lazyFetches = isPromisorStore(repository.objects) ? repository.objects.fetches : -1;
      report.config = (await fs.readText(`${dir}/config`)) ?? '';
      report.promisorFiles = (await fs.list(`${dir}/objects/pack`)).filter((n) => n.endsWith('.promisor')).length;
    }
    return report;
  } finally {
    await fs.removeTree(dir).catch(() => {});
  }
}

self.onmessage = async (event: MessageEvent<CloneRequest>) => {
  try {
    self.postMessage(await run(event.data));
  } catch (error) {
    self.postMessage({ error: `${(error as { code?: string }).code ?? ''} ${(error as Error).stack ?? error}` });
  }
};
