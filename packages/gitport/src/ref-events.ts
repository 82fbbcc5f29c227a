/**
 * Ref-update events: after every successful ref update a host publishes one `ref-update`
 * signal on the bus per ref, `{ repo, ref, old, new }` (40 zeros for a created or deleted ref),
 * the same shape the gateway sends over SSE.
 */
import { ZERO_ID } from '@gitport/pack/internal/object';
import type { RefUpdateResult } from '@gitport/protocol';
import type { RefUpdateEvent } from './wire.js';

/** Events for the updates a store applied. */
export function refUpdateEvents(repo: string, results: readonly RefUpdateResult[]): RefUpdateEvent[] {
  const events: RefUpdateEvent[] = [];
  for (const r of results) {
    if (r.status !== 'ok' || r.old === r.new) continue;
    events.push({ repo, ref: r.name, old: r.old ?? ZERO_ID, new: r.new ?? ZERO_ID });
  }
  return events;
}
