/**
 * Packet tracing in the format of git's `GIT_TRACE_PACKET` (pkt-line.c, packet_trace()):
 *
 *   packet: <identity right-aligned to 12>< <payload>     (`<` read, `>` written)
 *
 * Special packets print as `0000`, `0001`, `0002`. In a data payload, LF is dropped, printable
 * ASCII (0x20..0x7e) is printed as is, every other byte as `\` + octal. A payload that starts
 * with `PACK` (or a band byte then `PACK`) prints `PACK ...`, and git stops tracing there; a
 * `PacketTracer` does the same, since what follows is pack data.
 */
import type { Packet } from './packet.js';

export type TraceDirection = '<' | '>';

/** One trace line for `packet` (without the timestamp/file prefix git's trace adds). */
export function formatTrace(packet: Packet, direction: TraceDirection, identity = 'gitport'): string {
  const head = `packet: ${identity.padStart(12)}${direction} `;
  switch (packet.kind) {
    case 'flush':
      return `${head}0000`;
    case 'delim':
      return `${head}0001`;
    case 'response-end':
      return `${head}0002`;
    case 'data':
      return head + tracePayload(packet.payload);
  }
}

/** True when git would print `PACK ...` for this payload. */
export function isPackStart(payload: Uint8Array): boolean {
  const at = (i: number) =>
    payload[i] === 0x50 && payload[i + 1] === 0x41 && payload[i + 2] === 0x43 && payload[i + 3] === 0x4b;
  return (payload.byteLength >= 4 && at(0)) || (payload.byteLength >= 5 && at(1));
}

function tracePayload(payload: Uint8Array): string {
  if (isPackStart(payload)) return 'PACK ...';
  let out = '';
  for (let i = 0; i < payload.byteLength; i++) {
    const b = payload[i]!;
    if (b === 0x0a) continue;
    out += b >= 0x20 && b <= 0x7e ? String.fromCharCode(b) : `\\${b.toString(8)}`;
  }
  return out;
}

/** Stateful tracer: stops after the first `PACK` payload, as git does. */
export class PacketTracer {
  #enabled = true;
  constructor(
    private readonly sink: (line: string) => void,
    private readonly direction: TraceDirection,
    private readonly identity = 'gitport',
  ) {}
  trace(packet: Packet): void {
    if (!this.#enabled) return;
    if (packet.kind === 'data' && isPackStart(packet.payload)) this.#enabled = false;
    this.sink(formatTrace(packet, this.direction, this.identity));
  }
}
