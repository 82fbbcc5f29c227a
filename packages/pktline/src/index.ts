/**
 * @gitport/pktline: the pkt-line codec (gitprotocol-common.adoc) with flush, delim and
 * response-end packets, `ERR` as a typed remote error, a streaming decoder over any chunking,
 * side-band / side-band-64k mux and demux, and GIT_TRACE_PACKET-style tracing.
 */
export { isPktLineError, PktLineError, type PktLineErrorCode, PktLineRemoteError } from './errors.js';
export {
  DELIM,
  dataPacket,
  delimPacket,
  encodeData,
  encodePacket,
  encodePackets,
  encodeText,
  FLUSH,
  flushPacket,
  MAX_PACKET_DATA,
  MAX_PACKET_LENGTH,
  type Packet,
  packetText,
  RESPONSE_END,
  responseEndPacket,
  writeLength,
} from './packet.js';
export {
  type ByteSource,
  decodePackets,
  MAX_READ_PACKET_DATA,
  PacketReader,
  type PacketReaderOptions,
  parseLength,
} from './reader.js';
export {
  type Band,
  type DemuxOptions,
  demuxSideband,
  muxSideband,
  SIDEBAND_64K_MAX_DATA,
  SIDEBAND_MAX_DATA,
  SidebandMuxer,
  type SidebandMuxerOptions,
  type SidebandWrite,
} from './sideband.js';
export { formatTrace, PacketTracer, type TraceDirection } from './trace.js';
