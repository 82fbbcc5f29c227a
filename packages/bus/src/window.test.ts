import { describe, expect, it } from 'vitest';
import { type Bus, createBus, type WindowLike, windowEndpoint } from './index.js';
import { Kind, Slot } from './wire.js';

/**
 * Windows as the browser wires them: `other.postMessage(data, targetOrigin)` is delivered to the
 * other window only if `targetOrigin` is its origin (or '*'), as a message event whose `origin`
 * is the sender's and whose `source` is the sender as the receiver sees it.
 */
class FakeWindow extends EventTarget {
  private readonly views = new Map<FakeWindow, WindowLike>();
  constructor(readonly origin: string) {
    super();
  }
  /** `target` as this window sees it (one object per pair, like a WindowProxy). */
  view(target: FakeWindow): WindowLike {
    let view = this.views.get(target);
    if (view === undefined) {
      view = {
        postMessage: (data: unknown, targetOrigin: string) => {
          if (targetOrigin !== '*' && targetOrigin !== target.origin) return;
          const copy = structuredClone(data);
          const source = target.view(this);
          queueMicrotask(() => {
            const event = new Event('message') as Event & { data: unknown; origin: string; source: unknown };
            Object.assign(event, { data: copy, origin: this.origin, source });
            target.dispatchEvent(event);
          });
        },
      };
      this.views.set(target, view);
    }
    return view;
  }
}

function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code,
  );
}

describe('windowEndpoint', () => {
  it('needs an explicit targetOrigin', () => {
    const a = new FakeWindow('https://a.example.com');
    const b = new FakeWindow('https://b.example.com');
    expect(() => windowEndpoint(a.view(b), {} as never)).toThrow(
      expect.objectContaining({ code: 'BUS_INVALID_ORIGIN' }),
    );
    expect(() => windowEndpoint(a.view(b), { targetOrigin: '' })).toThrow(
      expect.objectContaining({ code: 'BUS_INVALID_ORIGIN' }),
    );
  });

  it('connects two windows, and ignores a third window and foreign messages', async () => {
    const wa = new FakeWindow('https://app.example.com');
    const wb = new FakeWindow('https://widget.example.com');
    const wc = new FakeWindow('https://app.example.com'); // a's origin, but another window
    const a: Bus = createBus({ id: 'a', allowedOrigins: ['https://*.example.com'] });
    const b: Bus = createBus({ id: 'b', allowedOrigins: ['https://app.example.com'] });
    const [pa, pb] = await Promise.all([
      a.connect(windowEndpoint(wa.view(wb), { targetOrigin: wb.origin, self: wa })),
      b.connect(windowEndpoint(wb.view(wa), { targetOrigin: wa.origin, self: wb })),
    ]);
    expect([pa.id, pb.id]).toEqual(['b', 'a']);
    const seen: unknown[] = [];
    b.on('e', (payload, meta) => seen.push([payload, meta.from]));
    // Window c forges a's traffic: b accepts messages only from the window it connected to.
    wc.view(wb).postMessage(
      [
        Object.assign([], {
          [Slot.kind]: Kind.event,
          [Slot.sequence]: 1e6,
          [Slot.name]: 'e',
          [Slot.payload]: 'forged',
        }),
      ],
      wb.origin,
    );
    wc.view(wb).postMessage('not a bus message', wb.origin);
    a.send('b', 'e', 'genuine');
    b.handle('ping', () => 'pong');
    expect(await a.request('b', 'ping', null)).toBe('pong');
    expect(seen).toEqual([['genuine', 'a']]);
    a.close();
    b.close();
  });

  it('never connects when the target origin or the sender origin is wrong', async () => {
    const wa = new FakeWindow('https://app.example.com');
    const wb = new FakeWindow('https://evil.test');
    const a = createBus({ id: 'a', allowedOrigins: ['https://*.example.com'] });
    const b = createBus({ id: 'b' });
    const codes = await Promise.all([
      codeOf(a.connect(windowEndpoint(wa.view(wb), { targetOrigin: wb.origin, self: wa }), { timeout: 100 })),
      codeOf(b.connect(windowEndpoint(wb.view(wa), { targetOrigin: wa.origin, self: wb }), { timeout: 100 })),
    ]);
    expect(codes).toEqual(['BUS_TIMEOUT', 'BUS_TIMEOUT']);
    const wc = new FakeWindow('https://c.example.com');
    const c = createBus({ id: 'c' });
    const d = createBus({ id: 'd' });
    const wrongTarget = await Promise.all([
      codeOf(
        c.connect(windowEndpoint(wc.view(wa), { targetOrigin: 'https://elsewhere.example.com', self: wc }), {
          timeout: 100,
        }),
      ),
      codeOf(d.connect(windowEndpoint(wa.view(wc), { targetOrigin: wc.origin, self: wa }), { timeout: 100 })),
    ]);
    expect(wrongTarget).toEqual(['BUS_TIMEOUT', 'BUS_TIMEOUT']);
  });
});
