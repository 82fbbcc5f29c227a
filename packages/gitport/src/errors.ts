/**
 * The one error base class of the `gitport` package. Recognise errors by their stable string
 * `code` (or by `isGitportError`), never by `instanceof`: errors cross workers and realms.
 * Errors of the layers below pass through with their own codes (`TRANSPORT_*`, `PROTOCOL_*`,
 * `PKTLINE_*`, `PACK_*`/`STORE_*`, `BUS_*`).
 *
 *   FS_READ_FAILED, FS_RENAME_FAILED    the injected fs failed (cause: its error)
 *   REF_INVALID_NAME, REF_CORRUPT, REF_LOCKED, REF_SYMREF_LOOP
 *   REPO_NOT_FOUND, REPO_EXISTS, REPO_INVALID_NAME
 *   ABORTED                             an AbortSignal fired (cause: its reason)
 *   HTTP_BAD_URL, HTTP_BAD_REQUEST      the isomorphic-git plugin and the host's HTTP streams
 *   OPFS_UNSUPPORTED                    no navigator.storage.getDirectory here
 *   CONTROL_FORBIDDEN, CONTROL_FAILED   the control API
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
  | 'ABORTED'
  | 'HTTP_BAD_URL'
  | 'HTTP_BAD_REQUEST'
  | 'OPFS_UNSUPPORTED'
  | 'CONTROL_FORBIDDEN'
  | 'CONTROL_FAILED';

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
