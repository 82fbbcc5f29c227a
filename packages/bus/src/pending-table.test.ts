import { describe, expect, it } from 'vitest';
import { type Pending, PendingTable } from './pending-table.js';

const noop = (): void => {};

/** Random adds and deletes, checked against a Map after every step; `idOf` picks each new id. */
function churn(table: PendingTable, steps: number, idOf: (table: PendingTable, step: number) => number): void {
  const model = new Map<number, Pending>();
  const live: number[] = [];
  for (let step = 0; step < steps; step++) {
    if (live.length > 0 && Math.random() < 0.45) {
      const id = live.splice(Math.floor(Math.random() * live.length), 1)[0]!;
      table.delete(id);
      model.delete(id);
      expect(table.get(id)).toBeUndefined();
    } else {
      const id = idOf(table, step);
      const pending = table.add(id, `peer${step}`, noop, noop, undefined);
      model.set(id, pending);
      live.push(id);
    }
    expect(table.size).toBe(model.size);
  }
  for (const [id, pending] of model) expect(table.get(id)).toBe(pending);
  expect(new Map(table.entries())).toEqual(model);
}

describe('PendingTable', () => {
  it('finds, deletes and lists requests under drawn ids as a Map does, across growth', () => {
    const table = new PendingTable();
    churn(table, 5000, (t) => t.newId());
    expect(Number.isSafeInteger(table.newId())).toBe(true);
  });

  it('keeps an id whose slot is taken (added between another id being drawn and added)', () => {
    // Small consecutive ids share slots often: every add after the first few lands beside the slots.
    const table = new PendingTable();
    churn(table, 3000, (_, step) => step);
  });

  it('answers nothing for ids it never held, whatever their form', () => {
    const table = new PendingTable();
    const id = table.newId();
    table.add(id, 'b', noop, noop, undefined);
    for (const other of [Number.NaN, 0, -1, 1.5, 2 ** 53, id + 1, Number.POSITIVE_INFINITY]) {
      expect(table.get(other)).toBeUndefined();
    }
    table.delete(id + 1);
    expect(table.size).toBe(1);
  });
});
