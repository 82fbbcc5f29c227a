/**
 * Payload types: a bus typed by a schema checks names and payloads at compile time (the
 * `@ts-expect-error` lines fail `pnpm typecheck` if they compile), an untyped bus takes any name
 * with `unknown` payloads, and the two convert to each other. The calls also run, over a real
 * MessageChannel, so the declared types describe what actually arrives.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { type Bus, type BusSchema, createBus, type MessageMeta, withTransfer } from './index.js';
import { nodeEndpoint } from './node.js';

interface Api {
  events: { progress: { pct: number }; 'job:done': { id: string }; 'job:failed': { id: string; reason: string } };
  methods: {
    sum(terms: [number, number]): number;
    upper(text: string): Promise<string>;
    bytes(length: number): Uint8Array;
  };
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

async function pair<S extends BusSchema>(a: Bus<S>, b: Bus<S>): Promise<[Bus<S>, Bus<S>]> {
  const { port1, port2 } = new MessageChannel();
  cleanups.push(() => {
    a.close();
    b.close();
    port1.close();
  });
  await Promise.all([a.connect(nodeEndpoint(port1)), b.connect(nodeEndpoint(port2))]);
  return [a, b];
}

/** Takes any bus, as gitport's host, remote and transport do. */
function untypedUser(bus: Bus): string {
  return bus.id;
}

describe('a bus typed by a schema', () => {
  it('types events by name, and patterns by the events they match', async () => {
    const [a, b] = await pair(createBus<Api>({ id: 'a' }), createBus<Api>({ id: 'b' }));
    const got: unknown[] = [];
    b.on('progress', (payload, meta) => {
      expectTypeOf(payload).toEqualTypeOf<{ pct: number }>();
      expectTypeOf(meta).toEqualTypeOf<MessageMeta>();
      got.push(payload.pct);
    });
    const jobs = new Promise<void>((resolve) => {
      b.on('job:*', (payload, { event }) => {
        expectTypeOf(payload).toEqualTypeOf<{ id: string } | { id: string; reason: string }>();
        got.push(`${event} ${payload.id}`);
        if (event === 'job:failed') resolve();
      });
    });
    b.on('*', (payload) => {
      expectTypeOf(payload).toEqualTypeOf<Api['events'][keyof Api['events']]>();
    });
    a.send('b', 'progress', { pct: 50 });
    a.signal('job:done', { id: 'j1' });
    // @ts-expect-error a payload of another shape
    expect(() => a.send('b', 'progress', { pct: '50' })).not.toThrow();
    // @ts-expect-error an event the schema does not declare
    expect(() => a.signal('nope', 1)).not.toThrow();
    a.send('b', 'job:failed', { id: 'j2', reason: 'no' });
    // @ts-expect-error a listener for an event the schema does not declare
    b.on('nope', () => {});
    await jobs;
    expect(got).toEqual([50, 'job:done j1', '50', 'job:failed j2']);
  });

  it('types handlers and requests by name: payload and result, promised or transferred', async () => {
    const [a, b] = await pair(createBus<Api>({ id: 'a' }), createBus<Api>({ id: 'b' }));
    b.handle('sum', ([x, y], meta) => {
      expectTypeOf(meta.signal).toEqualTypeOf<AbortSignal>();
      return x + y;
    });
    b.handle('upper', async (text) => text.toUpperCase());
    b.handle('bytes', (length) => {
      const bytes = new Uint8Array(length);
      return withTransfer(bytes, [bytes.buffer]);
    });
    expect(() =>
      // @ts-expect-error a result of another type
      b.handle('sum', ([x, y]) => `${x}${y}`),
    ).toThrow(expect.objectContaining({ code: 'BUS_INVALID_ARGUMENT' }));
    // @ts-expect-error a handler the schema does not declare
    expect(() => b.handle('nope', () => 1)).not.toThrow();

    const sum = a.request('b', 'sum', [1, 2]);
    expectTypeOf(sum).toEqualTypeOf<Promise<number>>();
    const upper = a.request('b', 'upper', 'abc');
    expectTypeOf(upper).toEqualTypeOf<Promise<string>>();
    const bytes = a.request('b', 'bytes', 3);
    expectTypeOf(bytes).toEqualTypeOf<Promise<Uint8Array>>();
    expect(await Promise.all([sum, upper, bytes])).toEqual([3, 'ABC', new Uint8Array(3)]);
    // @ts-expect-error a payload of another type
    await expect(a.request('b', 'sum', ['1', 2])).resolves.toBe('12');
  });

  it('converts to an untyped Bus and back', async () => {
    const [a] = await pair(createBus<Api>({ id: 'a' }), createBus<Api>({ id: 'b' }));
    expect(untypedUser(a)).toBe('a');
    const untyped: Bus = a;
    const typed: Bus<Api> = untyped;
    expect(typed).toBe(a);
  });
});

describe('an untyped bus', () => {
  it('takes any name, gives unknown payloads, and lets a listener or handler declare its type', async () => {
    const [a, b] = await pair(createBus({ id: 'a' }), createBus({ id: 'b' }));
    expectTypeOf(a).toEqualTypeOf<Bus>();
    b.on('anything', (payload) => expectTypeOf(payload).toBeUnknown());
    b.handle('anything', (payload) => {
      expectTypeOf(payload).toBeUnknown();
      return payload;
    });
    expectTypeOf(a.request('b', 'anything', 1)).toEqualTypeOf<Promise<unknown>>();
    expectTypeOf(a.request<number>('b', 'anything', 1)).toEqualTypeOf<Promise<number>>();
    expect(await a.request('b', 'anything', 1)).toBe(1);

    const seen = new Promise<number>((resolve) => b.on('progress', (p: { pct: number }) => resolve(p.pct)));
    b.handle('sum', ([x, y]: [number, number]) => x + y);
    a.send('b', 'progress', { pct: 7 });
    const sum: number = await a.request('b', 'sum', [2, 3]);
    expect([await seen, sum]).toEqual([7, 5]);
  });
});
