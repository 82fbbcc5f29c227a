import { describe, expect, it } from 'vitest';
import {
  DELIM,
  encodeData,
  encodePacket,
  encodePackets,
  encodeText,
  FLUSH,
  formatTrace,
  isPktLineError,
  MAX_PACKET_DATA,
  packetText,
  RESPONSE_END,
  writeLength,
} from './index.js';
import { ascii, text } from './test-helpers.js';

describe('encoding', () => {
  it('frames data with a 4-digit lowercase hex total length', () => {
    expect(ascii(encodeData('hello\n'))).toBe('000ahello\n');
    expect(ascii(encodeText('want abc'))).toBe('000dwant abc\n');
    expect(ascii(encodeText('want abc\n'))).toBe('000dwant abc\n');
    const big = encodeData(new Uint8Array(0xabc).fill(0x41));
    expect(ascii(big.subarray(0, 4))).toBe('0ac0');
  });

  it('writes a length prefix in place, and refuses one past the largest packet', () => {
    const out = new Uint8Array(12).fill(0x2e);
    writeLength(out, 2, 0xfff0);
    writeLength(out, 7, 1);
    expect(ascii(out)).toBe('..fff0.0001.');
    expect(() => writeLength(out, 0, MAX_PACKET_DATA + 5)).toThrow(
      expect.objectContaining({ code: 'PKTLINE_TOO_LONG' }),
    );
    expect(ascii(out)).toBe('..fff0.0001.');
  });

  it('encodes the special packets', () => {
    expect(ascii(FLUSH)).toBe('0000');
    expect(ascii(DELIM)).toBe('0001');
    expect(ascii(RESPONSE_END)).toBe('0002');
    expect(ascii(encodePacket({ kind: 'flush' }))).toBe('0000');
    expect(ascii(encodePacket({ kind: 'delim' }))).toBe('0001');
    expect(ascii(encodePacket({ kind: 'response-end' }))).toBe('0002');
    expect(ascii(encodePackets([{ kind: 'data', payload: text('a') }, { kind: 'flush' }]))).toBe('0005a0000');
  });

  it('accepts exactly MAX_PACKET_DATA bytes and rejects one more with PKTLINE_TOO_LONG', () => {
    const max = encodeData(new Uint8Array(MAX_PACKET_DATA));
    expect(ascii(max.subarray(0, 4))).toBe('fff0');
    expect(max.byteLength).toBe(65520);
    let caught: unknown;
    try {
      encodeData(new Uint8Array(MAX_PACKET_DATA + 1));
    } catch (error) {
      caught = error;
    }
    expect(isPktLineError(caught, 'PKTLINE_TOO_LONG')).toBe(true);
  });

  it('never writes an empty data packet', () => {
    expect(() => encodeData('')).toThrow(expect.objectContaining({ code: 'PKTLINE_EMPTY' }));
    expect(() => encodeData(new Uint8Array(0))).toThrow(expect.objectContaining({ code: 'PKTLINE_EMPTY' }));
  });

  it('encodes non-ASCII and long text as UTF-8, like short ASCII text', () => {
    expect(ascii(encodeText('branch-é'))).toBe('000ebranch-é\n');
    expect(encodeText('branch-é').byteLength).toBe(14);
    const long = 'x'.repeat(5000);
    expect(ascii(encodeText(long))).toBe(`138d${long}\n`);
    expect(ascii(encodeData(`${long}é`))).toBe(`138e${long}é`);
    expect(() => encodeText('é'.repeat(40000))).toThrow(expect.objectContaining({ code: 'PKTLINE_TOO_LONG' }));
    expect(ascii(encodeText(''))).toBe('0005\n');
  });

  it('copies the payload', () => {
    const payload = text('abc');
    const framed = encodeData(payload);
    payload[0] = 0x7a;
    expect(ascii(framed)).toBe('0007abc');
  });
});

describe('text helpers', () => {
  it('removes one trailing LF, and only for data', () => {
    expect(packetText({ kind: 'data', payload: text('a b\n') })).toBe('a b');
    expect(packetText({ kind: 'data', payload: text('a b') })).toBe('a b');
    expect(packetText({ kind: 'data', payload: text('a\n\n') })).toBe('a\n');
    expect(packetText({ kind: 'flush' })).toBeUndefined();
  });
});

describe('trace', () => {
  it('prints packets the way GIT_TRACE_PACKET does', () => {
    expect(formatTrace({ kind: 'flush' }, '<', 'git')).toBe('packet:          git< 0000');
    expect(formatTrace({ kind: 'delim' }, '>', 'upload-pack')).toBe('packet:  upload-pack> 0001');
    expect(formatTrace({ kind: 'data', payload: text('want x\n') }, '>', 'fetch')).toBe('packet:        fetch> want x');
    expect(formatTrace({ kind: 'data', payload: Uint8Array.of(0x61, 0x00, 0x09, 0x7f) }, '<')).toBe(
      'packet:      gitport< a\\0\\11\\177',
    );
    expect(formatTrace({ kind: 'data', payload: text('\x01PACK\0\0') }, '<', 'git')).toBe(
      'packet:          git< PACK ...',
    );
  });
});
