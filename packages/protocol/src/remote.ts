/**
 * The client's view of a remote service, in both modes:
 *
 * - stateful: one `Connection` already attached to the service (a transport DuplexStream, the
 *   stdio of `git upload-pack <dir>`); the advertisement arrives first, then rounds share the
 *   connection;
 * - stateless: smart HTTP through an HTTP-shaped function; `GET info/refs?service=` for the
 *   advertisement, then one `POST` per round (gitprotocol-http(5)). `Git-Protocol: version=2`
 *   asks for v2 on upload-pack. A v2 command known ahead (`first`, the `ls-refs` of a fetch)
 *   goes out beside the discovery GET instead of after it, one round trip less; its answer is
 *   read only once the advertisement says v2.
 */
import { type PacketReader, PktLineRemoteError } from '@gitport/pktline';
import { type Advertisement, type AdvertisementV2, decodeAdvertisement } from './advertisement.js';
import type { Connection } from './connection.js';
import { newReader } from './connection.js';
import { hasCode, ProtocolError } from './errors.js';
import type { GitService } from './http.js';

export interface HttpRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: Uint8Array | AsyncIterable<Uint8Array>;
  signal?: AbortSignal;
  /**
   * Sent ahead of an answer it depends on (a v2 command beside the discovery GET): the caller
   * sends it again the usual way when this one fails, so an HTTP client should not ask for
   * credentials or follow redirects for it.
   */
  speculative?: boolean;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

/** An HTTP client in the shape the gateway, isomorphic-git's plugin and tests can provide. */
export type HttpFetch = (request: HttpRequest) => Promise<HttpResponse>;

export type Remote =
  | { connection: Connection }
  | {
      url: string;
      http: HttpFetch;
      headers?: Record<string, string>;
      /**
       * Protocol v2 capability advertisements already read from this URL, by service: a later
       * session of the same remote starts with its command, one round trip (the discovery GET)
       * less, as git's remote-curl does for the requests of one process. A v2 advertisement
       * lists no refs, so it does not go stale as refs move; v0 ones are never kept.
       */
      discovered?: Map<GitService, AdvertisementV2>;
    };

export interface ServiceSession {
  readonly stateless: boolean;
  readonly advertisement: Advertisement;
  /**
   * The session's first round (an empty request) reads the answer to `SessionOptions.first`:
   * always on a connection given `first`; over HTTP only when the server speaks v2 and the
   * request sent ahead was answered.
   */
  readonly firstSent: boolean;
  /** Sends one request; resolves with a reader over its response (stateful: the shared reader). */
  round(request: Uint8Array | AsyncIterable<Uint8Array>): Promise<PacketReader>;
  /** Ends the exchange (stateful: half-closes the connection). */
  close(): Promise<void>;
}

function header(headers: Record<string, string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/** The media type of a Content-Type value, without parameters, lower case. */
function mediaType(value: string | undefined): string | undefined {
  return value?.split(';')[0]?.trim().toLowerCase();
}

async function drain(body: AsyncIterable<Uint8Array>, max = 4096): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= max) break;
  }
  const out = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const p of parts) {
    const n = Math.min(p.length, out.length - at);
    out.set(p.subarray(0, n), at);
    at += n;
  }
  return new TextDecoder().decode(out);
}

/** Turns `ERR` packets and side-band 3 into ProtocolError `PROTOCOL_REMOTE_ERROR`. */
export function remoteError(error: unknown): unknown {
  if (error instanceof PktLineRemoteError || hasCode(error, 'PKTLINE_REMOTE_ERROR')) {
    return new ProtocolError('PROTOCOL_REMOTE_ERROR', `remote error: ${(error as Error).message}`, { cause: error });
  }
  return error;
}

/** What opening a session takes besides the remote and the service. */
export interface SessionOptions {
  protocol?: 0 | 1 | 2;
  signal?: AbortSignal;
  /**
   * A v2 command sent before the advertisement is read, for a server asked for v2: on a
   * connection the bytes travel with its start; over smart HTTP (`protocol: 2`, upload-pack) they
   * are POSTed beside the discovery GET, and dropped if the server does not answer v2.
   */
  first?: Uint8Array;
}

/** A remote reached over a connection already attached to its service. */
export type ConnectionRemote = Extract<Remote, { connection: Connection }>;
/** A remote reached over smart HTTP. */
export type HttpRemote = Exclude<Remote, ConnectionRemote>;

/**
 * Opens a session with a remote's service: `openSession` for any remote, or, for a caller that
 * knows which kind its remotes are, `openConnectionSession` or `openHttpSession` alone (a bundle
 * then carries only that one).
 */
export type SessionOpener<R extends Remote = Remote> = (
  remote: R,
  service: GitService,
  options?: SessionOptions,
) => Promise<ServiceSession>;

export async function openSession(
  remote: Remote,
  service: GitService,
  options: SessionOptions = {},
): Promise<ServiceSession> {
  return 'connection' in remote
    ? openConnectionSession(remote, service, options)
    : openHttpSession(remote, service, options);
}

/** The stateful session of a connection (the service is the one the connection is attached to). */
export async function openConnectionSession(
  remote: ConnectionRemote,
  _service: GitService,
  options: SessionOptions = {},
): Promise<ServiceSession> {
  try {
    const conn = remote.connection;
    const reader = newReader(conn.input, options.signal);
    if (options.first) await conn.write(options.first);
    const advertisement = await decodeAdvertisement(reader);
    return {
      stateless: false,
      advertisement,
      firstSent: options.first !== undefined,
      async round(request) {
        // an empty request only reads (the answer to what `first` sent)
        if (request instanceof Uint8Array) {
          if (request.length > 0) await conn.write(request);
        } else for await (const chunk of request) await conn.write(chunk);
        return reader;
      },
      close: () => conn.end(),
    };
  } catch (error) {
    throw remoteError(error);
  }
}

