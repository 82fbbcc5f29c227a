/**
 * The byte channels the servers and clients speak over, and the repository they serve.
 *
 * Stateful mode: one `Connection` for the whole exchange (a transport DuplexStream, a child
 * process's stdio). Stateless mode (smart HTTP): one request body in and one response body out
 * per round; see http.ts.
 */
import type { ObjectStore } from '@gitport/pack';
import { type Packet, PacketReader, packetText } from '@gitport/pktline';
import { ProtocolError } from './errors.js';
import type { RefStore } from './ref-store.js';

export interface Connection {
  input: AsyncIterable<Uint8Array>;
  /**
   * Writes bytes. With `transfer`, the caller gives them up (a buffer of its own that it never
   * touches again), so a transport may move the buffer instead of copying it.
   */
  write(bytes: Uint8Array, options?: { transfer?: boolean }): Promise<void>;
  /** Half-closes our side (EOF for the peer). */
  end(): Promise<void>;
  /** Optional: sends what was written so far at once (a transport that gathers writes). */
  flush?(): void;
  /** Optional: writes of about this many bytes travel best (a transport's flow-control batch). */
  readonly writeSize?: number;
}

export interface Repository {
  objects: ObjectStore;
  refs: RefStore;
}

/** Reads the next packet; the peer hanging up is an error here. */
export async function requirePacket(reader: PacketReader, what: string): Promise<Packet> {
  const packet = await reader.read();
  if (!packet) throw new ProtocolError('PROTOCOL_UNEXPECTED_EOF', `the remote end hung up while ${what}`);
  return packet;
}

/** Reads one text line (data packet) or throws naming what was expected. */
export async function requireLine(reader: PacketReader, what: string): Promise<string> {
  const packet = await requirePacket(reader, what);
  const text = packetText(packet);
  if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `expected ${what}, got ${packet.kind}`);
  return text;
}

export function newReader(input: AsyncIterable<Uint8Array>, signal?: AbortSignal): PacketReader {
  return signal ? new PacketReader(input, { signal }) : new PacketReader(input);
}

export { concatBytes } from './concat-bytes.js';
