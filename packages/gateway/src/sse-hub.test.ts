import { describe, expect, it } from 'vitest';
import { formatRefUpdate, SseHub, type SseSink, ZERO_ID } from './sse-hub.js';

const decoder = new TextDecoder();

class RecordingSink implements SseSink {
  readonly frames: string[] = [];
  closed = false;
  constructor(private readonly accept: (n: number) => boolean = () => true) {}
  write(bytes: Uint8Array): boolean {
    if (this.closed) throw new Error('write after close');
    this.frames.push(decoder.decode(bytes));
    return this.accept(this.frames.length);
  }
  close(): void {
    this.closed = true;
  }
  get text(): string {
    return this.frames.join('');
  }
  events(): { id?: string; event?: string; data?: string }[] {
    return this.text
      .split('\n\n')
      .filter((block) => block.length > 0)
      .map((block) => {
        const e: { id?: string; event?: string; data?: string } = {};
        for (const line of block.split('\n')) {
          const m = /^(id|event|data): (.*)$/.exec(line);
          if (m) e[m[1] as 'id' | 'event' | 'data'] = m[2]!;
        }
        return e;
      })
      .filter((e) => e.event !== undefined);
  }
}

const oid = (n: number) => n.toString(16).padStart(40, '0');
const update = (repo: string, n: number) => ({ repo, ref: 'refs/heads/main', old: oid(n), new: oid(n + 1) });

