/**
 * The one error base class of the `gitport` package. Recognise errors by their stable string
 * `code` (or by `isGitportError`), never by `instanceof`: errors cross workers and realms.
 * The user-facing calls (`remote(...)`'s lsRefs, fetch, clone, push; commit, readFile) reject
 * with a GitportError only: an error of a layer below keeps its code (`TRANSPORT_*`,
 * `PROTOCOL_*`, `PKTLINE_*`, `PACK_*`/`STORE_*`, `BUS_*`, ...) and is the `cause`.
 *
 *   FS_READ_FAILED, FS_RENAME_FAILED    the injected fs failed (cause: its error)
 *   REF_INVALID_NAME, REF_CORRUPT, REF_LOCKED, REF_SYMREF_LOOP
 *   REPO_NOT_FOUND, REPO_EXISTS, REPO_INVALID_NAME, REPO_BARE (a working tree was needed)
 *   PEER_NOT_FOUND                      no bus peer of that id (a remote's host)
 *   REMOTE_ERROR                        the remote refused the request (its message, said once)
 *   PUSH_REJECTED                       the remote or a local check refused refs (data: the report)
 *   PUSH_NOTHING                        a push without refspecs or updates
 *   PUSH_NOT_ACCEPTED                   the host serves clones and fetches only (`hostReadOnly`)
 *   OBJECT_NOT_FOUND                    an object the operation needs is missing
 *   OBJECT_MISSING                      a partial clone lacks the object and the read said
 *                                       `lazy: false` (data: { oid })
 *   FILTER_INVALID                      a clone's or fetch's filter-spec git would refuse
 *   PROMISOR_FETCH_FAILED               a lazy fetch from the promisor remote failed (data:
 *                                       { oids }; cause: the remote's error)
 *   CHECKOUT_BAD_PATH                   a tree path that would leave the working tree
 *   COMMIT_BAD_PATH, COMMIT_CONFLICT    commit: a bad file path; the branch moved meanwhile
 *   REF_NOT_FOUND, REF_DETACHED         readFile: no such ref; commit: HEAD on no branch
 *   ABORTED                             an AbortSignal fired (cause: its reason)
 *   HTTP_BAD_URL, HTTP_BAD_REQUEST      the isomorphic-git plugin and the host's HTTP streams
 *   HTTP_UNAUTHORIZED, HTTP_FORBIDDEN   a smart-HTTP server answered 401 (no or wrong credentials)
 *                                       or 403 (data: { status, url, message })
 *   HTTP_FAILED                         any other HTTP failure status (data: { status, url, message })
 *   HTTP_NETWORK                        no HTTP answer at all: connection refused, reset, DNS, CORS
 *   OPFS_UNSUPPORTED                    no navigator.storage.getDirectory here
 *   CONTROL_FORBIDDEN, CONTROL_FAILED   the control API
 *   OPERATION_FAILED                    an error without a code (a bug, a dependency's exception)
 */
export type GitportErrorCode =
  | 'FS_READ_FAILED'
  | 'FS_RENAME_FAILED'
  | 'REF_INVALID_NAME'
  | 'REF_LOCKED'
  | 'REF_CORRUPT'
  | 'REF_SYMREF_LOOP'
  | 'REPO_NOT_FOUND'
  | 'REPO_EXISTS'
  | 'REPO_INVALID_NAME'
  | 'REPO_BARE'
  | 'PEER_NOT_FOUND'
  | 'REMOTE_ERROR'
  | 'REMOTE_INVALID'
  | 'PUSH_REJECTED'
  | 'PUSH_NOTHING'
  | 'PUSH_NOT_ACCEPTED'
  | 'OBJECT_NOT_FOUND'
  | 'OBJECT_MISSING'
  | 'FILTER_INVALID'
  | 'FILTER_UNSUPPORTED'
  | 'PROMISOR_FETCH_FAILED'
  | 'CHECKOUT_BAD_PATH'
  | 'COMMIT_BAD_PATH'
  | 'COMMIT_CONFLICT'
  | 'ABORTED'
  | 'HTTP_BAD_URL'
  | 'HTTP_BAD_REQUEST'
  | 'HTTP_UNAUTHORIZED'
  | 'HTTP_FORBIDDEN'
  | 'HTTP_FAILED'
  | 'HTTP_NETWORK'
  | 'OPFS_UNSUPPORTED'
  | 'CONTROL_FORBIDDEN'
  | 'CONTROL_FAILED'
  | 'OPERATION_FAILED'
  | LowerLayerCode;

/** The code of an error from a layer below, kept as it was. */
export type LowerLayerCode =
  `${'BUS' | 'TRANSPORT' | 'PKTLINE' | 'PACK' | 'IDX' | 'STORE' | 'PARSE' | 'OBJECT' | 'PROTOCOL' | 'REF' | 'FS'}_${string}`;

const brand = Symbol.for('gitport.error');

export class GitportError extends Error {
  readonly code: GitportErrorCode;
  readonly data?: unknown;
  readonly [brand] = true;

  constructor(code: GitportErrorCode, message: string, options: { cause?: unknown; data?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GitportError';
    this.code = code;
    if (options.data !== undefined) this.data = options.data;
  }
}

export function isGitportError(error: unknown): error is GitportError {
  return typeof error === 'object' && error !== null && (error as { [brand]?: boolean })[brand] === true;
}

const LOWER_LAYER_CODE = /^(?:BUS|TRANSPORT|PKTLINE|PACK|IDX|STORE|PARSE|OBJECT|PROTOCOL|REF|FS)_[A-Z0-9_]+$/;

/**
 * `error` as a GitportError: itself when it is one; otherwise one with the error's code when it
 * is a lower layer's (else `fallback`), its message, and the error as `cause`.
 */
export function toGitportError(error: unknown, fallback: GitportErrorCode = 'OPERATION_FAILED'): GitportError {
  if (isGitportError(error)) return error;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const kept = typeof code === 'string' && LOWER_LAYER_CODE.test(code) ? (code as LowerLayerCode) : fallback;
  const data = typeof error === 'object' && error !== null ? (error as { data?: unknown }).data : undefined;
  return new GitportError(kept, message, { cause: error, ...(data !== undefined ? { data } : {}) });
}
