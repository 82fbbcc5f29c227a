/**
 * The envelope of every protocol v2 request (gitprotocol-v2(5) "Command Request") and its
 * mirrored codecs:
 *
 *   request = empty-request | command-request
 *   empty-request = flush-pkt
 *   command-request = command capability-list delim-pkt command-args flush-pkt
 *   command = PKT-LINE("command=" key LF)
 *   capability-list = *capability
 *   capability = PKT-LINE(key[=value] LF)
 *   command-args = *PKT-LINE(arg LF)
 *
 * The arguments are the command's own (ls-refs, fetch: see upload-request.ts).
 */
import { DELIM, encodeText, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { concatBytes, requirePacket } from './connection.js';
import { ProtocolError } from './errors.js';

/** One v2 request: `command=`, capabilities, delim, arguments, flush. */
export interface CommandRequest {
  command: string;
  capabilities: string[];
  args: string[];
}

/**
 * The head of one v2 request: `command=` and the capability lines; `args` then yields the
 * argument lines one at a time up to the flush (none when the capabilities end in the flush), so
 * a command can take each argument as it arrives instead of holding them all.
 */
export interface CommandHead {
  command: string;
  capabilities: string[];
  args: AsyncIterable<string>;
}

/** Most capability lines a v2 request may carry (a client sends a handful), and their bytes. */
const MAX_CAPABILITIES = 1000;
const MAX_CAPABILITY_BYTES = 1 << 20;
/** Most argument lines `readCommandRequest` gathers, and their bytes. */
const MAX_ARGS = 1_000_000;
const MAX_ARG_BYTES = 64 << 20;

function pkt(line: string): Uint8Array {
  return encodeText(`${line}\n`);
}

export function encodeCommandRequest(request: CommandRequest): Uint8Array {
  const parts = [pkt(`command=${request.command}`)];
  for (const c of request.capabilities) parts.push(pkt(c));
  parts.push(DELIM);
  for (const a of request.args) parts.push(pkt(a));
  parts.push(FLUSH);
  return concatBytes(parts);
}

/** Reads the head of the next request; undefined at the end of the input or an empty request. */
export async function readCommandHead(reader: PacketReader): Promise<CommandHead | undefined> {
  const first = await reader.read();
  if (!first || first.kind === 'flush') return undefined;
  const head = packetText(first);
  if (!head?.startsWith('command=')) throw new ProtocolError('PROTOCOL_BAD_LINE', 'expected command=<name>');
  const capabilities: string[] = [];
  let bytes = 0;
  let hasArgs = false;
  for (;;) {
    const p = await requirePacket(reader, 'reading a v2 request');
    if (p.kind === 'flush') break;
    if (p.kind === 'delim') {
      hasArgs = true;
      break;
    }
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in a v2 request`);
    bytes += text.length;
    if (capabilities.length >= MAX_CAPABILITIES || bytes > MAX_CAPABILITY_BYTES) {
      throw new ProtocolError(
        'PROTOCOL_LIMIT',
        `more than ${MAX_CAPABILITIES} capability lines or ${MAX_CAPABILITY_BYTES} bytes of them in a v2 request`,
      );
    }
    capabilities.push(text);
  }
  return { command: head.slice(8), capabilities, args: hasArgs ? commandArgs(reader) : noArgs() };
}

async function* noArgs(): AsyncGenerator<string> {}

async function* commandArgs(reader: PacketReader): AsyncGenerator<string> {
  for (;;) {
    const p = await requirePacket(reader, 'reading a v2 request');
    if (p.kind === 'flush') return;
    if (p.kind === 'delim') throw new ProtocolError('PROTOCOL_UNEXPECTED', 'second delim in a v2 request');
    const text = packetText(p);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in a v2 request`);
    yield text;
  }
}

/**
 * Reads one whole v2 request: at most 1,000 capability lines (1 MiB) and 1,000,000 argument
 * lines (64 MiB).
 */
export async function readCommandRequest(reader: PacketReader): Promise<CommandRequest | undefined> {
  const head = await readCommandHead(reader);
  if (!head) return undefined;
  const args: string[] = [];
  let bytes = 0;
  for await (const arg of head.args) {
    bytes += arg.length;
    if (args.length >= MAX_ARGS || bytes > MAX_ARG_BYTES) {
      throw new ProtocolError(
        'PROTOCOL_LIMIT',
        `more than ${MAX_ARGS} arguments or ${MAX_ARG_BYTES} bytes of them in a v2 request`,
      );
    }
    args.push(arg);
  }
  return { command: head.command, capabilities: head.capabilities, args };
}
