/**
 * One stateless round of a service (gitprotocol-http, "Smart Service"):
 *
 *   POST /<name>.git/git-upload-pack     Content-Type: application/x-git-upload-pack-request
 *   POST /<name>.git/git-receive-pack    Content-Type: application/x-git-receive-pack-request
 *
 * The reply is `application/x-<service>-result`. The edge rules come first, in this order: the
 * content type git sends (a page of another site can send neither without a CORS preflight), the
 * origin, access, the repository. Then the limits: a request sending its body holds no backend
 * slot (`maxPendingBodies`, per client `maxPendingBodiesPerClient`), so a slow client cannot
 * starve the others; work counts in `maxConcurrentRequests` once the body is in, until the
 * backend has stopped. git's `0000` probe POST is answered without the backend, and a v2
 * `ls-refs` round by the backend's `listRefs` when it has one (a cached listing).
 */
import type { GitService } from '../backend.js';
import { collect, empty, gunzipBody, limitBody, once, onEnd, peek, trackErrors } from '../body.js';
import { GatewayError } from '../errors.js';
import { busy, type GatewayReply, NO_CACHE, notFound, type ReplyBody, refuse, shuttingDown } from '../reply.js';
import { type GatewayRequest, protocolOf } from '../request.js';
import type { Route } from '../router.js';
import type { GatewayContext } from './context.js';

export interface Rpc {
  readonly uploadPack: Route;
  readonly receivePack: Route;
  /** Requests sending their body (not yet counted in `working`). */
  readonly pendingBodies: number;
  /** Requests with their body in and their work running (`maxConcurrentRequests`). */
  readonly working: number;
}

const PROBE = '0000';

function isProbe(bytes: Uint8Array): boolean {
  return bytes.byteLength === PROBE.length && bytes[0] === 48 && bytes[1] === 48 && bytes[2] === 48 && bytes[3] === 48;
}

function rpcReply(service: GitService, body: ReplyBody): GatewayReply {
  return {
    status: 200,
    headers: { 'content-type': `application/x-${service}-result`, 'cache-control': NO_CACHE },
    body,
  };
}

