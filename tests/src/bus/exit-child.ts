/**
 * Child process of exit.test.ts: buses on MessageChannels (one pair with close events, one pair on
 * heartbeats), requests with a ten-minute timeout that settle at once, then close. The ports are
 * left open on purpose: if any timer or port listener of the bus kept the event loop alive, the
 * process would not exit and the test would time out.
 */
import { MessageChannel } from 'node:worker_threads';
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';

const { port1, port2 } = new MessageChannel();
const a = createBus({ id: 'a', requestTimeout: 600_000, heartbeatInterval: 1000 });
const b = createBus({ id: 'b', heartbeatInterval: 1000 });
b.handle('echo', (value) => value);
await Promise.all([a.connect(nodeEndpoint(port1)), b.connect(nodeEndpoint(port2))]);
const answers = await Promise.all([1, 2, 3].map((n) => a.request('b', 'echo', n)));
if (answers.join() !== '1,2,3') throw new Error(`wrong answers ${answers.join()}`);
// A raw MessagePort used as a DOM port (heartbeat timers instead of a close event).
const raw = new MessageChannel();
const c = createBus({ id: 'c', heartbeatInterval: 1000 });
const d = createBus({ id: 'd', heartbeatInterval: 1000 });
await Promise.all([c.connect(messagePortEndpoint(raw.port1)), d.connect(messagePortEndpoint(raw.port2))]);
a.close();
b.close();
c.close();
d.close();
process.stdout.write('closed\n');
