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

/**
 * `POST git-upload-pack`: one stateless round. The returned body streams as the pack is written
 * (backpressure: the pack writer waits for the reader). `done` settles when the round ends;
 * errors also reach the client in-band (`ERR` / side-band 3).
 */
export function handleUploadPackHttp(
  repo: Repository,
  body: AsyncIterable<Uint8Array>,
  options: Omit<UploadPackOptions, 'stateless' | 'advertise'> = {},
): { body: AsyncIterable<Uint8Array>; done: Promise<void> } {
  const round = statelessRound(body, (connection) =>
    serveUploadPack(repo, connection, { ...options, stateless: true, advertise: false }),
  );
  return { body: round.body, done: round.settled };
}

/**
 * `POST git-receive-pack`: one push. `result` tells which refs moved (for ref-update events);
 * it rejects when the push failed as a whole (nothing moved).
 */
export function handleReceivePackHttp(
  repo: Repository,
  body: AsyncIterable<Uint8Array>,
  options: Omit<ReceivePackOptions, 'stateless' | 'advertise'> = {},
): { body: AsyncIterable<Uint8Array>; result: Promise<ReceivePackResult> } {
  const round = statelessRound(body, (connection) =>
    serveReceivePack(repo, connection, { ...options, stateless: true, advertise: false }),
  );
  return { body: round.body, result: round.settled };
}

/**
 * Runs one server round over a request body, its output streamed through a channel that ends when
 * the round settles either way. `settled` is marked handled here (errors also reach the client
 * in-band), and still rejects for a caller that awaits it.
 */
function statelessRound<T>(
  body: AsyncIterable<Uint8Array>,
  serve: (connection: Connection) => Promise<T>,
): { body: AsyncIterable<Uint8Array>; settled: Promise<T> } {
  const out = new ByteChannel();
  const settled = serve({ input: body, write: (b) => out.write(b), end: () => out.end() }).finally(() => out.end());
  settled.catch(() => {});
  return { body: out, settled };
}

export function httpError(status: number, message: string): ProtocolError {
  return new ProtocolError('PROTOCOL_HTTP', message, { data: { status } });
}
