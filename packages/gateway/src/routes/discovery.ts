/**
 * Ref discovery: `GET|HEAD /<name>.git/info/refs?service=git-upload-pack | git-receive-pack`
 * (gitprotocol-http, "Smart Clients"). The reply is `application/x-<service>-advertisement`
 * with, in v0/v1, the `PKT-LINE("# service=<service>\n") 0000` header before the advertisement;
 * v2 (a `Git-Protocol: version=2` header, fetch only) gets the capability advertisement alone.
 *
 * A fresh cached advertisement is answered synchronously, after a check of the refs on disk made
 * after the request arrived. The first discovery of an event-loop turn is checked and answered at
 * once, and so are the others of the same synchronous run (the pipelined requests of one socket
 * read, which the cache answers from that check); the ones that arrive later in the turn (other
 * sockets' reads) wait and are answered together when the turn ends, after one check that began
 * after every one of them arrived. Discoveries the cache cannot answer run at most
 * `maxConcurrentDiscoveries` at once, `maxQueuedDiscoveries` wait (first come, first served), the
 * rest get 503 at once.
 */
import type { GitService } from '../backend.js';
import { busy, type GatewayReply, NO_CACHE, notFound, refuse, shuttingDown } from '../reply.js';
import { type GatewayRequest, protocolOf } from '../request.js';
import type { Route } from '../router.js';
import type { GatewayContext } from './context.js';

export interface Discovery {
  readonly route: Route;
  /** Discoveries waiting for a slot. */
  readonly queued: number;
}

const encoder = new TextEncoder();
const SERVICE_HEADERS: Record<GitService, Uint8Array> = {
  'git-upload-pack': encoder.encode('001e# service=git-upload-pack\n0000'),
  'git-receive-pack': encoder.encode('001f# service=git-receive-pack\n0000'),
};
/**
 * Discovery replies by advertisement (a cached advertisement is the same array each time), per
 * flavour: v0/v1 with the `# service=` header, v2 without. They are shared: never mutated.
 */
const discoveryReplies = new WeakMap<Uint8Array, { v0?: GatewayReply; v2?: GatewayReply }>();
/** No client signal: one advertisement load serves every request waiting for it. */
const NEVER = new AbortController().signal;

/** Runs `fn` once the current event-loop turn's I/O callbacks have run. */
const nextTurn: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0);

function advertiseReply(service: GitService, protocol: string | null, ad: Uint8Array, head: boolean): GatewayReply {
  const v2 = protocol === 'version=2';
  // a cached advertisement is the same array each time: its reply (prefix, headers) is built once
  const key = v2 ? 'v2' : 'v0';
  let replies = discoveryReplies.get(ad);
  if (replies === undefined) {
    replies = {};
    discoveryReplies.set(ad, replies);
  }
  let reply = replies[key];
  if (reply === undefined) {
    let bytes = ad;
    if (!v2) {
      const header = SERVICE_HEADERS[service];
      bytes = new Uint8Array(header.byteLength + ad.byteLength);
      bytes.set(header, 0);
      bytes.set(ad, header.byteLength);
    }
    reply = {
      status: 200,
      headers: Object.freeze({
        'content-type': `application/x-${service}-advertisement`,
        'cache-control': NO_CACHE,
        expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
        pragma: 'no-cache',
        'content-length': String(bytes.byteLength),
      }) as Record<string, string>,
      body: { kind: 'bytes', bytes },
    };
    replies[key] = reply;
  }
  if (!head) return reply;
  const { 'content-length': _, ...headers } = reply.headers;
  return { status: 200, headers, body: { kind: 'none' } };
}

export function createDiscovery(context: GatewayContext): Discovery {
  const { backend, limits, access } = context;
  let running = 0;
  const queue: (() => void)[] = [];
  let turnChecked = false;
  let inCheckedRun = false;
  const turnDiscoveries: (() => void)[] = [];
  const endRun = () => {
    inCheckedRun = false;
  };
  const endTurn = () => {
    turnChecked = false;
    // one synchronous loop: the first lookup of a repository checks the disk, the rest share it
    const waiting = turnDiscoveries.splice(0);
    for (const answer of waiting) answer();
  };

  /** Discovery that the cache could not answer at once, in its concurrency slot. */
  async function advertise(request: GatewayRequest, repo: string, service: GitService): Promise<GatewayReply> {
    if (context.closed()) return shuttingDown();
    if (running < limits.maxConcurrentDiscoveries) running++;
    else if (queue.length >= limits.maxQueuedDiscoveries) {
      return busy('GATEWAY_BUSY', 'too many discovery requests');
    } else {
      // the slot is handed over by the discovery that ends (`running` stays as it is)
      await new Promise<void>((resolve) => queue.push(resolve));
    }
    try {
      if (request.signal.aborted) return refuse(400, 'GATEWAY_ABORTED', 'request aborted');
      if (!(await backend.exists(repo))) return notFound();
      const protocol = protocolOf(request, service);
      const ad = await backend.advertise(repo, service, { protocol, signal: NEVER });
      return advertiseReply(service, protocol, ad, request.method.toUpperCase() === 'HEAD');
    } finally {
      const next = queue.shift();
      if (next !== undefined) next();
      else running--;
    }
  }

  /** A fresh cached advertisement, checked in this turn, or the turn's end for a later arrival. */
  function cached(
    request: GatewayRequest,
    repo: string,
    service: GitService,
    lookup: NonNullable<typeof backend.cachedAdvertisement>,
  ): GatewayReply | Promise<GatewayReply> | undefined {
    const protocol = protocolOf(request, service);
    if (turnChecked && !inCheckedRun) {
      return new Promise<GatewayReply>((resolve, reject) => {
        turnDiscoveries.push(() => {
          try {
            const ad = lookup.call(backend, repo, service, protocol);
            resolve(
              ad !== undefined ? advertiseReply(service, protocol, ad, false) : advertise(request, repo, service),
            );
          } catch (error) {
            reject(error);
          }
        });
      });
    }
    if (!turnChecked) {
      turnChecked = true;
      nextTurn(endTurn);
    }
    if (!inCheckedRun) {
      inCheckedRun = true;
      queueMicrotask(endRun);
    }
    const ad = lookup.call(backend, repo, service, protocol);
    return ad === undefined ? undefined : advertiseReply(service, protocol, ad, false);
  }

  const route: Route = {
    methods: ['GET', 'HEAD'],
    allow: 'GET',
    handle(request, { method, params, repo }) {
      const service = params.get('service');
      if (service !== 'git-upload-pack' && service !== 'git-receive-pack') {
        return refuse(
          403,
          'GATEWAY_DUMB_PROTOCOL',
          'only the smart HTTP protocol is served (?service=git-upload-pack or git-receive-pack)',
        );
      }
      const denied = access.service(request, service);
      if (denied !== undefined) return denied;
      const lookup = backend.cachedAdvertisement;
      if (method !== 'HEAD' && lookup !== undefined) {
        const reply = cached(request, repo, service, lookup);
        if (reply !== undefined) return reply;
      }
      return advertise(request, repo, service);
    },
  };

  return {
    route,
    get queued() {
      return queue.length;
    },
  };
}
