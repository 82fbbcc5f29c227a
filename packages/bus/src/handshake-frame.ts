/**
 * The handshake frames, told apart from data frames (arrays) by their tag:
 *   { $gitportBus: "hello" | "ack", id, v, hub }
 *   { $gitportBus: "refuse", id, code, message }
 */

export const PROTOCOL_VERSION = 3;
export const TAG = '$gitportBus';

export interface HandshakeFrame {
  [TAG]: 'hello' | 'ack' | 'refuse';
  id: unknown;
  v?: unknown;
  hub?: unknown;
  code?: unknown;
  message?: unknown;
}

export function isHandshake(data: unknown): data is HandshakeFrame {
  return typeof data === 'object' && data !== null && !Array.isArray(data) && Object.hasOwn(data, TAG);
}
