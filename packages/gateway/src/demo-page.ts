/**
 * The demo page `gitport serve` shows at `/`: it lists the repositories, clones one into the
 * page's Web Worker (OPFS) with gitport over smart HTTP, shows its log and HEAD's tree, and
 * follows pushes live through `/<name>.git/events`.
 *
 *   GET /                            the page (text/html)
 *   GET /demo/app.js                 the page's script (text/javascript, bundled at build time)
 *   GET /demo/worker.js              the worker: gitport itself (text/javascript)
 *   GET /demo/repositories.json      the repository names (application/json)
 *
 * Every reply says exactly what it is (`X-Content-Type-Options: nosniff`), and the page may load
 * scripts, workers and connections from its own origin only (Content-Security-Policy). Other
 * paths are not the page's: `answer` returns undefined and the gateway routes them.
 */
import type { GatewayReply } from './reply.js';
import type { GatewayRequest } from './request.js';

export interface DemoPageOptions {
  /** The names of the repositories served. */
  listRepositories(): Promise<string[]>;
  /** The bundled script `app.js` or `worker.js`, or undefined when the build has none. */
  readAsset(name: DemoAsset): Promise<Uint8Array | undefined>;
}

export type DemoAsset = 'app.js' | 'worker.js';

export type DemoPage = (request: GatewayRequest) => Promise<GatewayReply> | undefined;

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self'",
  "connect-src 'self'",
  "style-src 'unsafe-inline'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const encoder = new TextEncoder();

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gitport</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1d1d1f; }
  h1 { font-size: 1.4rem; margin-bottom: .2rem; }
  .lead { color: #555; margin-top: 0; }
  #repositories button { margin: 0 .4rem .4rem 0; padding: .35rem .8rem; font: inherit; cursor: pointer; }
  #repositories button[aria-pressed="true"] { background: #1d1d1f; color: #fff; }
  .columns { display: grid; grid-template-columns: 3fr 2fr; gap: 1.5rem; }
  ol, ul { padding-left: 1.2rem; }
  code, .oid { font-family: ui-monospace, monospace; font-size: .9em; }
  .oid { color: #888; margin-right: .4rem; }
  #status { color: #555; min-height: 1.4em; }
  .live { color: #0a7d32; }
</style>
</head>
<body>
<h1>gitport</h1>
<p class="lead">Git in the browser: this page clones a repository of this server into its Web Worker (OPFS) with gitport over
smart HTTP, and follows every push live.</p>
<section>
  <h2>Repositories</h2>
  <div id="repositories">loading…</div>
  <p>Push to one with git and watch this page: <code id="push-hint">git push http://…/&lt;name&gt;.git</code></p>
</section>
<p id="status" role="status"></p>
<div class="columns">
  <section><h2>Log <span id="head" class="oid"></span></h2><ol id="log"></ol></section>
  <section><h2>Tree</h2><ul id="tree"></ul></section>
</div>
<script type="module" src="/demo/app.js"></script>
</body>
</html>
`;

function reply(status: number, type: string, body: Uint8Array, extra: Record<string, string> = {}): GatewayReply {
  return {
    status,
    headers: {
      'content-type': type,
      'content-length': String(body.byteLength),
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-cache',
      ...extra,
    },
    body: { kind: 'bytes', bytes: body },
  };
}

/** The demo page's routes, for the gateway's `page` option. */
export function createDemoPage(options: DemoPageOptions): DemoPage {
  const page = encoder.encode(PAGE);
  return (request) => {
    const method = request.method.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    const path = pathOf(request.url);
    if (path === '/' || path === '/index.html') {
      return Promise.resolve(
        reply(200, 'text/html; charset=utf-8', page, {
          'content-security-policy': CONTENT_SECURITY_POLICY,
          'referrer-policy': 'no-referrer',
        }),
      );
    }
    if (path === '/demo/repositories.json') {
      return options
        .listRepositories()
        .then((names) => reply(200, 'application/json; charset=utf-8', encoder.encode(JSON.stringify(names))));
    }
    if (path === '/demo/app.js' || path === '/demo/worker.js') {
      const name = path.slice('/demo/'.length) as DemoAsset;
      return options
        .readAsset(name)
        .then((bytes) =>
          bytes === undefined
            ? reply(404, 'text/plain; charset=utf-8', encoder.encode('the demo page was not built\n'))
            : reply(200, 'text/javascript; charset=utf-8', bytes),
        );
    }
    return undefined;
  };
}

function pathOf(url: string): string {
  let start = 0;
  if (!url.startsWith('/')) {
    const scheme = url.indexOf('://');
    start = scheme < 0 ? 0 : url.indexOf('/', scheme + 3);
    if (start < 0) return '/';
  }
  const query = url.indexOf('?', start);
  return url.slice(start, query < 0 ? undefined : query);
}
