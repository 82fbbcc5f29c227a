/**
 * The names a gitport host answers on the bus, and the shape of the ref-update signal it sends,
 * with nothing else: a process that only relays requests to hosts in other threads (the gateway
 * in front of its workers) imports these without loading the library.
 *
 * - `HTTP_STREAM` (`gitport.http`): one smart-HTTP request per transport stream (http-plugin.ts);
 * - `HTTP_STOP` (`gitport.http-stop`): bus request `{ work }` that stops one smart-HTTP round of
 *   the requester, answered once stopped (host.ts);
 * - `REF_UPDATE_EVENT` (`ref-update`): signal `{ repo, ref, old, new }` after each ref update
 *   (ref-events.ts), `ZERO_ID` for the side of a ref created or deleted.
 */

export const HTTP_STREAM = 'gitport.http';
/** Bus request `{ work }` that stops one smart-HTTP round of the requester; answers once stopped. */
export const HTTP_STOP = 'gitport.http-stop';
export const REF_UPDATE_EVENT = 'ref-update';
/** What a ref-update event carries as `old` for a ref created, and as `new` for one deleted: 40 zeros. */
export { ZERO_ID } from '@gitport/pack/zero-id';

export interface RefUpdateEvent {
  repo: string;
  ref: string;
  old: string;
  new: string;
}

/**
 * Whether `value` has the shape of a {@link RefUpdateEvent} (`repo`, `ref`, `old` and `new`, all
 * strings). A bus payload is `unknown` until checked: use this on what a `ref-update` listener
 * receives before reading its fields, since any peer may signal that event.
 *
 * ```ts
 * bus.on(REF_UPDATE_EVENT, (payload) => {
 *   if (!isRefUpdateEvent(payload)) return;
 *   console.log(`${payload.repo}: ${payload.ref} ${payload.old} -> ${payload.new}`);
 * });
 * ```
 */
export function isRefUpdateEvent(value: unknown): value is RefUpdateEvent {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.repo === 'string' && typeof v.ref === 'string' && typeof v.old === 'string' && typeof v.new === 'string'
  );
}
