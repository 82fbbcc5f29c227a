/**
 * What the HTTP layer needs from whoever hosts the repositories: a ref advertisement and one
 * stateless round of upload-pack or receive-pack (gitprotocol-http: "Smart Service"), plus the
 * ref updates they make. The worker pool implements it; so can anything else (a test double is
 * never used in the gateway's own tests: they run the real backends).
 */

import type { GitService } from '@gitport/protocol';
import type { RefUpdateEvent } from './sse-hub.js';

export type { GitService };

export interface RpcOptions {
  /** The validated `Git-Protocol` header (`version=2`…), null for v0; always null for receive-pack. */
  protocol: string | null;
  signal: AbortSignal;
}

export interface GitBackend {
  /** Whether `<root>/<repo>.git` is a repository this backend serves (the name is already validated). */
  exists(repo: string, signal?: AbortSignal): Promise<boolean>;
  /**
   * The service's advertisement as the service prints it with `--advertise-refs` (no smart-HTTP
   * `# service=` header: the gateway adds it for v0).
   */
  advertise(repo: string, service: GitService, options: RpcOptions): Promise<Uint8Array>;
  /** A fresh cached advertisement, synchronously, when there is one (the fast path of discovery). */
  cachedAdvertisement?(repo: string, service: GitService, protocol: string | null): Uint8Array | undefined;
  /**
   * A protocol v2 `ls-refs` round of upload-pack (`request`: its whole body), answered from what
   * the backend keeps of the repository's refs, checked against the refs on disk as
   * advertisements are: a ref listing is an advertisement in v2. Undefined when the backend does
   * not answer this request so (not `ls-refs`, too large): then it goes through `rpc`.
   */
  listRefs?(repo: string, request: Uint8Array, options: RpcOptions): Promise<Uint8Array> | undefined;
  /**
   * One stateless round: the request body in, the response bytes out. The returned iterable may
   * start before the body is consumed; cancelling it (or the signal) stops the work, and a push
   * that did not complete moves no ref.
   *
   * Work is counted, not connections: the promise returned by cancelling the iterable
   * (`iterator.return()`), and the iterable's end (its last `next()`, resolved or rejected), settle
   * only once the backend has actually stopped the work (the worker is no longer packing or
   * indexing for it), so a caller that holds a concurrency slot until then never lets more work
   * run than it admits. When the signal aborts before the returned promise settles, that promise
   * too settles only once the work has stopped.
   */
  rpc(
    repo: string,
    service: GitService,
    body: AsyncIterable<Uint8Array>,
    options: RpcOptions,
  ): Promise<AsyncIterable<Uint8Array>>;
  /** Ref updates made through this backend. */
  onRefUpdate(listener: (event: RefUpdateEvent) => void): () => void;
  /**
   * Another gateway on the same repositories changed a repository's refs (undefined: any of them
   * may have changed): forget what is cached of them, even where the disk does not show it yet.
   */
  refsChanged?(repo: string | undefined): void;
  /** Whether the backend can take requests (for /healthz). */
  healthy(): boolean;
  close(): Promise<void>;
}
