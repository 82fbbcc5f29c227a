/**
 * Ref-update events: after every successful ref update a host publishes one `ref-update`
 * signal on the bus per ref, `{ repo, ref, old, new }` (40 zeros for a created or deleted ref),
 * the same shape the gateway sends over SSE.
 */
import { ZERO_ID } from '@gitport/pack';
import type { RefUpdateResult } from '@gitport/protocol';

export const REF_UPDATE_EVENT = 'ref-update';

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

/** Events for the updates a store applied. */
export function refUpdateEvents(repo: string, results: readonly RefUpdateResult[]): RefUpdateEvent[] {
  const events: RefUpdateEvent[] = [];
  for (const r of results) {
    if (r.status !== 'ok' || r.old === r.new) continue;
    events.push({ repo, ref: r.name, old: r.old ?? ZERO_ID, new: r.new ?? ZERO_ID });
  }
  return events;
}
