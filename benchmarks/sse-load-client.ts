/**
 * The SSE load client the gateway benches drive: tests/src/gateway/sse-load-client.mjs forked into
 * a process of its own (so the connections it holds do not share the server's event loop),
 * asked over IPC, each question answered by one reply message of a given type.
 */
import { type ChildProcess, fork } from 'node:child_process';

const clientScript = new URL('../tests/src/gateway/sse-load-client.mjs', import.meta.url);

export class LoadClient {
  readonly child: ChildProcess;
  private readonly waiting = new Map<string, (msg: Record<string, number>) => void>();
  constructor() {
    this.child = fork(clientScript, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    this.child.on('message', (msg: { type: string } & Record<string, number>) => {
      const w = this.waiting.get(msg.type);
      if (w) {
        this.waiting.delete(msg.type);
        w(msg);
      }
    });
  }
  on(reply: string, listener: (msg: Record<string, number>) => void): void {
    this.waiting.set(reply, listener);
  }
  ask(message: object, reply: string): Promise<Record<string, number>> {
    return new Promise((resolve, reject) => {
      this.waiting.set(reply, resolve);
      this.child.once('exit', (code) => reject(new Error(`load client exited ${code}`)));
      this.child.send(message);
    });
  }
  close(): void {
    this.child.send({ type: 'close' });
  }
}
