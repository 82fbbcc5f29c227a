import { describe, expect, it } from 'vitest';
import { releasable, release } from './released-buffers.js';

describe('released buffers', () => {
  it('frees a chunk marked releasable once released, and only once', () => {
    const chunk = releasable(new Uint8Array(64 * 1024).fill(7));
    release(chunk);
    // detached: its memory went with the dropped message
    expect(chunk.buffer.byteLength).toBe(0);
    expect(() => release(chunk)).not.toThrow();
  });

  it('leaves alone chunks not marked, and views of part of a buffer', () => {
    const unmarked = new Uint8Array(1024).fill(1);
    release(unmarked);
    expect(unmarked.byteLength).toBe(1024);
    expect(unmarked[0]).toBe(1);

    const whole = new Uint8Array(2048).fill(2);
    const view = releasable(whole.subarray(0, 1024));
    release(view);
    expect(whole.byteLength).toBe(2048);
    expect(view[1023]).toBe(2);
  });
});
