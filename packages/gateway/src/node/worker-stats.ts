/**
 * The bus request a gateway worker answers with its own figures, `{ httpWork }`: the smart-HTTP
 * requests it is serving now (for monitoring, and for tests that check aborted work ended).
 */
export const WORKER_STATS = 'gitport.gateway.worker-stats';

export interface WorkerStats {
  httpWork: number;
}
