/** The receive window of a stream: its default and its check. */
import { TransportError } from './errors.js';
import { MAX_WINDOW } from './frames.js';

/** The receive window a stream advertises unless told otherwise. */
export const DEFAULT_WINDOW = 1024 * 1024;
export function checkWindow(window: number | undefined): number {
  if (window === undefined) return DEFAULT_WINDOW;
  if (!Number.isInteger(window) || window < 1 || window > MAX_WINDOW) {
    throw new TransportError('TRANSPORT_INVALID_ARGUMENT', `window must be an integer in 1..${MAX_WINDOW}`);
  }
  return window;
}