describe('SseHub', () => {
  it('formats one event exactly and shares the bytes between subscribers', () => {
    const hub = new SseHub({ epoch: 'e1', heartbeatMs: 0 });
    const written: Uint8Array[][] = [[], []];
    const sinks = written.map((list) => ({
      write(b: Uint8Array) {
        list.push(b);
        return true;
      },
      close() {},
    }));
    for (const s of sinks) hub.subscribe(s, { repos: ['a'] });
    const id = hub.publish(update('a', 1));
    hub.flush();
    expect(id).toBe('e1-1');
    const a = written[0]!.at(-1)!;
    expect(written[1]!.at(-1)).toBe(a);
    expect(decoder.decode(a)).toBe(
      `id: e1-1\nevent: ref-update\ndata: {"repo":"a","ref":"refs/heads/main","old":"${oid(1)}","new":"${oid(2)}"}\n\n`,
    );
    hub.close();
  });

  it('gives every frame an ArrayBuffer of its own, so one frame reveals no other', () => {
    const hub = new SseHub({ epoch: 'e2', heartbeatMs: 0 });
    const frames: Uint8Array[] = [];
    hub.subscribe({
      write(b) {
        frames.push(b);
        return true;
      },
      close() {},
    });
    frames.length = 0;
    hub.publish(update('private', 1));
    hub.flush();
    hub.publish(update('public', 2));
    hub.flush();
    const [first, second] = frames as [Uint8Array, Uint8Array];
    expect(second.buffer).not.toBe(first.buffer);
    for (const frame of [first, second]) {
      expect(frame.byteOffset).toBe(0);
      expect(frame.buffer.byteLength).toBe(frame.byteLength);
    }
    expect(decoder.decode(new Uint8Array(second.buffer))).not.toContain('private');
    // the replay ring holds the very frames the subscribers got
    const replayed = hub.replay('e2-0', undefined);
    expect(replayed).toEqual([first, second]);
    expect(replayed[0]).toBe(first);
    hub.close();
  });

  it('delivers only the subscribed repositories, and everything to /events subscribers', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0 });
    const a = new RecordingSink();
    const all = new RecordingSink();
    const ab = new RecordingSink();
    hub.subscribe(a, { repos: ['a'] });
    hub.subscribe(all);
    hub.subscribe(ab, { repos: ['a', 'b', 'a'] });
    hub.publish(update('a', 1));
    hub.flush();
    hub.publish(update('b', 2));
    hub.flush();
    hub.publish(update('c', 3));
    hub.flush();
    expect(a.events().map((e) => e.id)).toEqual(['e-1']);
    expect(ab.events().map((e) => e.id)).toEqual(['e-1', 'e-2']);
    expect(all.events().map((e) => e.id)).toEqual(['e-1', 'e-2', 'e-3']);
    hub.close();
  });

  it('cannot be made to inject fields through CR or LF in a ref name', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0 });
    const sink = new RecordingSink();
    hub.subscribe(sink);
    hub.publish({ repo: 'a', ref: 'refs/heads/x\r\nevent: reset\n\ndata: evil\rid: 9', old: ZERO_ID, new: oid(1) });
    hub.flush();
    const frame = sink.frames.at(-1)!;
    expect(frame.split('\n')).toHaveLength(5);
    expect(frame.includes('\r')).toBe(false);
    const data = JSON.parse(frame.split('\n')[2]!.slice('data: '.length));
    expect(data.ref).toBe('refs/heads/x\r\nevent: reset\n\ndata: evil\rid: 9');
    hub.close();
  });

  it('replays exactly what a Last-Event-ID missed, in order, for the subscribed repositories', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, replayCap: 10 });
    for (let i = 1; i <= 6; i++) hub.publish(update(i % 2 === 0 ? 'a' : 'b', i));
    const a = new RecordingSink();
    hub.subscribe(a, { repos: ['a'], lastEventId: 'e-2' });
    expect(a.events().map((e) => e.id)).toEqual(['e-4', 'e-6']);
    const all = new RecordingSink();
    hub.subscribe(all, { lastEventId: 'e-3' });
    expect(all.events().map((e) => e.id)).toEqual(['e-4', 'e-5', 'e-6']);
    const current = new RecordingSink();
    hub.subscribe(current, { lastEventId: 'e-6' });
    expect(current.events()).toEqual([]);
    hub.close();
  });

  it('sends reset past the cap, for another epoch, a future id or a malformed id', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, replayCap: 3 });
    for (let i = 1; i <= 5; i++) hub.publish(update('a', i));
    const cases = ['e-1', 'other-3', 'e-99', 'garbage'];
    for (const lastEventId of cases) {
      const sink = new RecordingSink();
      hub.subscribe(sink, { repos: ['a'], lastEventId });
      const events = sink.events();
      expect(events, lastEventId).toHaveLength(1);
      expect(events[0]!.event).toBe('reset');
      expect(events[0]!.id).toBe('e-5');
    }
    // within the cap: replay
    const ok = new RecordingSink();
    hub.subscribe(ok, { repos: ['a'], lastEventId: 'e-2' });
    expect(ok.events().map((e) => e.id)).toEqual(['e-3', 'e-4', 'e-5']);
    hub.close();
  });

  it('bounds a replay across many repositories by the cap', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, replayCap: 4 });
    for (let i = 1; i <= 8; i++) hub.publish(update(`r${i % 4}`, i));
    const sink = new RecordingSink();
    hub.subscribe(sink, { lastEventId: 'e-0' });
    expect(sink.events().map((e) => e.event)).toEqual(['reset']);
    hub.close();
  });

  it('drops a subscriber whose sink reports a full buffer, and keeps serving the others', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0 });
    const slow = new RecordingSink((n) => n < 3);
    const fast = new RecordingSink();
    hub.subscribe(slow, { repos: ['a'] });
    hub.subscribe(fast, { repos: ['a'] });
    for (let i = 1; i <= 5; i++) {
      hub.publish(update('a', i));
      hub.flush();
    }
    expect(slow.closed).toBe(true);
    expect(slow.events()).toHaveLength(2);
    expect(fast.events()).toHaveLength(5);
    expect(hub.size).toBe(1);
    hub.close();
  });

  it('cleans up: unsubscribe and close leave no subscriber and no timer', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 60_000 });
    const offs = Array.from({ length: 50 }, (_, i) =>
      hub.subscribe(new RecordingSink(), i % 2 ? { repos: ['a', 'b'] } : {}),
    );
    expect(hub.size).toBe(50);
    expect((hub as unknown as { timer: unknown }).timer).toBeDefined();
    for (const off of offs) {
      off();
      off();
    }
    expect(hub.size).toBe(0);
    expect((hub as unknown as { timer: unknown }).timer).toBeUndefined();
    expect((hub as unknown as { byRepo: Map<string, unknown> }).byRepo.size).toBe(0);
    const last = new RecordingSink();
    hub.subscribe(last);
    hub.close();
    expect(last.closed).toBe(true);
    expect(hub.size).toBe(0);
  });

  it('refuses subscribers past maxSubscribers with a typed error', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, maxSubscribers: 2 });
    hub.subscribe(new RecordingSink());
    const off = hub.subscribe(new RecordingSink());
    expect(hub.accepting).toBe(false);
    expect(() => hub.subscribe(new RecordingSink())).toThrowError(
      expect.objectContaining({ code: 'GATEWAY_TOO_MANY_SUBSCRIBERS' }),
    );
    off();
    expect(hub.accepting).toBe(true);
    hub.close();
    expect(hub.accepting).toBe(false);
  });

  it('disconnectAll ends every stream but keeps accepting subscribers', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0 });
    const sinks = [new RecordingSink(), new RecordingSink()];
    hub.subscribe(sinks[0]!);
    hub.subscribe(sinks[1]!, { repos: ['a'] });
    hub.disconnectAll();
    expect(sinks.every((s) => s.closed)).toBe(true);
    expect(hub.size).toBe(0);
    const again = new RecordingSink();
    hub.subscribe(again, { repos: ['a'] });
    hub.publish(update('a', 1));
    hub.flush();
    expect(again.events()).toHaveLength(1);
    hub.close();
  });

  it('sends one heartbeat per subscriber from the shared timer', async () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 10 });
    const many = new RecordingSink();
    const one = new RecordingSink();
    hub.subscribe(many, { repos: ['a', 'b', 'c'] });
    await new Promise<void>((resolve) => {
      hub.subscribe({
        write(b) {
          one.write(b);
          if (decoder.decode(b) === ':\n\n') resolve();
          return true;
        },
        close() {},
      });
    });
    hub.beat();
    const beats = (s: RecordingSink) => s.frames.filter((f) => f === ':\n\n').length;
    // the subscriber of three repositories got as many heartbeats as the subscriber of all of them
    expect(beats(many)).toBeGreaterThanOrEqual(2);
    expect(Math.abs(beats(many) - beats(one))).toBeLessThanOrEqual(1);
    hub.close();
  });

  it('streams to a ReadableStream and unsubscribes when it is cancelled', async () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0 });
    const stream = hub.stream({ repos: ['a'] });
    const reader = stream.getReader();
    expect(decoder.decode((await reader.read()).value)).toContain('retry:');
    hub.publish(update('a', 1));
    hub.flush();
    expect(decoder.decode((await reader.read()).value)).toBe(decoder.decode(formatRefUpdate('e-1', update('a', 1))));
    expect(hub.size).toBe(1);
    await reader.cancel();
    expect(hub.size).toBe(0);
    hub.close();
  });
});

