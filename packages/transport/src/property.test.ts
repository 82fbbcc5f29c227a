/**
 * Property: whatever the window, the message limit, the chunk sizes and who owns the chunks,
 * the bytes written on one side come out on the other in order and complete, both ways at
 * once, and the reader never queues more than its window. fast-check prints the seed of a
 * failing case.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listenOn } from './accept.js';
import type { DuplexStream } from './index.js';
import { openOn } from './open.js';
import { muxPair } from './test-mux.js';

/** Where `got` departs from the bytes `writeAll` wrote with `tag` (-1: nowhere, same length). */
function firstMismatch(got: Uint8Array, sizes: number[], tag: number): number {
  const total = sizes.reduce((a, b) => a + b, 0);
  for (let i = 0; i < Math.min(total, got.byteLength); i++) if (got[i] !== ((i * 31 + tag) & 255)) return i;
  return got.byteLength === total ? -1 : Math.min(total, got.byteLength);
}

async function writeAll(stream: DuplexStream, sizes: number[], modes: number[], tag: number): Promise<void> {
  let offset = 0;
  for (let k = 0; k < sizes.length; k++) {
    const n = sizes[k]!;
    const mode = modes[k % modes.length]!;
    const bytes = new Uint8Array(n + (mode === 2 ? 16 : 0));
    const chunk = mode === 2 ? bytes.subarray(8, 8 + n) : bytes;
    for (let i = 0; i < n; i++) chunk[i] = ((offset + i) * 31 + tag) & 255;
    await stream.write(chunk, mode === 0 ? undefined : { transfer: true });
    offset += n;
  }
  await stream.end();
}

async function readAll(stream: DuplexStream, window: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let maxQueued = 0;
  for await (const chunk of stream) {
    parts.push(chunk);
    maxQueued = Math.max(maxQueued, stream.stats.maxQueuedBytes);
  }
  expect(maxQueued).toBeLessThanOrEqual(window);
  const out = new Uint8Array(parts.reduce((a, b) => a + b.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

describe('transport properties', () => {
  it('carries any chunking in order, both ways at once, within the window', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1024, max: 200_000 }),
        fc.integer({ min: 1024, max: 200_000 }),
        fc.integer({ min: 2048, max: 300_000 }),
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 20 }),
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 20 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 5 }),
        async (openerWindow, listenerWindow, maxMessageSize, up, down, modes) => {
          const { near, far, close } = muxPair({ maxMessageSize });
          try {
            const farDone = new Promise<Uint8Array>((resolve, reject) => {
              listenOn(
                far,
                'p',
                (stream) => {
                  Promise.all([readAll(stream, listenerWindow), writeAll(stream, down, modes, 7)]).then(
                    ([got]) => resolve(got),
                    (error) => {
                      // Fail this side too, so a failure there cannot leave this side waiting.
                      stream.abort(error);
                      reject(error);
                    },
                  );
                },
                { window: listenerWindow },
              );
            });
            const stream = await openOn(near, 'far', 'p', { window: openerWindow });
            const [gotDown, gotUp] = await Promise.all([
              readAll(stream, openerWindow),
              farDone,
              writeAll(stream, up, modes, 3),
            ]);
            expect(firstMismatch(gotUp, up, 3)).toBe(-1);
            expect(firstMismatch(gotDown, down, 7)).toBe(-1);
            await stream.closed;
            expect(near.stats.streams).toBe(0);
            expect(far.stats.streams).toBe(0);
          } finally {
            close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
