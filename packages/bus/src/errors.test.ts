import { describe, expect, it } from 'vitest';
import { BusError, errorFromWire, errorToWire, isBusError, messageSize } from './index.js';

describe('errors on the wire', () => {
  it('keeps name, message, code, custom data and a cause chain', () => {
    const error = Object.assign(new RangeError('out', { cause: Object.assign(new Error('inner'), { code: 'E_IN' }) }), {
      code: 'E_OUT',
      extra: { n: [1, 2] },
      fn: () => 1,
    });
    const wire = structuredClone(errorToWire(error));
    const back = errorFromWire(wire);
    expect(back).toMatchObject({
      name: 'RangeError',
      message: 'out',
      code: 'E_OUT',
      remote: true,
      data: { extra: { n: [1, 2] } },
    });
    expect(back.data).not.toHaveProperty('fn');
    expect(back.cause).toMatchObject({ message: 'inner', code: 'E_IN' });
    expect(isBusError(back)).toBe(true);
    expect(isBusError(new Error('x'))).toBe(false);
    expect(isBusError(new BusError('BUS_CLOSED', 'x'), 'BUS_CLOSED')).toBe(true);
  });

  it('copes with non-errors, cycles and hostile shapes', () => {
    expect(errorFromWire(errorToWire('text'))).toMatchObject({ message: 'text', code: 'BUS_REMOTE_ERROR' });
    expect(errorFromWire(errorToWire(42))).toMatchObject({ message: '42', data: { value: 42 } });
    const cyclic = new Error('loop') as Error & { cause?: unknown };
    cyclic.cause = cyclic;
    expect(() => structuredClone(errorToWire(cyclic))).not.toThrow();
    for (const junk of [null, undefined, 1, 'x', { code: 5 }, { message: {} }]) {
      expect(errorFromWire(junk).code).toBe('BUS_REMOTE_ERROR');
    }
    const evil = JSON.parse('{"message":"m","data":{"__proto__":{"polluted":1}}}');
    errorFromWire(evil);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('messageSize', () => {
  it('sizes a sparse array by the elements it has: a few bytes claiming billions of holes are counted at once', () => {
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    sparse[5] = 'abc';
    expect(messageSize(sparse)).toBe(8 + 3 + (2 ** 32 - 2) * 8);
    expect(messageSize([sparse], 1000)).toBeGreaterThan(1000);
    expect(messageSize({ a: sparse }, 1000)).toBeGreaterThan(1000);
    // a long dense array still counts every element
    expect(messageSize(Array.from({ length: 100 }, () => 'ab'))).toBe(8 + 100 * 2);
  });

  it('counts bytes, strings and structure; refuses functions and symbols', () => {
    expect(messageSize(new Uint8Array(1000))).toBe(1000);
    expect(messageSize(new ArrayBuffer(10))).toBe(10);
    expect(messageSize('abc')).toBe(3);
    expect(messageSize({ a: new Uint8Array(100), b: 'xy' })).toBe(8 + 1 + 100 + 1 + 2);
    // a flat array or object counts as it would inside any other value (no index keys for arrays)
    expect(messageSize([1, 'ab'])).toBe(8 + 8 + 2);
    expect(messageSize([[1, 'ab']])).toBe(8 + messageSize([1, 'ab']));
    expect(messageSize({ n: 1 })).toBe(8 + 1 + 8);
    expect(messageSize([{ n: 1 }])).toBe(8 + messageSize({ n: 1 }));
    const shared = new Uint8Array(500);
    expect(messageSize([shared, shared])).toBe(8 + 500);
    // an object holding one view is read flat; a second view, shared or not, goes the general way
    expect(messageSize({ t: 'data', b: shared })).toBe(8 + 1 + 4 + 1 + 500);
    expect(messageSize([{ t: 'data', b: shared }])).toBe(8 + messageSize({ t: 'data', b: shared }));
    expect(messageSize({ a: shared, b: shared })).toBe(8 + 1 + 1 + 500);
    expect(messageSize({ a: shared, b: new Uint8Array(20) })).toBe(8 + 1 + 1 + 500 + 20);
    expect(messageSize({ a: new DataView(new ArrayBuffer(7)) })).toBe(8 + 1 + 7);
    // so is one array of distinct views; a view twice in it counts once, as in any other array
    const other = new Uint8Array(30);
    expect(messageSize({ t: 'data', b: [shared, other] })).toBe(8 + 1 + 4 + 1 + 8 + 500 + 30);
    expect(messageSize({ t: 'data', b: [shared, other, shared] })).toBe(8 + 1 + 4 + 1 + 8 + 500 + 30);
    expect(messageSize({ a: [shared], b: shared })).toBe(8 + 1 + 1 + 8 + 500);
    expect(messageSize({ a: [shared, 'x'] })).toBe(8 + 1 + 8 + 500 + 1);
    expect(messageSize({ a: Array.from({ length: 65 }, () => other) })).toBe(8 + 1 + 8 + 30);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(messageSize(cyclic)).toBe(8 + 4);
    expect(() => messageSize({ f: () => 1 })).toThrow(expect.objectContaining({ code: 'BUS_DATA_CLONE' }));
    expect(() => messageSize([Symbol('s')])).toThrow(expect.objectContaining({ code: 'BUS_DATA_CLONE' }));
    expect(
      messageSize(
        Array.from({ length: 1000 }, () => new Uint8Array(1000)),
        5000,
      ),
    ).toBeGreaterThan(5000);
  });
});