export function createRpc(context: GatewayContext): Rpc {
  const { backend, limits, access, crossOrigin } = context;
  let pendingBodies = 0;
  /** Pending bodies per client address (addresses with none are not kept). */
  const pendingByClient = new Map<string, number>();
  let working = 0;

  async function rpc(request: GatewayRequest, repo: string, service: GitService): Promise<GatewayReply> {
    const declared = request.headers.get('content-length');
    if (declared !== null && Number(declared) > limits.maxBodyBytes) {
      return refuse(413, 'GATEWAY_BODY_TOO_LARGE', `request body exceeds ${limits.maxBodyBytes} bytes`);
    }
    const encoding = (request.headers.get('content-encoding') ?? '').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'gzip' && encoding !== 'x-gzip' && encoding !== 'identity') {
      return refuse(415, 'GATEWAY_BAD_ENCODING', 'unsupported content-encoding');
    }
    if (pendingBodies >= limits.maxPendingBodies) return busy('GATEWAY_BUSY', 'too many requests sending a body');
    const client = limits.maxPendingBodiesPerClient > 0 ? request.clientAddress : undefined;
    const ofClient = client === undefined ? 0 : (pendingByClient.get(client) ?? 0);
    if (ofClient >= limits.maxPendingBodiesPerClient && client !== undefined) {
      return busy('GATEWAY_BUSY', 'too many requests sending a body from this address');
    }
    if (working >= limits.maxConcurrentRequests) return busy('GATEWAY_BUSY', 'too many requests');
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    pendingBodies++;
    if (client !== undefined) pendingByClient.set(client, ofClient + 1);
    let receiving = true;
    let counted = false;
    /** The body is in (or abandoned): it stops counting as pending, and maybe starts counting as work. */
    const bodyIn = (count: boolean) => {
      if (!receiving) return;
      receiving = false;
      pendingBodies--;
      if (client !== undefined) {
        const left = (pendingByClient.get(client) ?? 1) - 1;
        if (left <= 0) pendingByClient.delete(client);
        else pendingByClient.set(client, left);
      }
      if (count) {
        working++;
        counted = true;
      }
    };
    const release = () => {
      bodyIn(false);
      if (counted) {
        counted = false;
        working--;
      }
      request.signal.removeEventListener('abort', onAbort);
    };
    try {
      let body: AsyncIterable<Uint8Array> = limitBody(
        request.body ?? empty(),
        {
          maxBytes: limits.maxBodyBytes,
          idleMs: limits.bodyIdleMs,
          minBytesPerSecond: limits.minBodyBytesPerSecond,
          timeoutMs: limits.bodyTimeoutMs,
        },
        controller.signal,
      );
      if (encoding === 'gzip' || encoding === 'x-gzip') body = gunzipBody(body, limits.maxInflatedBytes);
      if (service === 'git-upload-pack') {
        // upload-pack requests are wants and haves: small, read whole so errors get a status
        const whole = await collect(
          limitBody(
            body,
            { maxBytes: limits.maxUploadRequestBytes, code: 'GATEWAY_BODY_TOO_LARGE' },
            controller.signal,
          ),
        );
        if (isProbe(whole)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        bodyIn(false);
        if (context.closed()) {
          release();
          return shuttingDown();
        }
        if (working >= limits.maxConcurrentRequests) {
          release();
          return busy('GATEWAY_BUSY', 'too many requests');
        }
        working++;
        counted = true;
        // a ref listing (v2 ls-refs) may come from the backend's cache of the refs
        const listed = backend.listRefs?.(repo, whole, {
          protocol: protocolOf(request, service),
          signal: controller.signal,
        });
        if (listed !== undefined) {
          const bytes = await listed;
          release();
          return rpcReply(service, { kind: 'bytes', bytes });
        }
        body = once(whole);
      } else {
        const peeked = await peek(body, 5);
        if (peeked.ended && isProbe(peeked.head)) {
          release();
          return rpcReply(service, { kind: 'none' });
        }
        // the pack streams into the backend; the push counts as work once all of it is in
        body = onEnd(peeked.body, () => bodyIn(true));
      }
      const tracked = trackErrors(body);
      try {
        const output = (
          await backend.rpc(repo, service, tracked.body, {
            protocol: protocolOf(request, service),
            signal: controller.signal,
          })
        )[Symbol.asyncIterator]();
        // wait for the first byte so a failure before it still gets a proper status
        const first = await output.next();
        return rpcReply(service, { kind: 'stream', chunks: guard(first, output, release, controller) });
      } catch (error) {
        // the request body failing (too large, idle, bad gzip) is the cause the client should see
        throw tracked.error() ?? error;
      }
    } catch (error) {
      // the backend's iterable (if any) has ended by throwing: its work is over
      controller.abort(error);
      release();
      throw error;
    }
  }

  const serviceRoute = (service: GitService): Route => ({
    methods: ['POST'],
    allow: 'POST',
    handle(request, { repo }) {
      if (request.headers.get('content-type') !== `application/x-${service}-request`) {
        return refuse(415, 'GATEWAY_BAD_CONTENT_TYPE', `expected content-type application/x-${service}-request`);
      }
      if (crossOrigin.foreign(request)) return refuse(403, 'GATEWAY_ORIGIN_REFUSED', 'origin not allowed');
      const denied = access.service(request, service);
      if (denied !== undefined) return denied;
      return (async () => {
        if (!(await backend.exists(repo))) return notFound();
        if (context.closed()) return shuttingDown();
        return rpc(request, repo, service);
      })();
    },
  });

  return {
    uploadPack: serviceRoute('git-upload-pack'),
    receivePack: serviceRoute('git-receive-pack'),
    get pendingBodies() {
      return pendingBodies;
    },
    get working() {
      return working;
    },
  };
}

/**
 * The response body over the backend's output, its first step already taken. Runs `release`
 * exactly once, when the backend's work is over: the output ended (done or thrown), or was
 * cancelled and its `return()` settled (the backend settles it only once the work has stopped),
 * so the concurrency slot counts work, not connections. Cancelling also aborts the work.
 */
function guard(
  first: IteratorResult<Uint8Array>,
  output: AsyncIterator<Uint8Array>,
  release: () => void,
  controller: AbortController,
): AsyncIterableIterator<Uint8Array> {
  let head: IteratorResult<Uint8Array> | undefined = first;
  let ended = false;
  const end = () => {
    ended = true;
    release();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (ended) return { done: true, value: undefined };
      let step = head;
      head = undefined;
      try {
        step ??= await output.next();
      } catch (error) {
        end();
        throw error;
      }
      if (step.done === true) end();
      return step;
    },
    async return() {
      if (!ended) {
        ended = true;
        controller.abort(new GatewayError('GATEWAY_ABORTED', 'response not delivered', { status: 499 }));
        try {
          await output.return?.();
        } catch {
          // the work failed while stopping: it has stopped all the same
        } finally {
          release();
        }
      }
      return { done: true, value: undefined };
    },
  };
}
