/**
 * What the transport benchmarks share, in Node (benchmarks/transport.bench.ts and its worker
 * thread, bench-peer.ts) and in Chromium (tests/browser/bench/transport.ts and its Web Worker):
 * filling and reading every byte the same way, checking the receiver's answer, the transport
 * sinks that answer what they read, and the raw MessagePort baseline (the rows' peer), sender
 * and receiver, on a port of either platform.
 */
import type { Bus } from '@gitport/bus';
import { DEFAULT_WINDOW, type DuplexStream, listen, open } from '@gitport/transport';

/**
 * Reads every byte of a chunk (four at a time where aligned, in four running sums) into a checksum.
 * Aligned chunks are summed by 32-bit words, so the checksum of a transfer is what `expectedSum`
 * says only if the receiver gets the sender's chunks whole or cut at multiples of four bytes (every
 * bench case writes such sizes).
 */
export function readEveryByte(chunk: Uint8Array): number {
  let sum = 0;
  let i = 0;
  if ((chunk.byteOffset & 3) === 0) {
    const words = new Int32Array(chunk.buffer, chunk.byteOffset, chunk.byteLength >>> 2);
    // four running sums, so the additions do not wait on each other
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    const end = words.length & ~3;
    let w = 0;
    for (; w < end; w += 4) {
      sum = (sum + words[w]!) | 0;
      s1 = (s1 + words[w + 1]!) | 0;
      s2 = (s2 + words[w + 2]!) | 0;
      s3 = (s3 + words[w + 3]!) | 0;
    }
    for (; w < words.length; w++) sum = (sum + words[w]!) | 0;
    sum = (sum + s1 + s2 + s3) | 0;
    i = words.length << 2;
  }
  for (; i < chunk.byteLength; i++) sum = (sum + chunk[i]!) | 0;
  return sum;
}

/** The byte the senders fill every position of chunk `index` with. */
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

/**
 * Sends `total` bytes in `chunk`s over the transport to the sink `name` of bus peer `peer`, each
 * chunk allocated, filled and transferred, and checks the sink's answer.
 */
export async function sendToSink(bus: Bus, peer: string, name: string, total: number, chunk: number): Promise<void> {
  const stream = await open(bus, peer, name);
  const count = total / chunk;
  for (let i = 0; i < count; i++) {
    await stream.write(new Uint8Array(chunk).fill(fillByte(i)), { transfer: true });
  }
  await stream.end();
  let text = '';
  const decoder = new TextDecoder();
  for await (const part of stream) text += decoder.decode(part, { stream: true });
  checkAnswer(JSON.parse(text) as BenchAnswer, total, chunk);
}

// ---------------------------------------------------------------- the raw MessagePort peer

/**
 * A bare message port as either platform gives it (worker_threads or DOM): `post` with an
 * optional transfer list, and `onMessage` to receive the data of every message.
 */
export interface RawPort {
  post(message: RawMessage, transfer?: ArrayBuffer[]): void;
  onMessage(handler: (message: RawMessage) => void): void;
}

/**
 * The raw baseline's messages, all of one transfer `s`. Sending: `{open: window}`, `{b}` per
 * chunk, `{end: true}`; the receiver answers `{credit}` as it reads (in quarter-window batches)
 * and `{total, sum}` at the end. The other way: `{pull: {total, chunk, window}}` asks for
 * chunks, which come as `{b}` within the credit the asker grants (`{credit}`), then `{fin: true}`.
 */
export interface RawMessage {
  s: number;
  open?: number;
  b?: Uint8Array;
  end?: true;
  credit?: number;
  total?: number;
  sum?: number;
  pull?: { total: number; chunk: number; window: number };
  fin?: true;
}

/** What a receiver answers: how many bytes it read and their checksum. */
export interface BenchAnswer {
  total: number;
  sum: number;
}

const checksums = new Map<string, number>();

/** The checksum a receiver must answer for `count` chunks of `size` bytes, as the senders fill them. */
export function expectedSum(size: number, count: number): number {
  let sum = 0;
  for (let i = 0; i < count; i++) {
    const key = `${size}:${fillByte(i)}`;
    let s = checksums.get(key);
    if (s === undefined) {
      s = readEveryByte(new Uint8Array(size).fill(fillByte(i)));
      checksums.set(key, s);
    }
    sum = (sum + s) | 0;
  }
  return sum;
}

/** Throws unless `answer` is what a receiver of `total` bytes in `chunk`s must answer. */
export function checkAnswer(answer: BenchAnswer, total: number, chunk: number): void {
  if (answer.total !== total || answer.sum !== expectedSum(chunk, total / chunk)) {
    throw new Error(`the receiver got ${answer.total} bytes (checksum ${answer.sum}), expected ${total}`);
  }
}

/** A sender's credit on one transfer, and the wait for more. */
interface Credit {
  credit: number;
  wake?: () => void;
}

function grant(state: Credit, credit: number): void {
  state.credit += credit;
  const wake = state.wake;
  state.wake = undefined;
  wake?.();
}

