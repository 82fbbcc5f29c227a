/** A minimal EventSource-like reader over node:http for tests: parses frames as they arrive. */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';

export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: boolean;
}

export interface SseConnection {
  status: number;
  headers: IncomingMessage['headers'];
  frames: SseFrame[];
  /** Resolves once a frame satisfying `predicate` has arrived (rejects if the stream ends first). */
  waitFor(predicate: (frame: SseFrame, all: SseFrame[]) => boolean): Promise<SseFrame>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
  req: ClientRequest;
  res: IncomingMessage;
}

export function connectSse(
  server: { host: string; port: number },
  path: string,
  headers: Record<string, string> = {},
): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: server.host,
        port: server.port,
        path,
        headers: { accept: 'text/event-stream', ...headers },
        agent: false,
      },
      (res) => {
        const frames: SseFrame[] = [];
        const waiters = new Set<{
          p: (f: SseFrame, all: SseFrame[]) => boolean;
          ok: (f: SseFrame) => void;
          no: (e: Error) => void;
        }>();
        let buffer = '';
        let endedResolve!: () => void;
        const ended = new Promise<void>((r) => (endedResolve = r));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (;;) {
            const end = buffer.indexOf('\n\n');
            if (end < 0) break;
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const frame: SseFrame = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) frame.comment = true;
              const m = /^(id|event|data): ?(.*)$/.exec(line);
              if (m) frame[m[1] as 'id' | 'event' | 'data'] = m[2]!;
            }
            frames.push(frame);
            for (const w of waiters) {
              if (w.p(frame, frames)) {
                waiters.delete(w);
                w.ok(frame);
              }
            }
          }
        });
        const finish = () => {
          endedResolve();
          for (const w of waiters) w.no(new Error('event stream ended'));
          waiters.clear();
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          frames,
          ended,
          req,
          res,
          waitFor(p) {
            const hit = frames.find((f) => p(f, frames));
            if (hit) return Promise.resolve(hit);
            if (res.complete || res.destroyed) return Promise.reject(new Error('event stream ended'));
            return new Promise((ok, no) => waiters.add({ p, ok, no }));
          },
          close() {
            req.destroy();
          },
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
