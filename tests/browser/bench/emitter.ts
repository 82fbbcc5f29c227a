/// <reference path="./peers.d.ts" />
/**
 * In-browser emitter benchmark (issue 9): gitport's emitter next to nanoevents, eventemitter3
 * and mitt, on this page's main thread, the same cases and method as benchmarks/emitter.bench.ts
 * (emit with 1 listener, emit with 10, an on+off cycle; loops written out per library so that no
 * shared call site turns polymorphic; rounds interleaved between the libraries; listener calls
 * counted and checked). Answers every round's M ops/s per case and library; a round of one
 * library repeats its run of `ops` operations until `minMs` have passed.
 */
import { createEmitter } from '@gitport/bus';
import * as eventemitter3 from 'bench-peer/eventemitter3';
import * as mittModule from 'bench-peer/mitt';
import { createNanoEvents } from 'bench-peer/nanoevents';

export interface EmitterBenchOptions {
  ops: number;
  rounds: number;
  warmup: number;
  /**
   * A timed sample repeats a run until this many milliseconds have passed: without cross-origin
   * isolation, the page's clock ticks in steps of 0.1 ms.
   */
  minMs: number;
}

/** `${case}:${library}` -> M ops/s of every timed round. */
export type EmitterBenchResult = Record<string, number[]>;

// CommonJS/ESM interop differs between these packages: take the exports by shape.
interface EE3 {
  on(event: string, fn: (p: number) => void): unknown;
  off(event: string, fn: (p: number) => void): unknown;
  emit(event: string, p: number): boolean;
}
const ee3 = eventemitter3 as unknown as { EventEmitter?: new () => EE3; default?: new () => EE3 };
const EventEmitter3 = (ee3.EventEmitter ?? ee3.default) as new () => EE3;
interface Mitt {
  on(event: 'e', fn: (p: number) => void): void;
  off(event: 'e', fn: (p: number) => void): void;
  emit(event: 'e', p: number): void;
}
const mitt = (mittModule as unknown as { default: () => Mitt }).default;
interface Nano {
  on(event: 'e', fn: (p: number) => void): () => void;
  emit(event: 'e', p: number): void;
}
const nano = createNanoEvents as unknown as () => Nano;

let calls = 0;
const makeListener = () => (payload: number) => {
  calls += payload & 1;
};

interface Library {
  name: string;
  emit(count: number, ops: number): () => void;
  onOff(ops: number): () => void;
}

const libraries: Library[] = [
  {
    name: 'gitport',
    emit: (count, ops) => {
      const e = createEmitter();
      for (let i = 0; i < count; i++) e.on('e', makeListener() as (p: unknown) => void);
      return () => {
        for (let i = 0; i < ops; i++) e.emit('e', 1);
      };
    },
    onOff: (ops) => {
      const e = createEmitter();
      const fn = makeListener() as (p: unknown) => void;
      return () => {
        for (let i = 0; i < ops; i++) {
          const off = e.on('e', fn);
          off();
        }
      };
    },
  },
  {
    name: 'nanoevents',
    emit: (count, ops) => {
      const e = nano();
      for (let i = 0; i < count; i++) e.on('e', makeListener());
      return () => {
        for (let i = 0; i < ops; i++) e.emit('e', 1);
      };
    },
    onOff: (ops) => {
      const e = nano();
      const fn = makeListener();
      return () => {
        for (let i = 0; i < ops; i++) {
          const off = e.on('e', fn);
          off();
        }
      };
    },
  },
  {
    name: 'eventemitter3',
    emit: (count, ops) => {
      const e = new EventEmitter3();
      for (let i = 0; i < count; i++) e.on('e', makeListener());
      return () => {
        for (let i = 0; i < ops; i++) e.emit('e', 1);
      };
    },
    onOff: (ops) => {
      const e = new EventEmitter3();
      const fn = makeListener();
      return () => {
        for (let i = 0; i < ops; i++) {
          e.on('e', fn);
          e.off('e', fn);
        }
      };
    },
  },
  {
    name: 'mitt',
    emit: (count, ops) => {
      const e = mitt();
      for (let i = 0; i < count; i++) e.on('e', makeListener());
      return () => {
        for (let i = 0; i < ops; i++) e.emit('e', 1);
      };
    },
    onOff: (ops) => {
      const e = mitt();
      const fn = makeListener();
      return () => {
        for (let i = 0; i < ops; i++) {
          e.on('e', fn);
          e.off('e', fn);
        }
      };
    },
  },
];

export const EMITTER_LIBRARIES: readonly string[] = libraries.map((l) => l.name);

export function runEmitterBench(options: EmitterBenchOptions): EmitterBenchResult {
  const { ops } = options;
  const cases = [
    { id: 'emit-1', make: (l: Library) => l.emit(1, ops), expected: ops },
    { id: 'emit-10', make: (l: Library) => l.emit(10, ops), expected: ops * 10 },
    { id: 'on-off', make: (l: Library) => l.onOff(ops), expected: 0 },
  ];
  const runs = cases.flatMap((c) =>
    libraries.map((l) => {
      const run = c.make(l);
      const label = `${c.id}:${l.name}`;
      return {
        key: label,
        run: () => {
          const before = calls;
          run();
          if (calls - before !== c.expected) {
            throw new Error(`${label}: ${calls - before} listener calls, expected ${c.expected}`);
          }
        },
      };
    }),
  );
  for (const { run } of runs) for (let i = 0; i < options.warmup; i++) run();
  const results: EmitterBenchResult = {};
  for (let round = 0; round < options.rounds; round++) {
    for (const { key, run } of runs) {
      let repeats = 0;
      const start = performance.now();
      let ms = 0;
      do {
        run();
        repeats++;
        ms = performance.now() - start;
      } while (ms < options.minMs);
      (results[key] ??= []).push((repeats * ops) / ms / 1000);
    }
  }
  return results;
}
