/**
 * A response before it becomes a WHATWG Response (or is written by the node:http adapter
 * directly), and the plain-text replies every route refuses with: each 4xx and 5xx carries its
 * stable code in the `x-gitport-error` header (errors.ts lists the codes).
 */
import type { SubscribeOptions } from './sse-hub.js';

export type ReplyBody =
  | { kind: 'none' }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'stream'; chunks: AsyncIterable<Uint8Array> }
  | { kind: 'events'; options: SubscribeOptions };

export interface GatewayReply {
  status: number;
  headers: Record<string, string>;
  body: ReplyBody;
}

/** What every git reply and refusal says to caches. */
export const NO_CACHE = 'no-cache, max-age=0, must-revalidate';

const encoder = new TextEncoder();

export function text(status: number, message: string, headers: Record<string, string> = {}): GatewayReply {
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': NO_CACHE, ...headers },
    body: { kind: 'bytes', bytes: encoder.encode(`${message}\n`) },
  };
}

/** A refusal with its stable code in the `x-gitport-error` header. */
export function refuse(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): GatewayReply {
  return text(status, message, { 'x-gitport-error': code, ...headers });
}

/** Refusals for load: the client should come back (git retries nothing itself, a person or a script does). */
export function busy(code: string, message: string): GatewayReply {
  return refuse(503, code, message, { 'retry-after': '1' });
}

export function notFound(): GatewayReply {
  return refuse(404, 'GATEWAY_NOT_FOUND', 'not found');
}

export function shuttingDown(): GatewayReply {
  return refuse(503, 'GATEWAY_CLOSED', 'shutting down');
}
