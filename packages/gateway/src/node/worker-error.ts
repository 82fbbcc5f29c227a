/**
 * Which failures a gateway worker logs. A request that fails because of what its client sent or
 * did (a malformed request, a corrupt pushed pack, a limit, a client that went away) was already
 * answered to that client, in band or with a status, and is not logged: a hostile client must not
 * be able to fill the log. Everything else (the disk failing, a Node error such as `EMFILE` or
 * `EACCES`, a corrupt repository, a bug) is logged with its code and stack.
 */

/** Codes that only a client's request or behaviour causes, whatever the service. */
const CLIENT_CODES = new Set(['HTTP_BAD_REQUEST', 'ABORTED', 'REPO_NOT_FOUND', 'REF_INVALID_NAME', 'GATEWAY_ABORTED']);
/** Code prefixes of the wire layers: the client's bytes or its connection. */
const CLIENT_PREFIXES = ['PROTOCOL_', 'PKTLINE_', 'TRANSPORT_'];

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Whether `error`, met while serving `service`, was caused by the client. A pack error is the
 * client's in a push (it sent the pack) but the repository's in a fetch (we read the pack).
 */
export function isClientError(error: unknown, service: string): boolean {
  const code = codeOf(error);
  if (code === undefined) return false;
  if (CLIENT_CODES.has(code)) return true;
  if (CLIENT_PREFIXES.some((prefix) => code.startsWith(prefix))) return true;
  if (code === 'PACK_ABORTED') return true;
  return service === 'git-receive-pack' && (code.startsWith('PACK_') || code === 'OBJECT_HASH_MISMATCH');
}

/** The log line's text for a failure worth logging: where, and the error's code. */
export function describeWorkerError(
  worker: string,
  error: unknown,
  context: { service: string; repository: string },
): string {
  return `gitport worker ${worker}: ${context.service} ${context.repository}: ${codeOf(error) ?? 'error without a code'}`;
}
