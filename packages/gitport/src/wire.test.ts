import * as pack from '@gitport/pack';
import { describe, expect, it } from 'vitest';
import * as library from './index.js';
import * as wire from './wire.js';

describe('gitport/wire', () => {
  it('names what the library and its packages name, with the same values', () => {
    expect(wire.ZERO_ID).toBe(pack.ZERO_ID);
    expect(wire.HTTP_STREAM).toBe(library.HTTP_STREAM);
    expect(wire.HTTP_STOP).toBe(library.HTTP_STOP);
    expect(wire.REF_UPDATE_EVENT).toBe(library.REF_UPDATE_EVENT);
    expect(wire.isRefUpdateEvent).toBe(library.isRefUpdateEvent);
  });

  it('tells a ref-update event from other payloads', () => {
    const event = { repo: 'r', ref: 'refs/heads/main', old: wire.ZERO_ID, new: 'a'.repeat(40) };
    expect(wire.isRefUpdateEvent(event)).toBe(true);
    expect(wire.isRefUpdateEvent({ ...event, new: 1 })).toBe(false);
    expect(wire.isRefUpdateEvent({ repo: 'r', ref: 'x', old: 'y' })).toBe(false);
    expect(wire.isRefUpdateEvent(null)).toBe(false);
    expect(wire.isRefUpdateEvent('ref-update')).toBe(false);
  });
});
