/**
 * A reader of `text/event-stream` bodies (HTML Living Standard, "Server-sent events", "Parsing an
 * event stream"), for runtimes without EventSource (Node, Bun, workers that need headers):
 *
 *   stream  = [ bom ] *event
 *   event   = *( comment / field ) end-of-line
 *   comment = colon *any-char end-of-line
 *   field   = 1*name-char [ colon [ space ] *any-char ] end-of-line
 *   end-of-line = ( cr lf / cr / lf )
 *
 * `data` lines join with LF; `id` sets the last event id (kept across events, ignored when it
 * holds NUL); `retry` sets the reconnection delay; an event with no data is not dispatched. A
 * line break may fall at any byte of any chunk (CR at the end of one chunk, LF at the start of
 * the next, is one line end). An event larger than `maxEventBytes` fails the stream with
 * `HTTP_BAD_REQUEST` rather than growing without bound.
 */
import { GitportError } from './errors.js';

export interface ServerSentEvent {
  /** `message` when the stream named none. */
  type: string;
  data: string;
  /** The last event id after this event (the stream's, kept across events). */
  lastEventId: string;
}

export interface EventStreamState {
  lastEventId: string;
  /** The last `retry:` the stream sent (ms), if any. */
  retry?: number;
}

/** The most bytes one event (its lines together) may hold by default. */
export const MAX_EVENT_BYTES = 64 * 1024;

/**
 * The events of a stream body. `state` carries the last event id in (for a resumed stream) and
 * out, with the stream's `retry`.
 */
export async function* readEventStream(
  body: AsyncIterable<Uint8Array>,
  state: EventStreamState,
  maxEventBytes = MAX_EVENT_BYTES,
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  let afterCr = false;
  let first = true;
  let type = '';
  let data: string[] = [];
  let size = 0;
  const lines = function* (text: string): Generator<string> {
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 && afterCr && i === start && pending === '') {
        // the LF of a CRLF split across chunks
        afterCr = false;
        start = i + 1;
        continue;
      }
      afterCr = false;
      if (c === 13 || c === 10) {
        const line = pending + text.slice(start, i);
        pending = '';
        if (c === 13) {
          if (text.charCodeAt(i + 1) === 10) i++;
          else if (i + 1 === text.length) afterCr = true;
        }
        start = i + 1;
        yield line;
      }
    }
    pending += text.slice(start);
  };
  const take = function* (text: string): Generator<ServerSentEvent> {
    for (let line of lines(text)) {
      if (first) {
        first = false;
        if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
      }
      if (line === '') {
        if (data.length > 0) yield { type: type || 'message', data: data.join('\n'), lastEventId: state.lastEventId };
        type = '';
        data = [];
        size = 0;
        continue;
      }
      size += line.length;
      if (size > maxEventBytes) {
        throw new GitportError('HTTP_BAD_REQUEST', `an event of the stream passed ${maxEventBytes} bytes`);
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (name === 'event') type = value;
      else if (name === 'data') data.push(value);
      else if (name === 'id' && !value.includes('\0')) state.lastEventId = value;
      else if (name === 'retry' && /^\d+$/.test(value)) state.retry = Number(value);
    }
    if (pending.length > maxEventBytes) {
      throw new GitportError('HTTP_BAD_REQUEST', `a line of the stream passed ${maxEventBytes} bytes`);
    }
  };
  for await (const chunk of body) yield* take(decoder.decode(chunk, { stream: true }));
  yield* take(decoder.decode());
}
