/**
 * What both sides of the transport benchmark share (Node worker thread and Web Worker): reading
 * and filling every byte the same way, and the transport sinks that answer what they read.
 */
import type { Bus } from '@gitport/bus';
import { DEFAULT_WINDOW, type DuplexStream, listen } from '@gitport/transport';

/** Reads every byte of a chunk (four at a time where aligned) into a checksum. */
export function readEveryByte(chunk: Uint8Array): number {
  let sum = 0;
  let i = 0;
  if ((chunk.byteOffset & 3) === 0) {
    const words = new Int32Array(chunk.buffer, chunk.byteOffset, chunk.byteLength >>> 2);
    for (let w = 0; w < words.length; w++) sum = (sum + words[w]!) | 0;
    i = words.length << 2;
  }
  for (; i < chunk.byteLength; i++) sum = (sum + chunk[i]!) | 0;
  return sum;
}

/** The checksum `readEveryByte` gives over `count` chunks of `size` bytes filled with `fillByte(i)`. */
export function fillByte(index: number): number {
  return (index * 7 + 1) & 255;
}

const encoder = new TextEncoder();

/** Reads a stream to its end, every byte, then answers `{ total, sum }` (JSON) and ends. */
async function sink(stream: DuplexStream): Promise<void> {
  let total = 0;
  let sum = 0;
  for await (const chunk of stream) {
    sum = (sum + readEveryByte(chunk)) | 0;
    total += chunk.byteLength;
  }
  await stream.write(encoder.encode(JSON.stringify({ total, sum })));
  await stream.end();
}

/** The sinks a bench peer listens on, by the receive window each grants. */
const SINKS: ReadonlyMap<number, string> = new Map([
  [DEFAULT_WINDOW, 'bench-sink'],
  [4 * 1024 * 1024, 'bench-sink-4m'],
]);

/** The sink whose window is `window`, so the transport side runs with the raw side's window. */
export function benchSinkFor(window: number): string {
  const name = SINKS.get(window);
  if (name === undefined) throw new Error(`no bench sink with a ${window}-byte window`);
  return name;
}

/** Listens on every bench sink, each with its window. */
export function listenBenchSinks(bus: Bus): void {
  const onStream = (stream: DuplexStream) => {
    sink(stream).catch((error) => stream.abort(error));
  };
  for (const [window, name] of SINKS) listen(bus, name, onStream, { window });
}
