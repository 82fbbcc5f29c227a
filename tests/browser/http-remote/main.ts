/**
 * The HTTP remote page, driven by tests/src/http-remote/browser-page.ts: one module worker
 * (remote.worker.ts) that reaches git servers on other origins over smart HTTP.
 * - `window.call(op, args)`: runs one operation in the worker, answers its result or rejects
 *   with `{ code, message, data }`;
 * - `window.updates`: the ref updates the worker's watchers heard, in order, and
 *   `window.arrivals` when the worker heard each (ms since the epoch);
 * - `window.fetched`: the refs each automatic fetch of a watcher moved.
 */
import type { WorkerReply } from './remote.worker.js';

const worker = new Worker(new URL('./remote.worker.ts', import.meta.url), { type: 'module' });
const pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
const updates: unknown[] = [];
const arrivals: number[] = [];
const fetched: string[][] = [];
let next = 0;

worker.onmessage = (event: MessageEvent<WorkerReply>) => {
  const reply = event.data;
  if (reply.type === 'fetched') {
    fetched.push(reply.updates);
    return;
  }
  if (reply.type === 'update') {
    updates.push(reply.event);
    arrivals.push(reply.at);
    return;
  }
  const waiting = pending.get(reply.id);
  pending.delete(reply.id);
  if (reply.type === 'result') waiting?.resolve(reply.value);
  else waiting?.reject(reply.error);
};

function call(op: string, args: unknown): Promise<unknown> {
  const id = next++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, args });
  });
}

Object.assign(window, { call, updates, arrivals, fetched });
document.title = 'ready';
