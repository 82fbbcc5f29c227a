/** Shared helpers for the pktline tests (not part of the package). */
import { decodePackets, type Packet, type PacketReader } from './index.js';

/** An async source that yields `bytes` cut at the given offsets. */
export async function* chunked(bytes: Uint8Array, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const cut of cuts) {
    yield bytes.slice(at, cut);
    at = cut;
  }
  yield bytes.slice(at);
}

/** Fixed-size chunks. */
export async function* inChunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, Math.min(at + size, bytes.byteLength));
}

export async function collect(source: AsyncIterable<Uint8Array>): Promise<Packet[]> {
  const out: Packet[] = [];
  for await (const p of decodePackets(source))
    out.push(p.kind === 'data' ? { kind: 'data', payload: p.payload.slice() } : p);
  return out;
}

export async function readAll(reader: PacketReader): Promise<Packet[]> {
  const out: Packet[] = [];
  for (;;) {
    const p = await reader.read();
    if (p === undefined) return out;
    out.push(p);
  }
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export async function concatAsync(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of source) parts.push(part.slice());
  return concat(parts);
}

export { prng } from '@gitport/test-helpers/prng';

export function randomBytes(random: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (random() * 256) | 0;
  return out;
}

export const text = (s: string) => new TextEncoder().encode(s);
export const ascii = (b: Uint8Array) => new TextDecoder().decode(b);

/** Where two byte arrays first differ (-1 when equal): fast, unlike a deep toEqual on megabytes. */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.byteLength, b.byteLength);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.byteLength === b.byteLength ? -1 : n;
}

/** Packets with payloads replaced by a short digest, so deep equality stays cheap. */
export function summarize(packets: readonly Packet[]): unknown[] {
  return packets.map((p) => {
    if (p.kind !== 'data') return p.kind;
    let h = 0x811c9dc5;
    for (let i = 0; i < p.payload.byteLength; i++) h = Math.imul(h ^ p.payload[i]!, 16777619);
    return `${p.payload.byteLength}:${(h >>> 0).toString(16)}`;
  });
}
