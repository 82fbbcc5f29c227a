import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { collect, gunzipBody, limitBody, peek } from './body.js';

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}
const never = new AbortController().signal;

describe('request bodies', () => {
  const payload = new TextEncoder().encode('0032want 0123456789abcdef0123456789abcdef01234567\n00000009done\n');

  it('peeks and replays the whole body whatever the chunking', async () => {
    for (let size = 1; size <= payload.length; size++) {
      for (const n of [1, 4, 5, 200]) {
        const { head, ended, body } = await peek(chunks(payload, size), n);
        expect(head.length).toBeGreaterThanOrEqual(Math.min(n, payload.length));
        expect(ended).toBe(head.length === payload.length && n > payload.length);
        expect(await collect(body)).toEqual(payload);
      }
    }
  });

  it('limits the size with a typed 413, counting across chunks', async () => {
    const body = limitBody(chunks(payload, 7), { maxBytes: 20, idleMs: 0 }, never);
    await expect(collect(body)).rejects.toMatchObject({ code: 'GATEWAY_BODY_TOO_LARGE', status: 413 });
    expect(await collect(limitBody(chunks(payload, 7), { maxBytes: payload.length, idleMs: 0 }, never))).toEqual(
      payload,
    );
  });

  it('gives up on a stalled body with a typed 408, and on abort', async () => {
    async function* stalled(): AsyncGenerator<Uint8Array> {
      yield payload.subarray(0, 4);
      await new Promise(() => {});
    }
    await expect(collect(limitBody(stalled(), { maxBytes: 1000, idleMs: 20 }, never))).rejects.toMatchObject({
      code: 'GATEWAY_BODY_IDLE',
      status: 408,
    });
    const controller = new AbortController();
    const reading = collect(limitBody(stalled(), { maxBytes: 1000, idleMs: 0 }, controller.signal));
    controller.abort(new Error('client went away'));
    await expect(reading).rejects.toMatchObject({ code: 'GATEWAY_ABORTED' });
  });

  it('inflates gzip at any chunking, stops a bomb at the cap, and types corrupt input', async () => {
    const gz = new Uint8Array(gzipSync(payload));
    for (const size of [1, 3, 64]) {
      expect(await collect(gunzipBody(chunks(gz, size), 1000))).toEqual(payload);
    }
    const bomb = new Uint8Array(gzipSync(new Uint8Array(64 << 20)));
    expect(bomb.length).toBeLessThan(100_000);
    await expect(collect(gunzipBody(chunks(bomb, 4096), 1 << 20))).rejects.toMatchObject({
      code: 'GATEWAY_INFLATE_TOO_LARGE',
      status: 413,
    });
    await expect(collect(gunzipBody(chunks(gz.subarray(0, 15), 4), 1000))).rejects.toMatchObject({
      code: 'GATEWAY_BAD_GZIP',
      status: 400,
    });
    await expect(collect(gunzipBody(chunks(payload, 8), 1000))).rejects.toMatchObject({ code: 'GATEWAY_BAD_GZIP' });
  });
});
