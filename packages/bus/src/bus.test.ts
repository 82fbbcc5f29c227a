import { MessageChannel, type MessagePort } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type Bus,
  BusError,
  type BusMessageEvent,
  type BusOptions,
  createBus,
  createHub,
  type Endpoint,
  type MessageListener,
  PROTOCOL_VERSION,
} from './index.js';
import { nodeEndpoint } from './node.js';
import { Kind, Slot } from './wire.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function bus(options: BusOptions): Bus {
  const b = createBus(options);
  cleanups.push(() => b.close());
  return b;
}

function channel(): { port1: MessagePort; port2: MessagePort } {
  const c = new MessageChannel();
  cleanups.push(() => {
    c.port1.close();
    c.port2.close();
  });
  return c;
}

async function link(a: Bus, b: Bus) {
  const { port1, port2 } = channel();
  const [pa, pb] = await Promise.all([a.connect(nodeEndpoint(port1)), b.connect(nodeEndpoint(port2))]);
  return { pa, pb, port1, port2 };
}

function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code,
  );
}

/** An envelope or handshake frame as received, read by slot (`m[Slot.kind]`) or field (`m.$gitportBus`). */
type Received = Record<number, unknown> & { readonly $gitportBus?: unknown; readonly code?: unknown };

/** The envelope with these slots (the slots left out are holes, read as undefined). */
function envelope(slots: Partial<Record<Slot, unknown>>): unknown[] {
  return Object.assign([], slots);
}

/** The envelopes of a data frame: a lone envelope (its kind comes first), or a batch of them. */
function envelopesOf(frame: unknown): unknown[][] {
  if (!Array.isArray(frame)) return [];
  return typeof frame[0] === 'number' ? [frame] : (frame as unknown[][]);
}

