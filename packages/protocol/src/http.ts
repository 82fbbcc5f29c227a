/**
 * Smart HTTP (stateless RPC), the server's half, shaped for any HTTP host (gitprotocol-http(5)):
 *
 *   GET  $GIT_URL/info/refs?service=git-upload-pack   -> advertiseRefsHttp
 *   POST $GIT_URL/git-upload-pack                     -> handleUploadPackHttp
 *   POST $GIT_URL/git-receive-pack                    -> handleReceivePackHttp
 *
 * The v0 advertisement is prefixed with `PKT-LINE("# service=" service LF) flush-pkt`. With
 * `Git-Protocol: version=2` on an upload-pack GET the reply is the v2 capability advertisement;
 * each POST then carries one v2 command. Replies never carry a `0002` (remote-curl adds it).
 * Gzip request bodies and the `0000` probe POST are the host's business; the handlers take the
 * decoded body.
 */
import { collectRefs, encodeAdvertisementV0, encodeCapabilitiesV2 } from './advertisement.js';
import { DEFAULT_AGENT, uploadPackCapabilities, v2Capabilities } from './capabilities.js';
import { ByteChannel } from './channel.js';
import { CommitGraph } from './commit-graph.js';
import type { Connection, Repository } from './connection.js';
import { ProtocolError } from './errors.js';
import {
  type ReceivePackOptions,
  type ReceivePackResult,
  receivePackAdvertisement,
  serveReceivePack,
} from './receive-pack.js';
import { serveUploadPack, type UploadPackOptions } from './upload-pack.js';

export type GitService = 'git-upload-pack' | 'git-receive-pack';

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** The protocol version a request asks for through its `Git-Protocol` header (`version=2`). */
export function protocolFromHeader(value: string | null | undefined): 0 | 1 | 2 {
  if (!value) return 0;
  let version: 0 | 1 | 2 = 0;
  for (const part of value.split(':')) {
    const m = /^version=(\d+)$/.exec(part.trim());
    if (m) {
      const n = Number(m[1]);
      if (n === 2 || n === 1) version = n;
    }
  }
  return version;
}

export function isGitService(value: string | null | undefined): value is GitService {
  return value === 'git-upload-pack' || value === 'git-receive-pack';
}

const noCache = {
  'Cache-Control': 'no-cache, max-age=0, must-revalidate',
  Expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  Pragma: 'no-cache',
};

/** `GET info/refs?service=...`: the advertisement with its `# service=` prefix (or v2 capabilities). */
export async function advertiseRefsHttp(
  repo: Repository,
  service: GitService,
  options: { protocol?: 0 | 1 | 2; agent?: string; allowFilter?: boolean } = {},
): Promise<HttpReply> {
  const agent = options.agent ?? DEFAULT_AGENT;
  let body: Uint8Array;
  if (service === 'git-receive-pack') {
    body = await receivePackAdvertisement(repo, {
      agent,
      service: true,
      ...(options.protocol !== undefined ? { protocol: options.protocol } : {}),
    });
  } else if (options.protocol === 2) {
    body = encodeCapabilitiesV2(v2Capabilities({ agent, filter: options.allowFilter !== false }), { service });
  } else {
    const graph = new CommitGraph(repo.objects);
    const { refs, symrefs } = await collectRefs(repo.refs, graph);
    body = encodeAdvertisementV0(
      refs,
      uploadPackCapabilities({ stateless: true, agent, symrefs, filter: options.allowFilter !== false }),
      {
        service,
        ...(options.protocol === 1 ? { version: 1 as const } : {}),
      },
    );
  }
  return {
    status: 200,
    headers: { 'Content-Type': `application/x-${service}-advertisement`, ...noCache },
    body,
  };
}

/** Response headers for a POST's reply. */
export function rpcResultHeaders(service: GitService): Record<string, string> {
  return { 'Content-Type': `application/x-${service}-result`, ...noCache };
}

/** How a round's body is best produced for its reader. */
export interface RoundOptions {
  /**
   * Writes of about this many bytes travel best to the body's reader (a transport's flow-control
   * batch): side-band frames are gathered into buffers this large.
   */
  writeSize?: number;
}

/**
 * `POST git-upload-pack`: one stateless round. The returned body streams as the pack is written
 * (backpressure: the pack writer waits for the reader). `done` settles when the round ends;
 * errors also reach the client in-band (`ERR` / side-band 3). `given` tells which chunks of the
 * body were given up by the server (buffers of their own, never touched again): the body's reader
 * may move those to another thread instead of copying them.
 */
export function handleUploadPackHttp(
  repo: Repository,
  body: AsyncIterable<Uint8Array>,
  options: Omit<UploadPackOptions, 'stateless' | 'advertise'> & RoundOptions = {},
): { body: AsyncIterable<Uint8Array>; done: Promise<void>; given(chunk: Uint8Array): boolean } {
  const { writeSize, ...rest } = options;
  const round = statelessRound(
    body,
    (connection) => serveUploadPack(repo, connection, { ...rest, stateless: true, advertise: false }),
    writeSize,
  );
  return { body: round.body, done: round.settled, given: round.given };
}

/**
 * `POST git-receive-pack`: one push. `result` tells which refs moved (for ref-update events);
 * it rejects when the push failed as a whole (nothing moved).
 */
export function handleReceivePackHttp(
  repo: Repository,
  body: AsyncIterable<Uint8Array>,
  options: Omit<ReceivePackOptions, 'stateless' | 'advertise'> & RoundOptions = {},
): { body: AsyncIterable<Uint8Array>; result: Promise<ReceivePackResult>; given(chunk: Uint8Array): boolean } {
  const { writeSize, ...rest } = options;
  const round = statelessRound(
    body,
    (connection) => serveReceivePack(repo, connection, { ...rest, stateless: true, advertise: false }),
    writeSize,
  );
  return { body: round.body, result: round.settled, given: round.given };
}

/**
 * Runs one server round over a request body, its output streamed through a channel that ends when
 * the round settles either way. `settled` is marked handled here (errors also reach the client
 * in-band), and still rejects for a caller that awaits it.
 */
function statelessRound<T>(
  body: AsyncIterable<Uint8Array>,
  serve: (connection: Connection) => Promise<T>,
  writeSize: number | undefined,
): { body: AsyncIterable<Uint8Array>; settled: Promise<T>; given(chunk: Uint8Array): boolean } {
  const out = new ByteChannel();
  const connection: Connection = {
    input: body,
    write: (b, options) => out.write(b, options),
    end: () => out.end(),
    ...(writeSize !== undefined ? { writeSize } : {}),
  };
  const settled = serve(connection).finally(() => out.end());
  settled.catch(() => {});
  return { body: out, settled, given: (chunk) => out.given(chunk) };
}

export function httpError(status: number, message: string): ProtocolError {
  return new ProtocolError('PROTOCOL_HTTP', message, { data: { status } });
}
