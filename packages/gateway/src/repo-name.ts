/**
 * Repository names in request paths.
 *
 * A repository is served at `/<name>.git` and lives at `<root>/<name>.git`. The name is one path
 * segment from a strict ASCII allowlist, checked after exactly one round of percent-decoding:
 *
 *   name = 1*100( ALPHA / DIGIT / "-" / "_" / "." )   ; not starting with "." or "-", no ".."
 *
 * Everything else is refused before any file system access: separators (`/`, `\`), `..` in any
 * encoding (`%2e%2e`, double encoding `%252e` leaves a `%`, which is not allowed), NUL, control
 * characters and every non-ASCII character (full-width solidus, one-dot leaders and other unicode
 * lookalikes of `.` and `/`).
 */
import { GatewayError } from './errors.js';

const NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;

/** Validates an already-decoded repository name (without `.git`). */
export function isValidRepoName(name: string): boolean {
  return NAME.test(name) && !name.includes('..') && !name.endsWith('.lock');
}

/** Decodes one path segment once and validates it; throws GatewayError `GATEWAY_BAD_NAME`. */
export function decodeRepoName(segment: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch (cause) {
    throw new GatewayError('GATEWAY_BAD_NAME', 'malformed percent-encoding in repository name', { status: 404, cause });
  }
  if (!isValidRepoName(decoded)) {
    throw new GatewayError('GATEWAY_BAD_NAME', 'invalid repository name', { status: 404 });
  }
  return decoded;
}
