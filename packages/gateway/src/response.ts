/**
 * A reply as a WHATWG Response: what `Gateway.fetch` returns, so the gateway runs wherever a
 * `fetch(Request)` handler runs. Bodies are pull-based: the client's pace drives the producer, and
 * a cancelled response stops the work.
 */
import type { GatewayReply } from './reply.js';
import { refuse } from './reply.js';
import type { SseHub } from './sse-hub.js';

/**
 * The reply to an events request the hub cannot take now (it is full, or closed): 503 with
 * `Retry-After`, keeping the CORS headers of the events reply. Undefined when it can. Every
 * adapter asks this at the moment it subscribes, so no subscriber slips in between.
 */
export function refuseEvents(
  hub: SseHub,
  reply: GatewayReply,
): (GatewayReply & { body: { kind: 'bytes'; bytes: Uint8Array } }) | undefined {
  if (hub.accepting) return undefined;
  const full = hub.size >= hub.maxSubscribers;
  const refused = full
    ? refuse(503, 'GATEWAY_BUSY', 'too many event subscribers', { 'retry-after': '5' })
    : refuse(503, 'GATEWAY_CLOSED', 'shutting down', { 'retry-after': '5' });
  for (const [name, value] of Object.entries(reply.headers)) {
    if (name.startsWith('access-control-') || name === 'vary') refused.headers[name] = value;
  }
  return refused as GatewayReply & { body: { kind: 'bytes'; bytes: Uint8Array } };
}

export function toResponse(reply: GatewayReply, hub: SseHub, signal?: AbortSignal): Response {
  const init = { status: reply.status, headers: reply.headers };
  const body = reply.body;
  switch (body.kind) {
    case 'none':
      return new Response(null, init);
    case 'bytes':
      return new Response(body.bytes as Uint8Array<ArrayBuffer>, init);
    case 'events': {
      const refused = refuseEvents(hub, reply);
      if (refused !== undefined) return new Response(refused.body.bytes as Uint8Array<ArrayBuffer>, refused);
      return new Response(hub.stream({ ...body.options, signal }), init);
    }
    case 'stream': {
      const it = body.chunks[Symbol.asyncIterator]();
      const stream = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            try {
              const step = await it.next();
              if (step.done) controller.close();
              else controller.enqueue(step.value);
            } catch (error) {
              controller.error(error);
            }
          },
          cancel() {
            void it.return?.()?.catch(() => {});
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(stream, init);
    }
  }
}