/** A sink that takes bytes until it holds `capacity`, then waits for `drain()` (a client reading). */
class PacedSink implements SseSink {
  readonly chunks: Uint8Array[] = [];
  closed = false;
  held = 0;
  private ready: (() => void) | undefined;
  constructor(private readonly capacity: number) {}
  write(bytes: Uint8Array): boolean {
    this.chunks.push(bytes);
    this.held += bytes.byteLength;
    return this.held < this.capacity;
  }
  close(): void {
    this.closed = true;
  }
  onReady(listener: () => void): void {
    this.ready = listener;
  }
  /** The client read everything the sink held. */
  drain(): void {
    this.held = 0;
    this.ready?.();
  }
  events(): { id?: string; event?: string }[] {
    const text = this.chunks.map((c) => decoder.decode(c)).join('');
    return text
      .split('\n\n')
      .map((block) => {
        const e: { id?: string; event?: string } = {};
        for (const line of block.split('\n')) {
          const m = /^(id|event): (.*)$/.exec(line);
          if (m) e[m[1] as 'id' | 'event'] = m[2]!;
        }
        return e;
      })
      .filter((e) => e.event !== undefined);
  }
}

describe('SseHub under a burst', () => {
  it('formats a burst of 10,000 refs once: one shared chunk and one write per subscriber', () => {
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, maxBufferedBytes: 4 << 20 });
    const sinks = Array.from({ length: 300 }, () => new PacedSink(Number.POSITIVE_INFINITY));
    for (const [i, sink] of sinks.entries()) {
      hub.subscribe(sink, i % 3 === 0 ? {} : i % 3 === 1 ? { repos: ['a'] } : { repos: ['a', 'b'] });
    }
    for (const sink of sinks) sink.chunks.length = 0;
    for (let i = 0; i < 10_000; i++) hub.publish(update('a', i));
    hub.flush();
    for (const sink of sinks) expect(sink.chunks).toHaveLength(1);
    // every subscriber of one audience got the very same bytes
    for (let k = 0; k < 3; k++) {
      const audience = sinks.filter((_, i) => i % 3 === k);
      for (const sink of audience) expect(sink.chunks[0]).toBe(audience[0]!.chunks[0]);
    }
    expect(sinks[1]!.events()).toHaveLength(10_000);
    expect(sinks[1]!.events().at(-1)!.id).toBe('e-10000');
    expect(hub.stats().queuedBytes).toBe(0);
    hub.close();
  });

  it('keeps what a subscriber holds under the bound: a reset for a reader, a disconnect for one that never reads', () => {
    const bound = 64 * 1024;
    const hub = new SseHub({ epoch: 'e', heartbeatMs: 0, maxBufferedBytes: bound });
    const reader = new PacedSink(16 * 1024);
    const stuck = new PacedSink(16 * 1024);
    hub.subscribe(reader, { repos: ['a'] });
    hub.subscribe(stuck, { repos: ['a'] });
    let maxHeld = 0;
    for (let burst = 0; burst < 60; burst++) {
      for (let i = 0; i < 20; i++) hub.publish(update('a', burst * 20 + i));
      hub.flush();
      maxHeld = Math.max(maxHeld, hub.stats().maxQueuedBytes);
      // the reader reads every other burst; the stuck one never does
      if (burst % 2 === 1) reader.drain();
    }
    expect(maxHeld).toBeLessThanOrEqual(bound);
    expect(hub.stats().maxQueuedBytes).toBeLessThanOrEqual(bound);
    expect(stuck.closed).toBe(true);
    expect(reader.closed).toBe(false);
    expect(hub.size).toBe(1);
    const ids = reader.events().map((e) => `${e.event} ${e.id}`);
    expect(ids.at(-1)).toBe('ref-update e-1200');
    // every event, in order
    expect(ids.filter((e) => e.startsWith('ref-update'))).toHaveLength(1200);

    // a burst larger than the bound: the reader gets one reset carrying the burst's last id
    for (let i = 0; i < 1000; i++) hub.publish(update('a', i));
    hub.flush();
    reader.drain();
    expect(reader.events().at(-1)).toEqual({ id: 'e-2200', event: 'reset' });
    expect(hub.stats()).toMatchObject({ subscribers: 1, resets: 2, dropped: 1 });
    hub.close();
  });

  it('caps subscribers at 512 by default', () => {
    expect(new SseHub().maxSubscribers).toBe(512);
  });
});
