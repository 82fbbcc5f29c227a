/**
 * `git http-backend` behind node:http (tests/src/gateway/http-backend.ts) in a process of its own,
 * so that benchmarks/scale.bench.ts can measure git's server side (this process and the git
 * processes it starts) the way it measures `gitport serve`. Prints `listening on <url>`; SIGTERM
 * closes it.
 */
import { startHttpBackend } from '../../tests/src/gateway/http-backend.js';

const root = process.argv[2];
if (!root) throw new Error('usage: http-backend-server.ts <root>');
const server = await startHttpBackend(root);
process.stdout.write(`listening on ${server.url}\n`);
process.once('SIGTERM', () => {
  server.close().then(() => process.exit(0));
});