/** A hand-driven peer speaking the wire format directly, to play a misbehaving party. */
class RawPeer {
  readonly inbox: Received[] = [];
  private waiters: (() => void)[] = [];
  private seq = 0;
  constructor(
    readonly port: MessagePort,
    readonly id: string,
  ) {
    port.on('message', (data: unknown) => {
      if (Array.isArray(data)) this.inbox.push(...(envelopesOf(data) as Received[]));
      else this.inbox.push(data as Received);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  hello(extra: Record<string, unknown> = {}): void {
    this.port.postMessage({ $gitportBus: 'hello', id: this.id, v: PROTOCOL_VERSION, hub: false, ...extra });
    this.port.postMessage({ $gitportBus: 'ack', id: this.id, v: PROTOCOL_VERSION, hub: false, ...extra });
  }
  send(slots: Partial<Record<Slot, unknown>>): void {
    this.port.postMessage([
      envelope({ [Slot.source]: this.id, [Slot.hops]: 4, [Slot.sequence]: ++this.seq, ...slots }),
    ]);
  }
  async next(predicate: (m: Received) => boolean): Promise<Received> {
    for (;;) {
      const at = this.inbox.findIndex(predicate);
      if (at !== -1) return this.inbox.splice(at, 1)[0]!;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

async function rawPeer(b: Bus, id: string, extra: Record<string, unknown> = {}) {
  const { port1, port2 } = channel();
  const raw = new RawPeer(port2, id);
  const connected = b.connect(nodeEndpoint(port1));
  raw.hello(extra);
  return { raw, connected };
}

describe('handshake and limits', () => {
  it('refuses a duplicate id, its own id and another protocol version, on both sides', async () => {
    const a = bus({ id: 'a' });
    await link(a, bus({ id: 'b' }));
    const { port1, port2 } = channel();
    const dup = bus({ id: 'b' });
    const codes = await Promise.all([codeOf(a.connect(nodeEndpoint(port1))), codeOf(dup.connect(nodeEndpoint(port2)))]);
    expect(codes).toEqual(['BUS_HANDSHAKE', 'BUS_HANDSHAKE']);
    const self = await rawPeer(a, 'a');
    expect(await codeOf(self.connected)).toBe('BUS_HANDSHAKE');
    const old = await rawPeer(a, 'c', { v: PROTOCOL_VERSION + 1 });
    expect(await codeOf(old.connected)).toBe('BUS_HANDSHAKE');
    expect((await old.raw.next((m) => m.$gitportBus === 'refuse')).code).toBe('BUS_HANDSHAKE');
    expect([...a.peers.keys()]).toEqual(['b']);
  });

  it('drops a received message that claims billions of holes, without walking them', async () => {
    const reported: unknown[] = [];
    const a = bus({ id: 'a', onError: (error) => reported.push((error as { code?: string }).code) });
    const { raw, connected } = await rawPeer(a, 'r');
    await connected;
    const seen: unknown[] = [];
    a.on('e', (payload) => seen.push(payload));
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    raw.send({ [Slot.kind]: Kind.event, [Slot.name]: 'e', [Slot.payload]: sparse });
    raw.send({ [Slot.kind]: Kind.event, [Slot.name]: 'e', [Slot.payload]: 'after' });
    await new Promise<void>((resolve) => a.on('e', () => resolve()));
    expect(seen).toEqual(['after']);
    expect(reported).toEqual(['BUS_MESSAGE_TOO_LARGE']);
  });

  it('enforces maxPeers', async () => {
    const a = bus({ id: 'a', maxPeers: 2 });
    await link(a, bus({ id: 'b' }));
    await link(a, bus({ id: 'c' }));
    const { port1, port2 } = channel();
    const d = bus({ id: 'd' });
    const codes = await Promise.all([codeOf(a.connect(nodeEndpoint(port1))), codeOf(d.connect(nodeEndpoint(port2)))]);
    expect(codes).toEqual(['BUS_TOO_MANY_PEERS', 'BUS_TOO_MANY_PEERS']);
    expect(a.peers.size).toBe(2);
  });

  it('enforces maxPendingRequests', async () => {
    const a = bus({ id: 'a', maxPendingRequests: 3 });
    const b = bus({ id: 'b' });
    await link(a, b);
    b.handle('hang', (_p, meta) => new Promise((resolve) => meta.signal.addEventListener('abort', resolve)));
    const held = [1, 2, 3].map(() => codeOf(a.request('b', 'hang', null)));
    expect(await codeOf(a.request('b', 'hang', null))).toBe('BUS_TOO_MANY_PENDING');
    expect(a.pendingRequests).toBe(3);
    a.close();
    expect(await Promise.all(held)).toEqual(['BUS_CLOSED', 'BUS_CLOSED', 'BUS_CLOSED']);
  });

  it('answers hostile handler results with an error instead of hanging', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    await link(a, b);
    b.handle('getter', () => ({
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is the point of this test
      get then() {
        throw Object.assign(new Error('getter threw'), { code: 'E_GETTER' });
      },
    }));
    b.handle('bad-then', () => ({
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is the point of this test
      then() {
        throw Object.assign(new Error('then threw'), { code: 'E_THEN' });
      },
    }));
    b.handle('function-result', () => () => 1);
    expect(await codeOf(a.request('b', 'getter', null))).toBe('E_GETTER');
    expect(await codeOf(a.request('b', 'bad-then', null))).toBe('E_THEN');
    expect(await codeOf(a.request('b', 'function-result', null))).toBe('BUS_DATA_CLONE');
  });

  it('bounds unfinished incoming requests too', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b', maxPendingRequests: 2 });
    await link(a, b);
    b.handle('hang', (_p, meta) => new Promise((resolve) => meta.signal.addEventListener('abort', resolve)));
    const held = [1, 2].map(() => codeOf(a.request('b', 'hang', null)));
    expect(await codeOf(a.request('b', 'hang', null))).toBe('BUS_TOO_MANY_PENDING');
    a.close();
    expect(await Promise.all(held)).toEqual(['BUS_CLOSED', 'BUS_CLOSED']);
  });

  it('times a handshake out, and aborts one', async () => {
    const a = bus({ id: 'a' });
    const { port1 } = channel();
    expect(await codeOf(a.connect(nodeEndpoint(port1), { timeout: 30 }))).toBe('BUS_TIMEOUT');
    const controller = new AbortController();
    const pending = codeOf(a.connect(nodeEndpoint(channel().port1), { signal: controller.signal }));
    controller.abort();
    expect(await pending).toBe('BUS_ABORTED');
  });

  it('rejects bad ids and handler names with typed errors', () => {
    expect(() => createBus({ id: '' })).toThrow(expect.objectContaining({ code: 'BUS_INVALID_ARGUMENT' }));
    const a = bus({ id: 'a' });
    a.handle('x', () => 1);
    expect(() => a.handle('x', () => 2)).toThrow(expect.objectContaining({ code: 'BUS_INVALID_ARGUMENT' }));
    expect(() => a.send('nobody', 'x', 1)).toThrow(expect.objectContaining({ code: 'BUS_UNKNOWN_PEER' }));
  });
});

describe('trust', () => {
  it('accepts a response only from the peer the request went to', async () => {
    const a = bus({ id: 'a' });
    const b = await rawPeer(a, 'b');
    await b.connected;
    const c = await rawPeer(a, 'c');
    await c.connected;
    const answer = a.request('b', 'question', { q: 1 });
    const request = await b.raw.next((m) => m[Slot.kind] === Kind.request);
    expect(request[Slot.name]).toBe('question');
    expect(request[Slot.target]).toBeUndefined(); // implied between direct neighbours
    expect(Number.isSafeInteger(request[Slot.id])).toBe(true);
    // A third peer answers in its own name, then pretending to be b: both ignored.
    c.raw.send({
      [Slot.kind]: Kind.response,
      [Slot.target]: 'a',
      [Slot.id]: request[Slot.id],
      [Slot.payload]: 'from c',
    });
    c.raw.send({
      [Slot.kind]: Kind.response,
      [Slot.source]: 'b',
      [Slot.target]: 'a',
      [Slot.id]: request[Slot.id],
      [Slot.payload]: 'c as b',
    });
    c.raw.send({
      [Slot.kind]: Kind.errorResponse,
      [Slot.source]: 'b',
      [Slot.target]: 'a',
      [Slot.id]: request[Slot.id],
      [Slot.payload]: { message: 'c as b' },
    });
    // c's traffic has been processed once a's answer to c's ping comes back.
    c.raw.send({ [Slot.kind]: Kind.ping, [Slot.target]: 'a' });
    await c.raw.next((m) => m[Slot.kind] === Kind.pong);
    b.raw.send({
      [Slot.kind]: Kind.response,
      [Slot.target]: 'a',
      [Slot.id]: request[Slot.id],
      [Slot.payload]: 'from b',
    });
    expect(await answer).toBe('from b');
  });

  it('gives requests random 53-bit ids, not a count', async () => {
    const a = bus({ id: 'a' });
    const b = await rawPeer(a, 'b');
    await b.connected;
    for (let n = 0; n < 64; n++) void a.request('b', 'question', n).catch(() => {});
    const ids: number[] = [];
    while (ids.length < 64) ids.push((await b.raw.next((m) => m[Slot.kind] === Kind.request))[Slot.id] as number);
    expect(ids.every((id) => Number.isSafeInteger(id) && id >= 0)).toBe(true);
    expect(new Set(ids).size).toBe(64);
    // 53 random bits: ids above 2^52 come about half the time, and neighbours are not a step apart
    expect(ids.filter((id) => id >= 2 ** 52).length).toBeGreaterThan(10);
    expect(ids.slice(1).filter((id, i) => Math.abs(id - ids[i]!) <= 64).length).toBe(0);
  });

  it('drops events that claim another source, and replayed sequence numbers', async () => {
    const a = bus({ id: 'a' });
    const b = await rawPeer(a, 'b');
    await b.connected;
    const seen: [unknown, string][] = [];
    a.on('e', (payload, meta) => seen.push([payload, meta.from]));
    b.raw.send({
      [Slot.kind]: Kind.event,
      [Slot.source]: 'c',
      [Slot.target]: 'a',
      [Slot.name]: 'e',
      [Slot.payload]: 'spoofed',
    });
    b.raw.port.postMessage([
      envelope({
        [Slot.kind]: Kind.event,
        [Slot.source]: 'b',
        [Slot.target]: 'a',
        [Slot.hops]: 4,
        [Slot.sequence]: 1,
        [Slot.name]: 'e',
        [Slot.payload]: 'replayed',
      }),
    ]);
    b.raw.send({ [Slot.kind]: Kind.event, [Slot.target]: 'a', [Slot.name]: 'e', [Slot.payload]: 'genuine' });
    b.raw.send({ [Slot.kind]: Kind.event, [Slot.target]: 'a', [Slot.name]: '__proto__', [Slot.payload]: 'proto' });
    b.raw.send({ [Slot.kind]: Kind.ping, [Slot.target]: 'a' });
    await b.raw.next((m) => m[Slot.kind] === Kind.pong);
    expect(seen).toEqual([['genuine', 'b']]);
    expect(({} as Record<string, unknown>).e).toBeUndefined();
  });

  it('survives garbage on the wire', async () => {
    const a = bus({ id: 'a' });
    const b = await rawPeer(a, 'b');
    await b.connected;
    for (const junk of [
      null,
      1,
      'x',
      [null],
      [1, 'x'],
      [{}],
      [{ [Slot.kind]: Kind.request, [Slot.source]: 'b', [Slot.sequence]: 'x' }],
      [[]],
      [[1]],
      envelope({ [Slot.kind]: Kind.request, [Slot.source]: 'b', [Slot.sequence]: 'x' }),
      [envelope({ [Slot.kind]: Kind.request, [Slot.source]: 'b', [Slot.sequence]: Number.NaN })],
      [envelope({ [Slot.kind]: Kind.request, [Slot.source]: 'b', [Slot.sequence]: 1.5 })],
      { $gitportBus: 'nope' },
    ]) {
      b.raw.port.postMessage(junk);
    }
    b.raw.send({ [Slot.kind]: Kind.request, [Slot.target]: 'a', [Slot.name]: 'constructor', [Slot.id]: 'id-1' });
    const reply = await b.raw.next((m) => m[Slot.kind] === Kind.errorResponse);
    expect(reply[Slot.payload]).toMatchObject({ code: 'BUS_NO_HANDLER' });
    expect(a.peers.has('b')).toBe(true);
  });

  it('calls only handlers it was given: inherited names are none, and they work as names once registered', async () => {
    const a = bus({ id: 'a' });
    const b = await rawPeer(a, 'b');
    await b.connected;
    const ask = async (name: string, id: string) => {
      b.raw.send({
        [Slot.kind]: Kind.request,
        [Slot.target]: 'a',
        [Slot.name]: name,
        [Slot.id]: id,
        [Slot.payload]: 1,
      });
      return b.raw.next(
        (m) => (m[Slot.kind] === Kind.response || m[Slot.kind] === Kind.errorResponse) && m[Slot.id] === id,
      );
    };
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect((await ask(name, `none-${name}`))[Slot.payload]).toMatchObject({ code: 'BUS_NO_HANDLER' });
    }
    const off = a.handle('__proto__', (n) => `proto ${String(n)}`);
    a.handle('constructor', (n) => `constructor ${String(n)}`);
    expect((await ask('__proto__', 'p1'))[Slot.payload]).toBe('proto 1');
    expect((await ask('constructor', 'c1'))[Slot.payload]).toBe('constructor 1');
    expect((await ask('toString', 't1'))[Slot.payload]).toMatchObject({ code: 'BUS_NO_HANDLER' });
    expect(() => a.handle('__proto__', () => 0)).toThrow(expect.objectContaining({ code: 'BUS_INVALID_ARGUMENT' }));
    off();
    expect((await ask('__proto__', 'p2'))[Slot.payload]).toMatchObject({ code: 'BUS_NO_HANDLER' });
  });
});

describe('fuzz', () => {
  it('random envelopes from a connected peer never crash the bus or pollute prototypes (seeded)', async () => {
    const seed = 20261122;
    const a = bus({ id: 'a', onError: () => {} });
    const b = await rawPeer(a, 'b');
    await b.connected;
    let called = 0;
    a.handle('count', () => ++called);
    const value = fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 12 }),
      fc.integer(),
      fc.double(),
      fc.constantFrom('__proto__', 'constructor', 'toString', 'a', 'b', 'count', '*'),
      fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
      fc.object({ maxDepth: 2 }),
    );
    const randomEnvelope = fc.record(
      {
        [Slot.kind]: fc.constantFrom<unknown>(...Object.values(Kind), 11, -1, 'zz', 'constructor'),
        [Slot.source]: value,
        [Slot.target]: value,
        [Slot.sequence]: fc.oneof(fc.integer(), value),
        [Slot.hops]: value,
        [Slot.name]: value,
        [Slot.id]: value,
        [Slot.payload]: value,
      },
      { requiredKeys: [Slot.kind] },
    );
    const frames = fc.sample(fc.array(randomEnvelope, { minLength: 1, maxLength: 5 }), { seed, numRuns: 300 });
    for (const frame of frames) {
      // never a bye from b itself: that would (rightly) end the connection
      b.raw.port.postMessage(
        frame
          .filter((e) => e[Slot.kind] !== Kind.bye || (e[Slot.source] !== undefined && e[Slot.source] !== 'b'))
          .map(envelope),
      );
    }
    // Sequence numbers only go up: the fuzz may have used large ones, so the last word takes the largest.
    b.raw.port.postMessage(
      envelope({
        [Slot.kind]: Kind.request,
        [Slot.source]: 'b',
        [Slot.target]: 'a',
        [Slot.sequence]: Number.MAX_SAFE_INTEGER,
        [Slot.name]: 'count',
        [Slot.id]: 'final',
      }),
    );
    const reply = await b.raw.next((m) => m[Slot.kind] === Kind.response && m[Slot.id] === 'final');
    expect(typeof reply[Slot.payload]).toBe('number');
    expect(a.peers.has('b')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('hub routing', () => {
  /** Hubs with these ids, closed after the test. */
  const hubsOf = (...ids: string[]): Bus[] =>
    ids.map((id) => {
      const hub = createHub({ id });
      cleanups.push(() => hub.close());
      return hub;
    });
  /** Settles once `x` knows peer `id` (at once if it does already). */
  const sees = (x: Bus, id: string): Promise<void> =>
    x.peers.has(id)
      ? Promise.resolve()
      : new Promise<void>((resolve) => x.onPeer('connected', (peer) => peer === id && resolve()));
  /** Settles when `x` loses peer `id`. */
  const loses = (x: Bus, id: string): Promise<void> =>
    new Promise<void>((resolve) => x.onPeer('lost', (peer) => peer === id && resolve()));
  /** Three hubs in a loop: h1 -- h2 -- h3 -- h1. */
  const loopOfThree = async (): Promise<[Bus, Bus, Bus]> => {
    const [h1, h2, h3] = hubsOf('h1', 'h2', 'h3') as [Bus, Bus, Bus];
    await link(h1, h2);
    await link(h2, h3);
    await link(h3, h1);
    return [h1, h2, h3];
  };

  async function star() {
    const hub = createHub({ id: 'hub' });
    cleanups.push(() => hub.close());
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    await link(a, hub);
    const bSeesA = new Promise<void>((resolve) => b.onPeer('connected', (peer) => peer === 'a' && resolve()));
    await link(b, hub);
    await bSeesA;
    return { hub, a, b };
  }

  it('forwards events and requests between peers that are not directly connected', async () => {
    const { a, b } = await star();
    expect(a.peers.get('b')).toEqual({ id: 'b', via: 'hub' });
    expect(b.peers.get('a')).toEqual({ id: 'a', via: 'hub' });
    b.handle('who', (_p, meta) => `b answers ${meta.from}`);
    expect(await a.request('b', 'who', null)).toBe('b answers a');
    const got = new Promise((resolve) => b.on('hello', (payload, meta) => resolve([payload, meta.from])));
    a.send('b', 'hello', { x: 1 });
    expect(await got).toEqual([{ x: 1 }, 'a']);
  });

  it('tells peers when a peer behind the hub is lost', async () => {
    const { a, b } = await star();
    b.handle('hang', () => new Promise(() => {}));
    const pending = codeOf(a.request('b', 'hang', null, { timeout: 0 }));
    const lost = new Promise((resolve) => a.onPeer('lost', (peer, reason) => resolve([peer, reason?.code])));
    await a.request('hub', 'nothing', null).catch(() => {});
    b.close();
    expect(await lost).toEqual(['b', 'BUS_PEER_LOST']);
    expect(await pending).toBe('BUS_PEER_LOST');
  });

  it('broadcasts through the hub, and loses every peer behind a hub that goes away', async () => {
    const { hub, a, b } = await star();
    const got = new Promise((resolve) => b.on('news', (payload, meta) => resolve([payload, meta.from])));
    const hubGot = new Promise((resolve) => hub.on('news', (payload) => resolve(payload)));
    a.signal('news', 'to everyone');
    expect(await got).toEqual(['to everyone', 'a']);
    expect(await hubGot).toBe('to everyone');
    const lost: string[] = [];
    const allLost = new Promise<void>((resolve) =>
      a.onPeer('lost', (peer) => {
        lost.push(peer);
        if (lost.length === 2) resolve();
      }),
    );
    hub.close();
    await allLost;
    expect(lost.sort()).toEqual(['b', 'hub']);
    expect(a.peers.size).toBe(0);
  });

  it('reports drops caused by a peer one by one up to 20 a second, then their count', async () => {
    const reported: { code?: string; data?: { count?: number } }[] = [];
    let summarized: () => void = () => {};
    const summary = new Promise<void>((resolve) => {
      summarized = resolve;
    });
    const hub = createHub({
      id: 'hub',
      onError: (error) => {
        reported.push(error as { code?: string });
        if ((error as { code?: string }).code === 'BUS_REPORTS_SUPPRESSED') summarized();
      },
    });
    cleanups.push(() => hub.close());
    const raw = await rawPeer(hub, 'r');
    await raw.connected;
    for (let i = 0; i < 100; i++)
      raw.raw.send({ [Slot.kind]: Kind.event, [Slot.target]: 'ghost', [Slot.name]: 'e', [Slot.payload]: i });
    await summary;
    expect(reported.slice(0, 20).map((e) => e.code)).toEqual(new Array(20).fill('BUS_UNKNOWN_PEER'));
    expect(reported.slice(20).map((e) => [e.code, e.data?.count])).toEqual([['BUS_REPORTS_SUPPRESSED', 80]]);
  });

  it('answers for an unknown target and honours the hop limit', async () => {
    const reported: unknown[] = [];
    const hub = createHub({ id: 'hub', onError: (error) => reported.push((error as { code?: string }).code) });
    cleanups.push(() => hub.close());
    const raw = await rawPeer(hub, 'r');
    await raw.connected;
    raw.raw.send({ [Slot.kind]: Kind.request, [Slot.target]: 'ghost', [Slot.name]: 'x', [Slot.id]: 'q1' });
    expect(await raw.raw.next((m) => m[Slot.kind] === Kind.errorResponse && m[Slot.id] === 'q1')).toMatchObject({
      [Slot.source]: 'ghost',
      [Slot.payload]: { code: 'BUS_UNKNOWN_PEER' },
    });
    const b = bus({ id: 'b' });
    await link(b, hub);
    const seen: unknown[] = [];
    b.on('e', (p) => seen.push(p));
    raw.raw.send({
      [Slot.kind]: Kind.event,
      [Slot.target]: 'b',
      [Slot.name]: 'e',
      [Slot.payload]: 'no hops',
      [Slot.hops]: 0,
    });
    raw.raw.send({
      [Slot.kind]: Kind.request,
      [Slot.target]: 'b',
      [Slot.name]: 'ping',
      [Slot.id]: 'q0',
      [Slot.hops]: 0,
    });
    expect(await raw.raw.next((m) => m[Slot.kind] === Kind.errorResponse && m[Slot.id] === 'q0')).toMatchObject({
      [Slot.source]: 'b',
      [Slot.payload]: { code: 'BUS_HOP_LIMIT' },
    });
    raw.raw.send({
      [Slot.kind]: Kind.event,
      [Slot.target]: 'b',
      [Slot.name]: 'e',
      [Slot.payload]: 'hop',
      [Slot.hops]: 1,
    });
    b.handle('ping', () => 'pong');
    raw.raw.send({ [Slot.kind]: Kind.request, [Slot.target]: 'b', [Slot.name]: 'ping', [Slot.id]: 'q2' });
    await raw.raw.next((m) => m[Slot.kind] === Kind.response && m[Slot.id] === 'q2');
    expect(seen).toEqual(['hop']);
    expect(reported).toEqual(['BUS_HOP_LIMIT']);
  });

  it('reaches peers behind another hub, both ways, and learns when they leave (a -- hubA -- hubB -- b)', async () => {
    const [hubA, hubB] = hubsOf('hubA', 'hubB') as [Bus, Bus];
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    const c = bus({ id: 'c' });
    await link(a, hubA);
    await link(b, hubB);
    // Hubs joined after their peers: each announces what it already reaches to the other.
    const aSeesB = sees(a, 'b');
    const bSeesA = sees(b, 'a');
    await link(hubA, hubB);
    await Promise.all([aSeesB, bSeesA]);
    expect(a.peers.get('b')).toEqual({ id: 'b', via: 'hubA' });
    expect(b.peers.get('a')).toEqual({ id: 'a', via: 'hubB' });
    // A peer joining later is passed on from hub to hub.
    const aSeesC = sees(a, 'c');
    await link(c, hubB);
    await aSeesC;
    b.handle('who', (_p, meta) => `b answers ${meta.from}`);
    a.handle('who', (_p, meta) => `a answers ${meta.from}`);
    expect(await a.request('b', 'who', null)).toBe('b answers a');
    expect(await b.request('a', 'who', null)).toBe('a answers b');
    expect(await c.request('a', 'who', null)).toBe('a answers c');
    const got = new Promise((resolve) => b.on('e', (payload, meta) => resolve([payload, meta.from])));
    a.send('b', 'e', 'across two hubs');
    expect(await got).toEqual(['across two hubs', 'a']);
    // b leaves: hubB tells hubA, which tells a.
    const aLosesB = new Promise((resolve) => a.onPeer('lost', (peer) => peer === 'b' && resolve(peer)));
    b.close();
    expect(await aLosesB).toBe('b');
    expect(await codeOf(a.request('b', 'who', null))).toBe('BUS_UNKNOWN_PEER');
    expect([...a.peers.keys()].sort()).toEqual(['c', 'hubA', 'hubB']);
  });

  it('stops passing announcements on around a loop of hubs', async () => {
    const hubs = await loopOfThree();
    const [h1, h2] = hubs;
    const p = bus({ id: 'p' });
    const q = bus({ id: 'q' });
    const everyoneSees = (id: string) =>
      Promise.all([...hubs, p, q].filter((x) => x.id !== id).map((x) => sees(x, id)));
    await link(p, h1);
    await link(q, h2);
    await Promise.all([everyoneSees('p'), everyoneSees('q')]);
    q.handle('ping', () => 'pong');
    expect(await p.request('q', 'ping', null)).toBe('pong');
    for (const hub of hubs)
      expect([...hub.peers.keys()].sort()).toEqual(['h1', 'h2', 'h3', 'p', 'q'].filter((id) => id !== hub.id));
  });

  it('finds the way around a loop of hubs when a hub link drops, and forgets a peer that left the loop', async () => {
    const [h1, h2, h3] = hubsOf('h1', 'h2', 'h3') as [Bus, Bus, Bus];
    const p = bus({ id: 'p' });
    const q = bus({ id: 'q' });
    await link(h1, h2);
    await link(p, h1);
    await link(q, h2);
    await sees(p, 'q');
    // h3 closes the loop; h1 keeps its shorter way to q (through h2).
    const h3SeesBoth = Promise.all([sees(h3, 'p'), sees(h3, 'q')]);
    await link(h2, h3);
    await link(h3, h1);
    await h3SeesBoth;
    expect(h1.peers.get('q')).toEqual({ id: 'q', via: 'h2' });
    q.handle('ping', (_x, meta) => `pong to ${meta.from}`);
    // The h1 -- h2 link drops: h1 and p lose q, and learn it again through h3.
    const pSeesQAgain = loses(p, 'q').then(() => sees(p, 'q'));
    h1.disconnect('h2');
    await pSeesQAgain;
    expect(h1.peers.get('q')).toEqual({ id: 'q', via: 'h3' });
    expect(await p.request('q', 'ping', null)).toBe('pong to p');
    // q leaves: every hub forgets it for good (no announcement keeps circling).
    const gone = Promise.all([h1, h2, h3, p].map((x) => loses(x, 'q')));
    q.close();
    await gone;
    await p.request('h2', 'nothing', null).catch(() => {}); // a round trip p -- h1 -- h3 -- h2: the loop has settled
    for (const x of [h1, h2, h3, p]) expect(x.peers.has('q')).toBe(false);
    expect(await codeOf(p.request('q', 'ping', null))).toBe('BUS_UNKNOWN_PEER');
  });

  it('forgets a peer that leaves an intact loop of hubs, for good', async () => {
    for (let round = 0; round < 5; round++) {
      const [h1, h2, h3] = await loopOfThree();
      const p = bus({ id: 'p' });
      const q = bus({ id: 'q' });
      const pSeesQ = sees(p, 'q');
      await link(p, h1);
      await link(q, h2);
      await Promise.all([pSeesQ, sees(h3, 'q')]);
      const gone = Promise.all([h1, h2, h3, p].map((x) => loses(x, 'q')));
      q.close();
      await gone;
      // round trips through every hub of the loop, both ways round: what was in flight has arrived
      for (const via of ['h2', 'h3']) await p.request(via, 'nothing', null).catch(() => {});
      await h2.request('h3', 'nothing', null).catch(() => {});
      await h3.request('h1', 'nothing', null).catch(() => {});
      for (const x of [h1, h2, h3, p]) expect(x.peers.has('q')).toBe(false);
    }
  });

  it('forgets a peer when the hub it is reached through says it is now farther than the hop limit', async () => {
    const a = bus({ id: 'a', maxHops: 2 });
    const { raw, connected } = await rawPeer(a, 'r', { hub: true });
    await connected;
    const learnt = new Promise<void>((resolve) => a.onPeer('connected', (peer) => peer === 'x' && resolve()));
    raw.send({ [Slot.kind]: Kind.peersJoined, [Slot.name]: [1], [Slot.payload]: ['x'] });
    await learnt;
    expect(a.peers.get('x')).toEqual({ id: 'x', via: 'r' });
    const lost = new Promise<string | undefined>((resolve) =>
      a.onPeer('lost', (peer, reason) => peer === 'x' && resolve(reason?.code)),
    );
    raw.send({ [Slot.kind]: Kind.peersJoined, [Slot.name]: [3], [Slot.payload]: ['x'] }); // 4 links from a: more than 2 hubs between
    expect(await lost).toBe('BUS_PEER_LOST');
    expect(a.peers.has('x')).toBe(false);
  });

  it('forwards comlink-style channel messages with transferred ports', async () => {
    const { a, b } = await star();
    const port = new MessageChannel();
    cleanups.push(() => port.port1.close());
    const got = new Promise<unknown>((resolve) => {
      const ep = b.endpoint('a', 'ch');
      ep.addEventListener('message', (event: BusMessageEvent) => resolve(event.data));
    });
    a.endpoint('b', 'ch').postMessage({ port: port.port2 }, [port.port2 as unknown as Transferable]);
    const data = (await got) as { port: MessagePort };
    const echoed = new Promise((resolve) => port.port1.once('message', resolve));
    data.port.postMessage('through the hub');
    expect(await echoed).toBe('through the hub');
    data.port.close();
  });
});

describe('origins', () => {
  /** A window-like endpoint pair: messages carry the origin the sending side is configured with. */
  function windows(originA: string, originB: string): [Endpoint, Endpoint] {
    const { port1, port2 } = channel();
    const make = (port: MessagePort, origin: string): Endpoint => {
      const listeners = new Map<unknown, (data: unknown) => void>();
      return {
        postMessage: (message) => port.postMessage({ message, origin }),
        addEventListener: (_t, l) => {
          const f = (data: unknown) => {
            const d = data as { message: unknown; origin: string };
            l({ data: d.message, origin: d.origin });
          };
          listeners.set(l, f);
          port.on('message', f);
        },
        removeEventListener: (_t, l) => {
          const f = listeners.get(l);
          if (f) port.off('message', f);
        },
      };
    };
    // Each side sees the *other* side's origin on incoming messages.
    return [make(port1, originA), make(port2, originB)];
  }

  it('accepts allowed origins (wildcard label) and ignores others', async () => {
    const a = bus({ id: 'a', allowedOrigins: ['https://*.example.com'] });
    const [ea, eb] = windows('https://app.example.com', 'https://w.example.com');
    const b = bus({ id: 'b' });
    const [pa] = await Promise.all([a.connect(ea), b.connect(eb)]);
    expect(pa.id).toBe('b');

    const evil = bus({ id: 'evil' });
    const [ea2, eb2] = windows('https://app.example.com', 'https://evilexample.com');
    const codes = await Promise.all([
      codeOf(a.connect(ea2, { timeout: 100 })),
      codeOf(evil.connect(eb2, { timeout: 100 })),
    ]);
    expect(codes).toEqual(['BUS_TIMEOUT', 'BUS_TIMEOUT']);
    expect([...a.peers.keys()]).toEqual(['b']);
  });
});

describe('channels', () => {
  it('keeps a bounded backlog for a channel nobody listens to yet', async () => {
    const reported: unknown[] = [];
    const a = bus({ id: 'a' });
    const b = bus({
      id: 'b',
      onError: (error) => {
        const { code, data } = error as { code?: string; data?: { count?: number } };
        reported.push(data?.count === undefined ? code : `${code} ${data.count}`);
      },
    });
    await link(a, b);
    const out = a.endpoint('b', 'late');
    for (let i = 0; i < 300; i++) out.postMessage(i);
    await b.request('a', 'nothing', null).catch(() => {}); // a's channel messages have all arrived
    const got: unknown[] = [];
    const all = new Promise<void>((resolve) =>
      b.endpoint('a', 'late').addEventListener('message', (event: BusMessageEvent) => {
        got.push(event.data);
        if (got.length === 256) resolve();
      }),
    );
    await all;
    expect(got).toEqual(Array.from({ length: 256 }, (_, i) => i));
    b.close(); // reports the count of drops left unreported so far
    // 44 dropped: 20 reported one by one, the other 24 as a count
    expect(reported).toEqual([...new Array(20).fill('BUS_TOO_MANY_PENDING'), 'BUS_REPORTS_SUPPRESSED 24']);
  });
});

describe('batching', () => {
  it('posts what a task sends in one message once its microtasks ran, or at once on flush()', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    const { port1 } = await link(a, b);
    const got: unknown[] = [];
    b.on('n', (payload) => got.push(payload));
    const posts = vi.spyOn(port1, 'postMessage');
    a.send('b', 'n', 1);
    a.send('b', 'n', 2);
    expect(posts).not.toHaveBeenCalled();
    a.flush();
    expect(posts).toHaveBeenCalledTimes(1);
    a.send('b', 'n', 3);
    await Promise.resolve();
    await Promise.resolve();
    expect(posts).toHaveBeenCalledTimes(2);
    // nothing queued: nothing posted
    a.flush();
    expect(posts).toHaveBeenCalledTimes(2);
    posts.mockRestore();
    await b.request('a', 'nothing', null).catch(() => {});
    await vi.waitFor(() => expect(got).toEqual([1, 2, 3]));
  });
});

describe('lifecycle', () => {
  /**
   * Two linked buses (b answers `echo`), then every timer made from here on recorded (real ones,
   * still running) until `spy.mockRestore()`; `settled(t)`: the timer was cleared or has run, so
   * nothing of it is left pending.
   */
  async function echoPairRecordingTimers() {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    await link(a, b);
    b.handle('echo', (p) => p);
    const created: NodeJS.Timeout[] = [];
    const done = new Set<unknown>();
    const original = globalThis.setTimeout;
    const originalClear = globalThis.clearTimeout;
    const set = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const timer = original(() => {
        done.add(timer);
        fn();
      }, ms);
      created.push(timer);
      return timer;
    }) as typeof setTimeout);
    const clear = vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((timer?: NodeJS.Timeout) => {
      done.add(timer);
      originalClear(timer);
    }) as typeof clearTimeout);
    const spy = {
      mockRestore() {
        set.mockRestore();
        clear.mockRestore();
      },
    };
    return { a, created, settled: (timer: NodeJS.Timeout) => done.has(timer), spy };
  }

  it('leaves no timer behind once requests settle, and refs none', async () => {
    const { a, created, settled, spy } = await echoPairRecordingTimers();
    try {
      const inFlight = Promise.all(Array.from({ length: 10 }, (_, i) => a.request('b', 'echo', i)));
      expect(created.length).toBeGreaterThan(0); // one shared deadline timer, armed for the earliest request
      expect(created.every((t) => !t.hasRef())).toBe(true);
      expect(await inFlight).toEqual(Array.from({ length: 10 }, (_, i) => i));
      expect(created.every(settled)).toBe(true);
      // One request after another keeps one timer armed instead of making one per request.
      const before = created.length;
      for (let i = 0; i < 20; i++) expect(await a.request('b', 'echo', i)).toBe(i);
      expect(created.length - before).toBe(1);
      await Promise.resolve();
      expect(created.every(settled)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('arms no deadline timer for a request that could not be posted', async () => {
    const { a, created, settled, spy } = await echoPairRecordingTimers();
    try {
      // A WeakMap passes the size walk but not structured clone: the post fails at once.
      const failed = a.request('b', 'echo', { map: new WeakMap() });
      expect(created).toHaveLength(0);
      await expect(failed).rejects.toMatchObject({ code: 'BUS_DATA_CLONE' });
      expect(a.pendingRequests).toBe(0);
      // The next request still gets its deadline timer, cleared once it settles.
      expect(await a.request('b', 'echo', 7)).toBe(7);
      expect(created).toHaveLength(1);
      await Promise.resolve();
      expect(settled(created[0]!)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  /**
   * Links `a` to a new bus `id` that answers `echo`, over a port whose posts on a's side go through
   * `hook` first (it may record them, or throw as a closed endpoint does).
   */
  async function linkThrough(a: Bus, id: string, hook: (message: unknown) => void): Promise<Bus> {
    const other = bus({ id });
    other.handle('echo', (p) => p);
    const { port1, port2 } = channel();
    const inner = nodeEndpoint(port1);
    const hooked: Endpoint = {
      ...inner,
      postMessage: (message, transfer) => {
        hook(message);
        inner.postMessage(message, transfer);
      },
    };
    await Promise.all([a.connect(hooked), other.connect(nodeEndpoint(port2))]);
    return other;
  }

  it('settles pending requests in any order, and rejects every one left when the peer goes', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    const release = new Map<string, () => void>();
    b.handle(
      'hold',
      (key) => new Promise<string>((resolve) => release.set(key as string, () => resolve(key as string))),
    );
    b.handle('echo', (p) => p);
    const { port2 } = await link(a, b);
    const until = async (key: string) => {
      while (!release.has(key)) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    // The first request stays pending while later ones come and go.
    const x = a.request('b', 'hold', 'x');
    expect(await Promise.all([1, 2, 3].map((i) => a.request('b', 'echo', i)))).toEqual([1, 2, 3]);
    expect(a.pendingRequests).toBe(1);
    await until('x');
    release.get('x')!();
    expect(await x).toBe('x');
    expect(a.pendingRequests).toBe(0);
    // The first settles before the second; a third takes its place; losing the peer rejects both left.
    const y = a.request('b', 'hold', 'y');
    const z = a.request('b', 'hold', 'z');
    await until('y');
    release.get('y')!();
    expect(await y).toBe('y');
    const w = a.request('b', 'hold', 'w');
    expect(a.pendingRequests).toBe(2);
    await until('z');
    await until('w');
    port2.close();
    expect(await Promise.all([codeOf(z), codeOf(w)])).toEqual(['BUS_PEER_LOST', 'BUS_PEER_LOST']);
    expect(a.pendingRequests).toBe(0);
  });

  it('posts a lone request at once, and requests made while others are pending together', async () => {
    const a = bus({ id: 'a' });
    const frames: unknown[] = [];
    await linkThrough(a, 'b', (message) => frames.push(message));
    frames.length = 0;
    const lone = a.request('b', 'echo', 1);
    expect(frames.map((f) => envelopesOf(f).map((e) => e[Slot.kind]))).toEqual([[Kind.request]]);
    const more = [a.request('b', 'echo', 2), a.request('b', 'echo', 3)];
    expect(frames).toHaveLength(1);
    await Promise.resolve();
    expect(frames.map((f) => envelopesOf(f).map((e) => e[Slot.kind]))).toEqual([
      [Kind.request],
      [Kind.request, Kind.request],
    ]);
    expect(await Promise.all([lone, ...more])).toEqual([1, 2, 3]);
  });

  it('settles a request whose answer comes back while it is being posted (an endpoint that delivers at once)', async () => {
    /** Two endpoints that, once connected, hand each message to the other side inside postMessage. */
    const listeners: [MessageListener[], MessageListener[]] = [[], []];
    let atOnce = false;
    const side = (me: 0 | 1): Endpoint => ({
      postMessage: (message) => {
        const data = structuredClone(message);
        const deliver = () => {
          for (const listener of [...listeners[1 - me]!]) listener({ data });
        };
        if (atOnce) deliver();
        else queueMicrotask(deliver);
      },
      addEventListener: (_type, listener) => void listeners[me].push(listener),
      removeEventListener: (_type, listener) => void listeners[me].splice(listeners[me].indexOf(listener), 1),
    });
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    b.handle('echo', (p) => p);
    b.handle('fail', () => {
      throw new BusError('E_FAIL', 'no');
    });
    await Promise.all([a.connect(side(0)), b.connect(side(1))]);
    atOnce = true;
    expect(await a.request('b', 'echo', 1, { timeout: 1000 })).toBe(1);
    expect(await codeOf(a.request('b', 'fail', null, { timeout: 1000 }))).toBe('E_FAIL');
    expect(await Promise.all([a.request('b', 'echo', 2), a.request('b', 'echo', 3)])).toEqual([2, 3]);
    expect(a.pendingRequests).toBe(0);
  });

  it('a request that cannot be posted at all loses the peer, and rejects with the reason', async () => {
    const a = bus({ id: 'a' });
    /** A link from a to a new peer whose endpoint on a's side can be made to fail like a closed one. */
    const breakable = async (id: string) => {
      let broken = false;
      await linkThrough(a, id, () => {
        if (broken) throw new DOMException('the channel is closed', 'InvalidStateError');
      });
      expect(await a.request(id, 'echo', 1)).toBe(1);
      const lost = new Promise((resolve) => a.onPeer('lost', (peer, reason) => peer === id && resolve(reason?.code)));
      return { lost, fail: () => (broken = true) };
    };
    // alone: posted at once
    const b = await breakable('b');
    b.fail();
    expect(await codeOf(a.request('b', 'echo', 2))).toBe('BUS_PEER_LOST');
    expect(await b.lost).toBe('BUS_PEER_LOST');
    expect(a.pendingRequests).toBe(0);
    expect(await codeOf(a.request('b', 'echo', 3))).toBe('BUS_UNKNOWN_PEER');
    // made while another is pending: queued, posted at the next tick, and both reject
    const c = await breakable('c');
    const first = a.request('c', 'echo', 2);
    c.fail();
    const second = a.request('c', 'echo', 3);
    expect([await codeOf(first), await codeOf(second)]).toEqual(['BUS_PEER_LOST', 'BUS_PEER_LOST']);
    expect(await c.lost).toBe('BUS_PEER_LOST');
    expect(a.pendingRequests).toBe(0);
  });

  it('an endpoint that stops working while a refused batch is posted one by one loses the peer', async () => {
    const a = bus({ id: 'a' });
    let state: 'ok' | 'refuse-batch' | 'closed' = 'ok';
    await linkThrough(a, 'b', (message) => {
      if (state === 'ok') return;
      if (state === 'refuse-batch' && Array.isArray((message as unknown[])[0])) {
        state = 'closed'; // the batch is refused, then the channel closes under the one-by-one posts
        throw new DOMException('cannot clone the batch', 'DataCloneError');
      }
      throw new DOMException('the channel is closed', 'InvalidStateError');
    });
    expect(await a.request('b', 'echo', 1)).toBe(1);
    const lost = new Promise((resolve) => a.onPeer('lost', (peer, reason) => peer === 'b' && resolve(reason?.code)));
    const first = a.request('b', 'echo', 2); // alone: posted at once
    state = 'refuse-batch';
    const batch = [a.request('b', 'echo', 3), a.request('b', 'echo', 4)]; // queued together
    expect(await Promise.all(batch.map(codeOf))).toEqual(['BUS_PEER_LOST', 'BUS_PEER_LOST']);
    expect(await codeOf(first)).toBe('BUS_PEER_LOST');
    expect(await lost).toBe('BUS_PEER_LOST');
    expect(a.pendingRequests).toBe(0);
  });

  it('a closed bus says goodbye: the peer loses it at once', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    await link(a, b);
    const lost = new Promise((resolve) => b.onPeer('lost', (peer, reason) => resolve([peer, reason?.code])));
    a.close();
    expect(await lost).toEqual(['a', 'BUS_PEER_LOST']);
    expect(b.peers.size).toBe(0);
  });

  it('disconnects one peer', async () => {
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b' });
    await link(a, b);
    const lost = new Promise((resolve) => b.onPeer('lost', resolve));
    a.disconnect('b');
    expect(await lost).toBe('a');
    expect(a.peers.size).toBe(0);
  });

  it('reports listener errors without breaking delivery', async () => {
    const errors: unknown[] = [];
    const a = bus({ id: 'a' });
    const b = bus({ id: 'b', onError: (e) => errors.push(e) });
    await link(a, b);
    const got: unknown[] = [];
    b.on('e', () => {
      throw new Error('listener bug');
    });
    b.on('e', (p) => got.push(p));
    a.send('b', 'e', 1);
    a.send('b', 'e', 2);
    const done = new Promise<void>((resolve) => b.on('done', () => resolve()));
    a.send('b', 'done', null);
    await done;
    expect(got).toEqual([1, 2]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener bug', 'listener bug']);
  });

  // Last in the file: it leaves the id pool of this module filled with its pattern.
  it('never gives two pending requests the same id, even if the random source repeats itself', async () => {
    const a = bus({ id: 'a', maxPendingRequests: 4000 });
    const ids: unknown[] = [];
    await linkThrough(a, 'b', (message) => {
      for (const e of envelopesOf(message)) if (e[Slot.kind] === Kind.request) ids.push(e[Slot.id]);
    });
    // From the moment the id pool is refilled (at most 1024 ids on), every id comes twice in a
    // row; the requests below are all pending together (they go out at the end of this task).
    let refills = 0;
    const spy = vi
      .spyOn(globalThis.crypto, 'getRandomValues')
      .mockImplementation(<T extends ArrayBufferView | null>(array: T): T => {
        const words = array as unknown as Uint32Array;
        refills++;
        for (let i = 0; i < words.length; i++) words[i] = refills * words.length + (i >> 2) + (i & 1);
        return array;
      });
    try {
      const n = 1100;
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => a.request('b', 'echo', i)));
      expect(answers).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(spy).toHaveBeenCalled();
      expect(new Set(ids).size).toBe(n);
    } finally {
      spy.mockRestore();
    }
  });
});
