/**
 * Hosting repositories on a bus peer.
 *
 * Stateful git (one transport stream per session, listener `gitport.git`): the client opens a
 * stream and sends one pkt-line naming the service and the repository, in the shape of git's
 * daemon request (gitprotocol-pack: "Git Transport"):
 *
 *   git-proto-request = request-command SP pathname NUL [ host-parameter NUL ] [ NUL extra-parameters ]
 *   request-command   = "git-upload-pack" / "git-receive-pack"
 *   pathname          = "/" <repository name> ".git"
 *   extra-parameters  = "version=2" NUL     (protocol v2 for upload-pack)
 *
 * after which the stream carries exactly what git's upload-pack / receive-pack speak over
 * git:// or ssh. An unknown repository or service gets `ERR <message>` and the stream ends.
 *
 * Stateless smart HTTP (listener `gitport.http`, see http-plugin.ts): one stream per request.
 * A request head may name its work (`"work": "<id>"`, unique per requesting peer); the peer can
 * then stop it with a bus request `gitport.http-stop` `{ work }`, answered once the work has
 * stopped (the round is aborted, its stream too). The round of a stream that fails (the peer
 * aborted it, or went away) gets an AbortSignal, so packing or indexing stops and a push in
 * flight moves no ref; a round's stream ends only after the round has settled.
 *
 * After every successful ref update a `ref-update` signal `{ repo, ref, old, new }` goes to every
 * peer of the bus (and to `onRefUpdate` listeners).
 *
 * Memory: what serving a pack allocates lives in typed arrays (the pack index, reuse buffers,
 * side-band buffers handed over to the reader), while V8 sizes a thread's young generation by
 * how much of it survives, up to tens of MB. A worker thread that mostly hosts repositories
 * keeps near its working set with a small one, `new Worker(url, { resourceLimits: {
 * maxYoungGenerationSizeMb: 2 } })` (the gateway's worker pool gives its repository workers a
 * small one too); the main thread's own is set with `node --max-semi-space-size`.
 */

import type { Bus } from '@gitport/bus';
import {
  advertiseRefsHttp,
  handleReceivePackHttp,
  handleUploadPackHttp,
  protocolFromHeader,
  rpcResultHeaders,
} from '@gitport/protocol/internal/http';
import { serveReceivePack } from '@gitport/protocol/internal/receive-pack';
import { serveUploadPack } from '@gitport/protocol/internal/upload-pack';
import { type Host, type HostOptions, httpPart, receiveWith, serve, serveControl } from './host-core.js';
import type { HostedRepository, RepositoryRegistry } from './registry.js';

export { encodeGitRequest, GIT_STREAM, type GitRequest, parseGitRequest } from './git-request.js';
export { type Host, type HostOptions, writeSizeOf } from './host-core.js';

// the protocol servers come with the host (gitport/node brings them in on the first request);
// bound inside each function below, so that a bundle keeps only the servers of the ones it uses
const upload = () => ({ serveUploadPack });
const receive = () => ({ serveReceivePack });
const http = () => ({
  advertiseRefsHttp,
  handleReceivePackHttp,
  handleUploadPackHttp,
  protocolFromHeader,
  rpcResultHeaders,
});

/**
 * Hosts `repositories` on the bus: git's services to every peer (stateful streams and the
 * isomorphic-git plugin's smart HTTP), ref-update signals, and the comlink control API (unless
 * `control: false`).
 */
export function host(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(
    bus,
    repositories,
    options,
    options.control === false ? [httpPart(http)] : [httpPart(http), serveControl],
    upload,
    receiveWith(receive),
  );
}

/**
 * `host` for the peers that clone, fetch and push with `remote(bus, ...)` or `busRemote`: git's
 * services over stateful streams and the ref-update signals, without the isomorphic-git plugin's
 * smart HTTP and without the control API (so without comlink), for a lighter bundle. `control`
 * and `manage` are not read; `httpWork` stays 0.
 */
export function hostGit(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(bus, repositories, options, [], upload, receiveWith(receive));
}

/**
 * `hostGit` that serves clones and fetches only: a push (`git-receive-pack`) is refused with
 * `PUSH_NOT_ACCEPTED` before anything is read, and receive-pack with its object checks, pack
 * import and quarantine stays out of the bundle. `receivePack` is not read; `onRefUpdate`
 * reports nothing (refs change only through the repository's own API).
 */
export function hostReadOnly(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: Omit<HostOptions, 'receivePack' | 'control' | 'manage'> = {},
): Host {
  return serve(bus, repositories, options, [], upload, undefined);
}
