import { describe, expect, it } from 'vitest';
import { type EventStreamState, readEventStream, type ServerSentEvent } from './event-stream.js';

const encoder = new TextEncoder();

async function read(chunks: Uint8Array[], state: EventStreamState = { lastEventId: '' }, max?: number) {
  async function* source() {
    yield* chunks;
  }
  const events: ServerSentEvent[] = [];
  for await (const event of readEventStream(source(), state, max)) events.push(event);
  return { events, state };
}

/** What the gitport gateway sends: a BOM-less stream with retry, comments, ids, CRLF and CR line ends mixed in. */
const STREAM =
  'retry: 2000\n:ok\n\n' +
  'id: e1-1\nevent: ref-update\ndata: {"repo":"a","ref":"refs/heads/main","old":"0","new":"1"}\n\n' +
  ':\n\n' +
  'id: e1-2\r\nevent: ref-update\r\ndata: {"repo":"a",\r\ndata: "x":1}\r\n\r\n' +
  'event: reset\rid: e1-9\rdata: {"reason":"cap"}\r\r' +
  'data\n\n' +
  'id: e1-10\nevent: ignored-without-data\n\n';

const EXPECTED: ServerSentEvent[] = [
  { type: 'ref-update', data: '{"repo":"a","ref":"refs/heads/main","old":"0","new":"1"}', lastEventId: 'e1-1' },
  { type: 'ref-update', data: '{"repo":"a",\n"x":1}', lastEventId: 'e1-2' },
  { type: 'reset', data: '{"reason":"cap"}', lastEventId: 'e1-9' },
  { type: 'message', data: '', lastEventId: 'e1-9' },
];

describe('readEventStream', () => {
  it('reads events, ids, retry, comments and every line end', async () => {
    const { events, state } = await read([encoder.encode(STREAM)]);
    expect(events).toEqual(EXPECTED);
    expect(state).toEqual({ lastEventId: 'e1-10', retry: 2000 });
  });

  it('gives the same events whatever byte the chunks split at', async () => {
    const bytes = encoder.encode(`\ufeff${STREAM}`);
    for (let at = 0; at <= bytes.length; at++) {
      const { events } = await read([bytes.subarray(0, at), bytes.subarray(at)]);
      expect(events, `split at ${at}`).toEqual(EXPECTED);
    }
    const { events } = await read([...bytes].map((b) => Uint8Array.of(b)));
    expect(events).toEqual(EXPECTED);
  });

  it('keeps a resumed stream id and refuses an event past the size cap', async () => {
    const { events } = await read([encoder.encode('data: x\n\n')], { lastEventId: 'e0-5' });
    expect(events).toEqual([{ type: 'message', data: 'x', lastEventId: 'e0-5' }]);
    await expect(
      read([encoder.encode(`data: ${'y'.repeat(200)}\n\n`)], { lastEventId: '' }, 100),
    ).rejects.toMatchObject({ code: 'HTTP_BAD_REQUEST' });
    await expect(read([encoder.encode('z'.repeat(200))], { lastEventId: '' }, 100)).rejects.toMatchObject({
      code: 'HTTP_BAD_REQUEST',
    });
  });
});
