/**
 * The gateway's one error class. Callers recognise errors by their stable `code`, never by
 * `instanceof` (which breaks across realms and duplicated package copies).
 *
 * Codes: GATEWAY_BAD_NAME, GATEWAY_NOT_FOUND, GATEWAY_BODY_TOO_LARGE, GATEWAY_INFLATE_TOO_LARGE,
 * GATEWAY_BAD_GZIP, GATEWAY_BODY_IDLE, GATEWAY_BODY_TOO_SLOW, GATEWAY_BODY_TIMEOUT,
 * GATEWAY_BACKEND_FAILED, GATEWAY_ABORTED, GATEWAY_CLOSED, GATEWAY_BAD_ARGUMENT.
 *
 * Refusals the handler answers without an error object carry their code the same way, in the
 * `x-gitport-error` response header (every 4xx and 5xx reply has one): GATEWAY_BUSY (503, with
 * Retry-After), GATEWAY_UNAVAILABLE (/healthz), GATEWAY_BAD_CONTENT_TYPE and GATEWAY_BAD_ENCODING
 * (415), GATEWAY_ORIGIN_REFUSED, GATEWAY_PUSH_DISABLED and GATEWAY_DUMB_PROTOCOL (403),
 * GATEWAY_UNAUTHORIZED (401), GATEWAY_METHOD_NOT_ALLOWED (405), GATEWAY_INTERNAL (500).
 */
export class GatewayError extends Error {
  readonly code: string;
  /** The HTTP status this error maps to when it reaches a client before any response byte. */
  readonly status: number;

  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? 500;
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'GatewayError' &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}
