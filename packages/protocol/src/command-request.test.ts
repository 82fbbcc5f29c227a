import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CommandRequest, encodeCommandRequest, readCommandHead, readCommandRequest } from './command-request.js';
import { fuzzParameters } from './test-fuzz.js';
import { expectCoded, mutated, readerOf } from './test-messages.js';

const line = fc.stringMatching(/^[!-~][ -~]{0,40}$/);
const request: fc.Arbitrary<CommandRequest> = fc.record({
  command: fc.constantFrom('fetch', 'ls-refs', 'object-info'),
  capabilities: fc.array(line, { maxLength: 4 }),
  args: fc.array(line, { maxLength: 12 }),
});

describe('CommandRequest (v2)', () => {
  it('encodes command, capabilities, delim, arguments, flush', () => {
    const bytes = encodeCommandRequest({ command: 'ls-refs', capabilities: ['agent=x'], args: ['peel'] });
    expect(new TextDecoder().decode(bytes)).toBe('0014command=ls-refs\n000cagent=x\n00010009peel\n0000');
  });

  it('round-trips, one request after another on one reader (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('CommandRequest round trip', 300);
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 3 }), async (requests) => {
        const bytes = requests.map(encodeCommandRequest);
        const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
        let at = 0;
        for (const b of bytes) {
          all.set(b, at);
          at += b.length;
        }
        const reader = readerOf(all);
        for (const r of requests) expect(await readCommandRequest(reader)).toEqual(r);
        expect(await readCommandRequest(reader)).toBeUndefined();
      }),
      { seed, numRuns },
    );
  });

  it('capabilities that end in the flush give no arguments', async () => {
    const head = await readCommandHead(readerOf(new TextEncoder().encode('0012command=fetch\n0000')));
    expect(head?.command).toBe('fetch');
    const args: string[] = [];
    for await (const arg of head?.args ?? []) args.push(arg);
    expect(args).toEqual([]);
  });

  it('gives a request or a coded error for truncated, oversized, repeated and random input (seeded)', async () => {
    const { seed, numRuns } = fuzzParameters('readCommandRequest', 500);
    let read = 0;
    await fc.assert(
      fc.asyncProperty(
        mutated(request.map(encodeCommandRequest)),
        fc.array(fc.nat({ max: 4096 }), { maxLength: 4 }),
        async (bytes, cuts) => {
          const reader = readerOf(bytes, cuts);
          try {
            for (let r = await readCommandRequest(reader); r; r = await readCommandRequest(reader)) {
              expect(typeof r.command).toBe('string');
              expect(r.capabilities.length + r.args.length).toBeLessThanOrEqual(bytes.length / 4);
              read++;
            }
          } catch (error) {
            expectCoded(error);
          }
        },
      ),
      { seed, numRuns },
    );
    expect(read).toBeGreaterThan(0);
  });
});
