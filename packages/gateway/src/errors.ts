/**
 * The gateway's one error class. Callers recognise errors by their stable `code`, never by
 * `instanceof` (which breaks across realms and duplicated package copies).
 *
 * Codes: GATEWAY_BAD_NAME, GATEWAY_NOT_FOUND, GATEWAY_BODY_TOO_LARGE, GATEWAY_INFLATE_TOO_LARGE,
 * GATEWAY_BAD_GZIP, GATEWAY_BODY_IDLE, GATEWAY_BACKEND_FAILED, GATEWAY_ABORTED, GATEWAY_CLOSED,
 * GATEWAY_BAD_ARGUMENT.
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