/** The stateless session of smart HTTP: the discovery GET (unless known), then one POST per round. */
export async function openHttpSession(
  remote: HttpRemote,
  service: GitService,
  options: SessionOptions = {},
): Promise<ServiceSession> {
  const { signal } = options;
  const base = remote.url.replace(/\/+$/, '');
  const extra = remote.headers ?? {};
  const post = (body: Uint8Array | AsyncIterable<Uint8Array>, v2: boolean, speculative = false) =>
    remote.http({
      url: `${base}/${service}`,
      method: 'POST',
      headers: {
        ...extra,
        'Content-Type': `application/x-${service}-request`,
        Accept: `application/x-${service}-result`,
        ...(v2 ? { 'Git-Protocol': 'version=2' } : {}),
      },
      body,
      ...(signal ? { signal } : {}),
      ...(speculative ? { speculative } : {}),
    });
  // the first command goes out now, beside the discovery GET: both answers come in one round trip
  let early =
    options.first !== undefined && options.protocol === 2 && service === 'git-upload-pack'
      ? post(options.first, true, true)
      : undefined;
  early?.catch(() => {});
  try {
    const known = options.protocol === 2 ? remote.discovered?.get(service) : undefined;
    const advertisement = known ?? (await discover(remote, base, service, options.protocol, signal));
    if (advertisement.version === 2 && options.protocol === 2) remote.discovered?.set(service, advertisement);
    let first: { reader: PacketReader; response: HttpResponse } | undefined;
    if (early !== undefined) {
      // used only from a v2 server that answered it as a round; otherwise it is sent again
      const response = advertisement.version === 2 ? await early.catch(() => undefined) : undefined;
      if (response === undefined) dropResponse(early);
      else {
        try {
          first = { reader: checkedReader(response, service, signal), response };
        } catch {
          discard(response);
        }
      }
      early = undefined;
    }
    const firstSent = first !== undefined;
    return {
      stateless: true,
      advertisement,
      firstSent,
      async round(request) {
        // an empty request only reads (the answer to what `first` sent)
        if (first !== undefined && request instanceof Uint8Array && request.length === 0) {
          const { reader } = first;
          first = undefined;
          return reader;
        }
        const response = await post(request, advertisement.version === 2);
        if (response.status !== 200) {
          const text = await drain(response.body).catch(() => '');
          throw new ProtocolError(
            'PROTOCOL_HTTP',
            `POST ${service} failed with HTTP ${response.status}: ${text.trim()}`,
            {
              data: { status: response.status },
            },
          );
        }
        return checkedReader(response, service, signal);
      },
      async close() {
        if (first !== undefined) discard(first.response);
        first = undefined;
      },
    };
  } catch (error) {
    if (early !== undefined) dropResponse(early);
    throw remoteError(error);
  }
}

/** A round's response as pkt-lines, once its status and content type say it is one. */
function checkedReader(response: HttpResponse, service: GitService, signal: AbortSignal | undefined): PacketReader {
  if (response.status !== 200) throw new ProtocolError('PROTOCOL_HTTP', `HTTP ${response.status}`);
  const rtype = mediaType(header(response.headers, 'content-type'));
  if (rtype !== `application/x-${service}-result`) {
    throw new ProtocolError('PROTOCOL_HTTP', `unexpected content type ${rtype ?? 'missing'} for ${service}`);
  }
  return newReader(response.body, signal);
}

/** Gives up a response nobody reads: its body is cancelled so the connection is freed. */
function discard(response: HttpResponse): void {
  try {
    response.body[Symbol.asyncIterator]()
      .return?.()
      ?.catch(() => {});
  } catch {
    // a body that cannot be cancelled is left to the garbage collector
  }
}

/** A response still on its way that will not be read: dropped once it comes. */
function dropResponse(pending: Promise<HttpResponse>): void {
  pending.then(discard, () => {});
}

/** The discovery GET of smart HTTP: the service's advertisement. */
async function discover(
  remote: { http: HttpFetch; headers?: Record<string, string> },
  base: string,
  service: GitService,
  protocol: 0 | 1 | 2 | undefined,
  signal: AbortSignal | undefined,
): Promise<Advertisement> {
  const extra = remote.headers ?? {};
  const protocolHeader: Record<string, string> =
    service === 'git-upload-pack' && protocol ? { 'Git-Protocol': `version=${protocol}` } : {};
  const get = await remote.http({
    url: `${base}/info/refs?service=${service}`,
    method: 'GET',
    headers: { ...extra, Accept: '*/*', ...protocolHeader },
    ...(signal ? { signal } : {}),
  });
  if (get.status !== 200) {
    const text = await drain(get.body).catch(() => '');
    throw new ProtocolError('PROTOCOL_HTTP', `GET info/refs failed with HTTP ${get.status}: ${text.trim()}`, {
      data: { status: get.status },
    });
  }
  const type = mediaType(header(get.headers, 'content-type'));
  if (type !== `application/x-${service}-advertisement`) {
    throw new ProtocolError('PROTOCOL_HTTP', `not a smart HTTP server (content type ${type ?? 'missing'})`, {
      data: { status: get.status },
    });
  }
  return decodeAdvertisement(newReader(get.body, signal));
}
