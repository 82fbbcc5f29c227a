/**
 * Where ref updates go and where `Last-Event-ID` replays come from. The SSE hub is the in-memory
 * log of one gateway process (its own ids, its own rings); a shared log (Redis Streams) carries
 * the events of every gateway on one set of repositories, names them, keeps their history and
 * hands each one to its hub to deliver (`SseHub.deliver`).
 */
import type { EventReplay, RefUpdateEvent } from './sse-hub.js';

export interface RefEventLog extends EventReplay {
  /** Records a ref update this gateway made; the subscribers of every gateway get it. */
  publish(event: RefUpdateEvent): void;
  /**
   * Calls `listener` with every ref update the log carries, this gateway's and every other's,
   * before its subscribers get it, and with undefined when the log may have lost some (after an
   * outage); the gateway forgets its cached refs on both. Returns the unsubscribe function.
   */
  onEvent?(listener: (event: RefUpdateEvent | undefined) => void): () => void;
  /** Why the log cannot carry events now (for /healthz), or undefined when it can. */
  readonly degraded?: string | undefined;
  /** Stops carrying events and lets go of its connections. */
  close?(): Promise<void>;
}
