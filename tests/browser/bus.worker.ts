/**
 * A Web Worker on the bus: it joins its parent's bus over the worker scope, answers `double`
 * requests, echoes `ping` events back as `pong`, and joins a MessageChannel port handed to it
 * (`join-port`) as a second connection.
 */
import { createBus, messagePortEndpoint, workerEndpoint } from '@gitport/bus';

// This project compiles with the DOM library, where `self` is a Window: the worker scope is typed here.
type WorkerScope = Parameters<typeof workerEndpoint>[0] & typeof self;

const bus = createBus({ id: 'worker' });
bus.handle('double', (payload) => (payload as number) * 2);
bus.on('ping', (payload, meta) => bus.send(meta.from, 'pong', payload));
self.addEventListener('message', (event: MessageEvent) => {
  const data = event.data as { type?: string; port?: MessagePort } | undefined;
  if (data?.type === 'join-port' && data.port) void bus.connect(messagePortEndpoint(data.port));
});
void bus.connect(workerEndpoint(self as unknown as WorkerScope));
