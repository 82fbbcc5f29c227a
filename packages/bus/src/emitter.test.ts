import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEmitter } from './index.js';

describe('createEmitter', () => {
  it('calls listeners in registration order with payload and name', () => {
    const e = createEmitter();
    const calls: unknown[] = [];
    e.on('a', (p, name) => calls.push(['1', p, name]));
    e.on('a', (p) => calls.push(['2', p]));
    e.on('b', (p) => calls.push(['b', p]));
    e.emit('a', 1);
    expect(calls).toEqual([
      ['1', 1, 'a'],
      ['2', 1],
    ]);
  });

  it('orders by priority, then registration', () => {
    const e = createEmitter();
    const calls: string[] = [];
    e.on('a', () => calls.push('p0-first'));
    e.on('a', () => calls.push('p5'), { priority: 5 });
    e.on('a', () => calls.push('p-1'), { priority: -1 });
    e.on('a', () => calls.push('p0-second'));
    e.on('a', () => calls.push('p5-second'), { priority: 5 });
    e.emit('a');
    expect(calls).toEqual(['p5', 'p5-second', 'p0-first', 'p0-second', 'p-1']);
  });

  it('unsubscribes each registration separately, twice harmlessly', () => {
    const e = createEmitter();
    let n = 0;
    const fn = () => n++;
    const off1 = e.on('a', fn);
    const off2 = e.on('a', fn);
    e.emit('a');
    expect(n).toBe(2);
    off1();
    off1();
    e.emit('a');
    expect(n).toBe(3);
    off2();
    e.emit('a');
    expect(n).toBe(3);
    expect(e.listenerCount('a')).toBe(0);
  });

  it('once listeners run once, even when re-emitted from inside a listener', () => {
    const e = createEmitter();
    let once = 0;
    let nested = false;
    e.on('a', () => {
      if (!nested) {
        nested = true;
        e.emit('a');
      }
    });
    e.on('a', () => once++, { once: true });
    e.emit('a');
    e.emit('a');
    expect(once).toBe(1);
    expect(e.listenerCount('a')).toBe(1);
    const single = createEmitter();
    let count = 0;
    single.on(
      'x',
      () => {
        count++;
        single.emit('x');
      },
      { once: true },
    );
    single.emit('x');
    expect(count).toBe(1);
  });

  it('an AbortSignal removes the listener; an aborted one never registers', () => {
    const e = createEmitter();
    const controller = new AbortController();
    let n = 0;
    e.on('a', () => n++, { signal: controller.signal });
    e.emit('a');
    controller.abort();
    e.emit('a');
    expect(n).toBe(1);
    e.on('a', () => n++, { signal: controller.signal });
    e.emit('a');
    expect(n).toBe(1);
  });

  it('listeners added or removed during an emit take effect from the next emit', () => {
    const e = createEmitter();
    const calls: string[] = [];
    let offB: () => void = () => {};
    e.on('a', () => {
      calls.push('a');
      offB();
      e.on('a', () => calls.push('late'));
    });
    offB = e.on('a', () => calls.push('b'));
    e.emit('a');
    expect(calls).toEqual(['a', 'b']);
    calls.length = 0;
    e.emit('a');
    expect(calls).toEqual(['a', 'late']);
  });

  it('a single listener that adds another does not disturb the current emit', () => {
    const e = createEmitter();
    const calls: string[] = [];
    e.on('a', () => {
      calls.push('first');
      e.on('a', () => calls.push('added'));
    });
    e.emit('a');
    expect(calls).toEqual(['first']);
    e.emit('a');
    expect(calls).toEqual(['first', 'first', 'added']);
  });

  it('wildcards: * and ns:*, after exact listeners', () => {
    const e = createEmitter();
    const calls: string[] = [];
    e.on('*', (_p, name) => calls.push(`*:${name}`));
    e.on('ns:*', (_p, name) => calls.push(`ns*:${name}`));
    e.on('ns:x', () => calls.push('exact'));
    e.emit('ns:x');
    e.emit('other');
    e.emit('nsx');
    // exact listeners first, then the patterns in the order they were first registered
    expect(calls).toEqual(['exact', '*:ns:x', 'ns*:ns:x', '*:other', '*:nsx']);
    expect(e.listenerCount('ns:*')).toBe(1);
  });

  it('a listener removing or adding pattern listeners does not disturb the current emit', () => {
    const e = createEmitter();
    const calls: string[] = [];
    let offStar: () => void = () => {};
    e.on('ns:x', () => {
      calls.push('exact');
      offStar();
      e.on('ns:*', () => calls.push('late'));
    });
    offStar = e.on('*', () => calls.push('star'));
    e.emit('ns:x');
    expect(calls).toEqual(['exact', 'star']);
    calls.length = 0;
    e.emit('ns:x');
    expect(calls).toEqual(['exact', 'late']);
  });

  it('a removed pattern stops matching, and can be added again', () => {
    const e = createEmitter();
    const calls: string[] = [];
    const off = e.on('ns:*', (_p, name) => calls.push(`1:${name}`));
    e.emit('ns:a');
    off();
    e.emit('ns:b');
    e.on('ns:*', (_p, name) => calls.push(`2:${name}`));
    off();
    e.emit('ns:c');
    expect(calls).toEqual(['1:ns:a', '2:ns:c']);
    expect(e.listenerCount('ns:*')).toBe(1);
  });

  it('never drops a listener when one throws; rethrows after the last', () => {
    const e = createEmitter();
    const calls: string[] = [];
    e.on('a', () => {
      throw new Error('one');
    });
    e.on('a', () => calls.push('after'));
    e.on('*', () => calls.push('wild'));
    expect(() => e.emit('a')).toThrow('one');
    expect(calls).toEqual(['after', 'wild']);
    e.on('a', () => {
      throw new Error('two');
    });
    expect(() => e.emit('a')).toThrow(AggregateError);
  });

  it('inherited names are plain event names', () => {
    const e = createEmitter();
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) e.emit(name, 1);
    const calls: string[] = [];
    for (const name of ['__proto__', 'constructor', 'toString']) e.on(name, () => calls.push(name));
    for (const name of ['__proto__', 'constructor', 'toString', 'valueOf']) e.emit(name);
    expect(calls).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('reuses and sweeps emptied lists without losing live listeners', () => {
    const e = createEmitter();
    let live = 0;
    e.on('keep', () => live++);
    for (let i = 0; i < 2000; i++) e.on(`tmp-${i}`, () => {})();
    e.emit('keep');
    expect(live).toBe(1);
    expect(e.listenerCount('tmp-5')).toBe(0);
  });

  it('matches a model under random on/off/emit sequences (seeded)', () => {
    const seed = 4242;
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('on' as const),
              name: fc.constantFrom('a', 'b'),
              prio: fc.constantFrom(0, 0, 1, -1),
              once: fc.boolean(),
            }),
            fc.record({ op: fc.constant('off' as const), index: fc.nat(20) }),
            fc.record({ op: fc.constant('emit' as const), name: fc.constantFrom('a', 'b') }),
          ),
          { maxLength: 60 },
        ),
        (ops) => {
          const e = createEmitter();
          type Reg = { id: number; name: string; prio: number; once: boolean; off: () => void; live: boolean };
          const regs: Reg[] = [];
          const got: number[] = [];
          const want: number[] = [];
          for (const op of ops) {
            if (op.op === 'on') {
              const id = regs.length;
              const reg: Reg = { id, name: op.name, prio: op.prio, once: op.once, live: true, off: () => {} };
              reg.off = e.on(op.name, () => got.push(id), { priority: op.prio, once: op.once });
              regs.push(reg);
            } else if (op.op === 'off') {
              const reg = regs[op.index];
              if (reg) {
                reg.off();
                reg.live = false;
              }
            } else {
              const listeners = regs
                .filter((r) => r.live && r.name === op.name)
                .sort((x, y) => y.prio - x.prio || x.id - y.id);
              for (const r of listeners) {
                want.push(r.id);
                if (r.once) r.live = false;
              }
              e.emit(op.name);
            }
          }
          expect(got).toEqual(want);
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  describe('dispatchers for every list size (one slot, unrolled 2 to 16, loop beyond)', () => {
    const sizes = Array.from({ length: 20 }, (_, k) => k + 1);

    it('call every listener once, in order, with payload and name', () => {
      for (const n of sizes) {
        const e = createEmitter();
        const calls: string[] = [];
        for (let k = 0; k < n; k++) e.on('a', (p, name) => calls.push(`${k}:${p}:${name}`));
        e.emit('a', n);
        expect(calls).toEqual(sizes.slice(0, n).map((_, k) => `${k}:${n}:a`));
      }
    });

    it('keep calling after a throw at any position, and rethrow what was thrown', () => {
      for (const n of sizes) {
        for (let bad = 0; bad < n; bad++) {
          for (const second of [undefined, (bad + 1) % n]) {
            const e = createEmitter();
            const calls: number[] = [];
            for (let k = 0; k < n; k++) {
              e.on('a', () => {
                calls.push(k);
                if (k === bad || k === second) throw new Error(`boom ${k}`);
              });
            }
            const thrown = (() => {
              try {
                e.emit('a');
              } catch (error) {
                return error;
              }
              return undefined;
            })();
            expect(calls).toEqual(sizes.slice(0, n).map((_, k) => k));
            if (second === undefined || second === bad) {
              expect(thrown).toBeInstanceOf(Error);
              expect((thrown as Error).message).toBe(`boom ${bad}`);
            } else {
              expect(thrown).toBeInstanceOf(AggregateError);
              const messages = (thrown as AggregateError).errors.map((x: Error) => x.message);
              expect(messages.sort()).toEqual([`boom ${bad}`, `boom ${second}`].sort());
            }
          }
        }
      }
    });

    it('are not disturbed by listeners added or removed during the emit, at any position', () => {
      for (const n of sizes) {
        for (let actor = 0; actor < n; actor++) {
          const e = createEmitter();
          const calls: string[] = [];
          const offs: (() => void)[] = [];
          let acted = false;
          for (let k = 0; k < n; k++) {
            offs.push(
              e.on('a', () => {
                calls.push(`${k}`);
                if (k === actor && !acted) {
                  acted = true;
                  for (const off of offs) off(); // everyone, itself included
                  e.on('a', () => calls.push('new'));
                }
              }),
            );
          }
          e.emit('a');
          expect(calls).toEqual(sizes.slice(0, n).map((_, k) => `${k}`));
          calls.length = 0;
          e.emit('a');
          expect(calls).toEqual(['new']);
          expect(e.listenerCount('a')).toBe(1);
        }
      }
    });

    it('a priority listener alone, and lists shrinking back to one slot', () => {
      const e = createEmitter();
      const calls: string[] = [];
      const offP = e.on('a', () => calls.push('p'), { priority: 3 });
      e.emit('a');
      const off0 = e.on('a', () => calls.push('0'));
      const offQ = e.on('a', () => calls.push('q'), { priority: 7 });
      e.emit('a');
      offQ();
      offP();
      e.emit('a');
      off0();
      e.emit('a');
      expect(calls).toEqual(['p', 'q', 'p', '0', '0']);
      expect(e.listenerCount('a')).toBe(0);
    });
  });

  it('unsubscribing the first of two registrations of one function removes that one, not the later', () => {
    const e = createEmitter();
    const calls: string[] = [];
    const fn = () => calls.push('fn');
    const first = e.on('a', fn);
    e.on('a', () => calls.push('other'));
    e.on('a', fn);
    first();
    e.emit('a');
    expect(calls).toEqual(['other', 'fn']);
  });

  it('stale unsubscribe functions stay harmless after their list is swept and the name reused', () => {
    const e = createEmitter();
    let n = 0;
    const fn = () => n++;
    const stale = e.on('a', fn);
    stale();
    // Enough emptied names to sweep the emptied list of 'a' away.
    for (let i = 0; i < 600; i++) e.on(`name-${i}`, fn)();
    const fresh = e.on('a', fn);
    const second = e.on('a', fn, { priority: 1 });
    stale();
    e.emit('a');
    expect(n).toBe(2);
    second();
    stale();
    e.emit('a');
    expect(n).toBe(3);
    fresh();
    e.emit('a');
    expect(n).toBe(3);
    expect(e.listenerCount('a')).toBe(0);
  });

  it('stale unsubscribe functions never remove a later registration, whatever the list shape', () => {
    const e = createEmitter();
    let n = 0;
    const fn = () => n++;
    const offA = e.on('a', fn); // one slot
    offA();
    const offB = e.on('a', fn); // the slot again
    offA();
    e.emit('a');
    expect(n).toBe(1);
    const offC = e.on('a', fn); // now an array of two
    offA();
    e.emit('a');
    expect(n).toBe(3);
    offB(); // back to one slot, holding C
    offB();
    offA();
    e.emit('a');
    expect(n).toBe(4);
    e.clear();
    const offD = e.on('a', fn);
    offC(); // from before clear(): harmless
    offB();
    e.emit('a');
    expect(n).toBe(5);
    offD();
    e.emit('a');
    expect(n).toBe(5);
    // patterns: the same through the wildcard path
    const w1 = e.on('ns:*', fn);
    w1();
    const w2 = e.on('ns:*', fn);
    w1();
    e.emit('ns:x');
    expect(n).toBe(6);
    w2();
    e.emit('ns:x');
    expect(n).toBe(6);
  });

  it('matches a model when listeners add and remove listeners during emits (seeded)', () => {
    const seed = 777;
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('on' as const),
              name: fc.constantFrom('a', 'b', '*'),
              prio: fc.constantFrom(0, 0, 0, 2),
            }),
            fc.record({ op: fc.constant('off' as const), index: fc.nat(40) }),
            fc.record({ op: fc.constant('emit' as const), name: fc.constantFrom('a', 'b') }),
            // the next registration, when called for the first time, unsubscribes `index` and adds one
            fc.record({ op: fc.constant('meddler' as const), name: fc.constantFrom('a', 'b'), index: fc.nat(40) }),
          ),
          { maxLength: 80 },
        ),
        (ops) => {
          const e = createEmitter();
          type Reg = { id: number; name: string; prio: number; off: () => void; live: boolean };
          const regs: Reg[] = [];
          const got: number[] = [];
          const register = (name: string, prio: number, act?: () => void): Reg => {
            const reg: Reg = { id: regs.length, name, prio, live: true, off: () => {} };
            let fired = false;
            const off = e.on(
              name,
              () => {
                got.push(reg.id);
                if (act !== undefined && !fired) {
                  fired = true;
                  act();
                }
              },
              prio === 0 ? undefined : { priority: prio },
            );
            reg.off = () => {
              off();
              reg.live = false;
            };
            regs.push(reg);
            return reg;
          };
          const snapshot = (name: string) => {
            const exact = regs.filter((r) => r.live && r.name === name).sort((x, y) => y.prio - x.prio || x.id - y.id);
            const wild = regs.filter((r) => r.live && r.name === '*').sort((x, y) => y.prio - x.prio || x.id - y.id);
            return [...exact, ...wild].map((r) => r.id);
          };
          for (const op of ops) {
            if (op.op === 'on') register(op.name, op.prio);
            else if (op.op === 'off') regs[op.index]?.off();
            else if (op.op === 'meddler') {
              register(op.name, 0, () => {
                regs[op.index]?.off();
                register(op.name, 0);
              });
            } else {
              const want = snapshot(op.name);
              got.length = 0;
              e.emit(op.name);
              expect(got).toEqual(want);
            }
          }
        },
      ),
      { seed, numRuns: 300 },
    );
  });
});