/** Posts `total / chunk` chunks on transfer `s`, each allocated, filled and transferred, within `state`'s credit. */
async function postChunks(port: RawPort, s: number, state: Credit, total: number, chunk: number): Promise<void> {
  const count = total / chunk;
  for (let i = 0; i < count; i++) {
    while (state.credit < chunk) {
      await new Promise<void>((resolve) => {
        state.wake = resolve;
      });
    }
    const b = new Uint8Array(chunk).fill(fillByte(i));
    state.credit -= chunk;
    port.post({ s, b }, [b.buffer]);
  }
}

/** A receiver's state on one transfer: every byte read into a checksum, credit granted back in quarter windows. */
interface Inbound extends BenchAnswer {
  window: number;
  ungranted: number;
}

function readChunk(port: RawPort, s: number, state: Inbound, b: Uint8Array): void {
  state.sum = (state.sum + readEveryByte(b)) | 0;
  state.total += b.byteLength;
  state.ungranted += b.byteLength;
  if (state.ungranted >= state.window / 4) {
    port.post({ s, credit: state.ungranted });
    state.ungranted = 0;
  }
}

/** The main-thread side of the raw baseline. */
export interface RawSender {
  /** Sends `total` bytes in `chunk`s with a `window`-byte credit window; checks the receiver's answer. */
  send(total: number, chunk: number, window: number): Promise<void>;
  /** The other way: the far side sends, this side reads every byte, grants credit and checks. */
  receive(total: number, chunk: number, window: number): Promise<void>;
}

/** The minimal raw sender (and receiver) on `port`, the peer of the transport rows. */
export function rawSender(port: RawPort): RawSender {
  const outgoing = new Map<number, Credit & { done: (answer: BenchAnswer) => void }>();
  const incoming = new Map<number, Inbound & { done: (answer: BenchAnswer) => void }>();
  let ids = 0;
  port.onMessage((m) => {
    const inbound = incoming.get(m.s);
    if (inbound !== undefined) {
      if (m.b !== undefined) {
        readChunk(port, m.s, inbound, m.b);
      } else {
        incoming.delete(m.s);
        inbound.done({ total: inbound.total, sum: inbound.sum });
      }
      return;
    }
    const state = outgoing.get(m.s);
    if (state === undefined) return;
    if (m.credit !== undefined) {
      grant(state, m.credit);
    } else {
      outgoing.delete(m.s);
      state.done({ total: m.total!, sum: m.sum! });
    }
  });
  return {
    async send(total, chunk, window) {
      const s = ++ids;
      const answer = new Promise<BenchAnswer>((done) => {
        outgoing.set(s, { credit: window, done });
      });
      const state = outgoing.get(s)!;
      port.post({ s, open: window });
      await postChunks(port, s, state, total, chunk);
      port.post({ s, end: true });
      checkAnswer(await answer, total, chunk);
    },
    async receive(total, chunk, window) {
      const s = ++ids;
      const answer = new Promise<BenchAnswer>((done) => {
        incoming.set(s, { window, ungranted: 0, total: 0, sum: 0, done });
      });
      port.post({ s, pull: { total, chunk, window } });
      checkAnswer(await answer, total, chunk);
    },
  };
}

/** The far side of the raw baseline on `port`: reads what `send` sends, sends what `receive` pulls. */
export function serveRaw(port: RawPort): void {
  const incoming = new Map<number, Inbound>();
  const sources = new Map<number, Credit>();
  const source = async (s: number, total: number, chunk: number, window: number) => {
    const state: Credit = { credit: window };
    sources.set(s, state);
    await postChunks(port, s, state, total, chunk);
    sources.delete(s);
    port.post({ s, fin: true });
  };
  port.onMessage((m) => {
    if (m.pull !== undefined) {
      void source(m.s, m.pull.total, m.pull.chunk, m.pull.window);
      return;
    }
    if (m.credit !== undefined) {
      const state = sources.get(m.s);
      if (state !== undefined) grant(state, m.credit);
      return;
    }
    if (m.open !== undefined) {
      incoming.set(m.s, { window: m.open, ungranted: 0, total: 0, sum: 0 });
      return;
    }
    const state = incoming.get(m.s);
    if (state === undefined) throw new Error(`raw bench peer: transfer ${m.s} was never opened`);
    if (m.b !== undefined) {
      readChunk(port, m.s, state, m.b);
      return;
    }
    incoming.delete(m.s);
    port.post({ s: m.s, total: state.total, sum: state.sum });
  });
}

/** A worker_threads `MessagePort` (or anything with its `postMessage` and `on('message')`) as a RawPort. */
export function nodeRawPort(port: {
  postMessage(message: unknown, transfer?: readonly ArrayBuffer[]): void;
  on(event: 'message', handler: (message: RawMessage) => void): unknown;
}): RawPort {
  return {
    post: (message, transfer) => port.postMessage(message, transfer),
    onMessage: (handler) => {
      port.on('message', handler);
    },
  };
}

/** A DOM `MessagePort` as a RawPort (started once its handler is set). */
export function domRawPort(port: MessagePort): RawPort {
  return {
    post: (message, transfer) => port.postMessage(message, transfer ?? []),
    onMessage: (handler) => {
      port.addEventListener('message', (event: MessageEvent) => handler(event.data as RawMessage));
      port.start();
    },
  };
}
