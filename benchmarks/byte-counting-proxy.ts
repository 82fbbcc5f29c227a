/**
 * A TCP proxy on 127.0.0.1 that counts the bytes a server sends back, so that a benchmark can
 * report what a fetch or a clone cost on the wire for any server (gitport's or git's) the same way.
 */
import { connect, createServer, type Server } from 'node:net';

export interface ByteCountingProxy {
  url: string;
  /** Bytes the server has sent through the proxy so far. */
  readonly received: number;
  close(): Promise<void>;
}

export async function startByteCountingProxy(target: string): Promise<ByteCountingProxy> {
  const { hostname, port } = new URL(target);
  let received = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    upstream.on('data', (b: Buffer) => {
      received += b.length;
    });
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    get received() {
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
