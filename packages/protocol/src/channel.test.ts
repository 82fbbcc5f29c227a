import { describe, expect, it } from 'vitest';
import { ByteChannel } from './channel.js';

describe('ByteChannel', () => {
  it('tells its reader which chunks their writer gave up', async () => {
    const channel = new ByteChannel();
    const kept = Uint8Array.of(1, 2);
    const given = Uint8Array.of(3, 4);
    await channel.write(kept);
    await channel.write(given, { transfer: true });
    await channel.end();
    const read: [number[], boolean][] = [];
    for await (const chunk of channel) read.push([[...chunk], channel.given(chunk)]);
    expect(read).toEqual([
      [[1, 2], false],
      [[3, 4], true],
    ]);
  });
});
