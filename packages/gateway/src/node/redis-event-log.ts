/**
 * Ref events on Redis Streams, shared by every gateway serving one set of repositories (Node only:
 * it holds TCP connections through `ioredis`, loaded when a log is created).
 *
 * Keys (one hash tag, so a cluster keeps them on one node and the append script may touch both):
 *
 *   <prefix>:{events}:all           every ref update, for `/events`
 *   <prefix>:{events}:repo:<name>   the ref updates of one repository
 *
 * A ref update is appended by one script to both streams, `MAXLEN ~ <replayCap>`, under one entry
 * id (the gateway-wide stream picks it; the repository's stream takes the same one, which is always
 * above its last since every id it holds came from the gateway-wide stream first). That id is the
 * SSE `id`, whichever gateway a client reconnects to.
 *
 * Each gateway tails the gateway-wide stream on a connection of its own (`XREAD BLOCK`: it holds
 * every event, so one stream is all a gateway reads whatever its clients follow), tells its
 * `onEvent` listeners (the gateway drops the repository's cached advertisements) and hands each
 * event to its hub, which formats it once for all of its subscribers. A client that comes back
 * with `Last-Event-ID` is replayed with `XRANGE` of the streams it follows (one script per stream,
 * in parallel), up to the tail's position, then goes on live: exactly what it missed, or
 * `event: reset` when one of them was trimmed past its id (`max-deleted-entry-id`) or it missed
 * more than `replayCap` events. Clients that come back at once with the same id and repositories
 * share one replay.
 *
 * Redis going away stops nothing else: pushes still succeed, their events wait (at most
 * `replayCap` of them) and are appended once Redis is back; `degraded` says why meanwhile. When
 * the tail starts again every subscriber gets `event: reset` with the stream's last id (what
 * happened in between is not known to this gateway), and so does every replay that was waiting.
 */
import { createHash } from 'node:crypto';
import type { Redis as RedisClient, RedisOptions } from 'ioredis';
import { GatewayError } from '../errors.js';
import type { RefEventLog } from '../event-log.js';
import { formatRefUpdate, formatReset, type RefUpdateEvent, type SseHub } from '../sse-hub.js';

export interface RedisEventLogOptions {
  /** Events kept per stream for replay (`MAXLEN ~`; default: the hub's `replayCap`). */
  replayCap?: number;
  /** Key prefix (default `gitport`): gateways sharing one prefix share their events. */
  prefix?: string;
  /** Longest wait for a connection to Redis, ms (default 10 000). */
  connectTimeoutMs?: number;
}

/** A stream entry id, `<ms>-<seq>`, as two numbers. */
type StreamId = readonly [number, number];

const STREAM_ID = /^(\d{1,15})-(\d{1,15})$/;

function parseId(id: string): StreamId | undefined {
  const m = STREAM_ID.exec(id.trim());
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
}

function compareIds(a: StreamId, b: StreamId): number {
  return a[0] - b[0] || a[1] - b[1];
}

/** Appends one event to the gateway-wide stream and, under the same id, to its repository's. */
const APPEND = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'repo', ARGV[2], 'ref', ARGV[3], 'old', ARGV[4], 'new', ARGV[5])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], id, 'repo', ARGV[2], 'ref', ARGV[3], 'old', ARGV[4], 'new', ARGV[5])
return id
`;

/**
 * The entries of one stream after ARGV[1] up to ARGV[2] (at most ARGV[3]), and whether an entry
 * after ARGV[1] was trimmed: `{ trimmed, entries }`.
 */
const RANGE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, {}} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local deleted = '0-0'
for i = 1, #info, 2 do
  if info[i] == 'max-deleted-entry-id' then deleted = info[i + 1] end
end
local function parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local dms, dseq = parts(deleted)
local lms, lseq = parts(ARGV[1])
if dms > lms or (dms == lms and dseq > lseq) then return {1, {}} end
return {0, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], ARGV[2], 'COUNT', ARGV[3])}
`;

interface Script {
  readonly source: string;
  readonly sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const APPEND_SCRIPT = script(APPEND);
const RANGE_SCRIPT = script(RANGE);

async function run(conn: RedisClient, s: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return await conn.call('EVALSHA', [s.sha, keys.length, ...keys, ...args]);
  } catch (error) {
    if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
    return conn.call('EVAL', [s.source, keys.length, ...keys, ...args]);
  }
}

/** A stream entry's fields as a ref update, undefined when they are not one. */
function toEvent(fields: unknown): RefUpdateEvent | undefined {
  if (!Array.isArray(fields)) return undefined;
  const values: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) values[String(fields[i])] = String(fields[i + 1]);
  const { repo, ref, old, new: next } = values;
  if (repo === undefined || ref === undefined || old === undefined || next === undefined) return undefined;
  return { repo, ref, old, new: next };
}

/** Checks a `redis://HOST:PORT[/DB]` address; returns it unchanged. */
export function checkRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', `not a redis:// URL: ${url}`);
  }
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', `expected redis://HOST:PORT[/DB], got ${url}`);
  }
  if (parsed.pathname !== '' && parsed.pathname !== '/' && !/^\/\d{1,5}$/.test(parsed.pathname)) {
    throw new GatewayError('GATEWAY_BAD_ARGUMENT', `the database of a redis URL is a number: ${url}`);
  }
  return url;
}

export class RedisEventLog implements RefEventLog {
  private readonly url: string;
  private readonly prefix: string;
  private readonly connectTimeoutMs: number;
  private readonly requestedCap: number | undefined;
  /** Events kept per stream: the option, else the hub's replay cap once attached. */
  private cap = 1024;
  private hub: SseHub | undefined;
  private commands: RedisClient | undefined;
  private blocking: RedisClient | undefined;
  private closed = false;
  private lastError = 'connecting';
  /** The last entry id delivered to the hub; undefined while the tail is not running. */
  private tailId: string | undefined;
  /** Counts tail starts: a replay begun in an earlier one is answered with a reset. */
  private generation = 0;
  /** Replays and `ready()` callers waiting for the tail to (re)start. */
  private startWaiters: (() => void)[] = [];
  /** Replays waiting for the tail to pass an id. */
  private passWaiters: { id: StreamId; resolve: () => void }[] = [];
  /** Events of this gateway not yet appended (Redis unreachable), oldest first. */
  private unsent: RefUpdateEvent[] = [];
  private flushing = false;
  /** Replays in flight, by last event id and repositories. */
  private readonly replays = new Map<string, Promise<Uint8Array[]>>();
  /** Frames the hub formatted for the newest events, by id: replays reuse them. */
  private readonly frames = new Map<string, Uint8Array>();
  /** Told of every event the tail reads, and of every restart of the tail (undefined). */
  private readonly listeners = new Set<(event: RefUpdateEvent | undefined) => void>();
  /** Events this gateway could not keep for Redis while it was unreachable. */
  droppedEvents = 0;

  constructor(url: string, options: RedisEventLogOptions = {}) {
    this.url = checkRedisUrl(url);
    this.prefix = options.prefix ?? 'gitport';
    if (!/^[\w.:-]{1,64}$/.test(this.prefix)) {
      throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'prefix must be 1-64 characters of [A-Za-z0-9_.:-]');
    }
    this.requestedCap = options.replayCap;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  /** The log of one gateway's hub (the `eventLog` option of `createGateway`); starts connecting. */
  attach(hub: SseHub): this {
    if (this.hub !== undefined) throw new GatewayError('GATEWAY_BAD_ARGUMENT', 'the log already serves a hub');
    this.hub = hub;
    this.cap = Math.max(1, this.requestedCap ?? hub.replayCap);
    void this.start();
    return this;
  }

  get degraded(): string | undefined {
    if (this.closed) return 'closed';
    if (this.tailId !== undefined && this.commands?.status === 'ready') return undefined;
    return `redis unreachable (${this.lastError})`;
  }

  onEvent(listener: (event: RefUpdateEvent | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private tell(event: RefUpdateEvent | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        console.error('gitport: ref event listener failed', error);
      }
    }
  }

  /** Resolves once the tail runs (or the log is closed). */
  ready(): Promise<void> {
    if (this.tailId !== undefined || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.startWaiters.push(resolve));
  }

  private get allKey(): string {
    return `${this.prefix}:{events}:all`;
  }

  private repoKey(repo: string): string {
    return `${this.prefix}:{events}:repo:${repo}`;
  }

  private async start(): Promise<void> {
    let Redis: typeof import('ioredis').Redis;
    try {
      ({ Redis } = await import('ioredis'));
    } catch (error) {
      this.lastError = `cannot load ioredis: ${(error as Error).message}`;
      return;
    }
    if (this.closed) return;
    const options: RedisOptions = {
      protocol: 2,
      connectTimeout: this.connectTimeoutMs,
      // fail at once while disconnected: events wait in `unsent`, the tail restarts by itself
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    };
    const commands = new Redis(this.url, options);
    const blocking = new Redis(this.url, options);
    this.commands = commands;
    this.blocking = blocking;
    for (const conn of [commands, blocking]) {
      conn.on('error', (error: Error) => {
        this.lastError = error.message || String(error);
      });
      conn.on('close', () => {
        if (!this.closed) this.lastError ||= 'connection closed';
      });
    }
    commands.on('ready', () => void this.flushUnsent());
    void this.tail(blocking);
  }

  publish(event: RefUpdateEvent): void {
    if (this.closed) return;
    this.unsent.push(event);
    if (this.unsent.length > this.cap) {
      // subscribers get a reset when Redis is back: the oldest of what waits can go
      this.unsent.shift();
      this.droppedEvents++;
    }
    void this.flushUnsent();
  }

  /** Appends the waiting events in order while Redis takes them. */
  private async flushUnsent(): Promise<void> {
    const conn = this.commands;
    if (this.flushing || conn === undefined) return;
    this.flushing = true;
    try {
      while (this.unsent.length > 0 && conn.status === 'ready' && !this.closed) {
        const batch = this.unsent.splice(0);
        const appended = await Promise.allSettled(
          batch.map((e) =>
            run(conn, APPEND_SCRIPT, [this.allKey, this.repoKey(e.repo)], [this.cap, e.repo, e.ref, e.old, e.new]),
          ),
        );
        const failed = batch.filter((_, i) => appended[i]!.status === 'rejected');
        if (failed.length > 0) {
          const reason = (appended.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
          this.lastError = (reason as Error)?.message ?? String(reason);
          // appended again once Redis is back (an append cut off in flight may then appear twice)
          this.unsent.unshift(...failed);
          break;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Reads the gateway-wide stream from its newest entry on, handing each event to the hub. */
  private async tail(conn: RedisClient): Promise<void> {
    while (!this.closed) {
      try {
        if (this.tailId === undefined) {
          const newest = (await conn.call('XREVRANGE', [this.allKey, '+', '-', 'COUNT', 1])) as [string, unknown][];
          this.started(newest.length > 0 ? newest[0]![0] : '0-0');
        }
        const reply = (await conn.call('XREAD', [
          'COUNT',
          1024,
          'BLOCK',
          10_000,
          'STREAMS',
          this.allKey,
          this.tailId!,
        ])) as [string, [string, unknown][]][] | null;
        if (reply === null || this.closed) continue;
        for (const [, entries] of reply) {
          for (const [id, fields] of entries) {
            this.tailId = id;
            const event = toEvent(fields);
            if (event === undefined) continue;
            // caches first: a subscriber that refetches refs on this event must see the new ones
            this.tell(event);
            this.remember(id, this.hub!.deliver(id, event));
          }
        }
        this.passed();
      } catch (error) {
        if (this.closed) return;
        this.lastError = (error as Error)?.message ?? String(error);
        this.tailId = undefined;
        if (conn.status !== 'ready') await this.reconnected(conn);
        else await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** The tail runs from `id`: every subscriber (and every waiting replay) starts over from there. */
  private started(id: string): void {
    this.tailId = id;
    this.generation++;
    this.lastError = '';
    // what changed while the tail was down is not known: every cached ref may be stale
    this.tell(undefined);
    this.hub!.broadcast(formatReset(id, 'log'));
    const waiting = this.startWaiters.splice(0);
    for (const wake of waiting) wake();
    // replays waiting for the old tail: their `generation` check answers them with a reset
    this.passed(true);
  }

  private passed(all = false): void {
    if (this.passWaiters.length === 0) return;
    const tail = parseId(this.tailId ?? '0-0')!;
    const still: typeof this.passWaiters = [];
    for (const w of this.passWaiters) {
      if (all || compareIds(w.id, tail) <= 0) w.resolve();
      else still.push(w);
    }
    this.passWaiters = still;
  }

  private reconnected(conn: RedisClient): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        conn.off('ready', done);
        conn.off('end', done);
        resolve();
      };
      conn.on('ready', done);
      conn.on('end', done);
      if (this.closed || conn.status === 'ready') done();
    });
  }

  private remember(id: string, frame: Uint8Array): void {
    this.frames.set(id, frame);
    if (this.frames.size > this.cap) this.frames.delete(this.frames.keys().next().value!);
  }

  replay(lastEventId: string, repos: readonly string[] | undefined): Promise<Uint8Array[]> {
    // clients that come back together (after an instance or a proxy went away) mostly send the
    // same id: one replay in flight serves them all, and covers what was delivered while any waited
    const following = repos === undefined ? '*' : `=${[...new Set(repos)].sort().join('\n')}`;
    const key = `${lastEventId.trim()}\n${following}`;
    const pending = this.replays.get(key);
    if (pending !== undefined) return pending;
    const replay = this.replayFrom(lastEventId, repos).catch((error) => {
      this.lastError = (error as Error)?.message ?? String(error);
      return [formatReset(this.tailId ?? lastEventId, 'log')];
    });
    this.replays.set(key, replay);
    // forgotten before the hub queues it: a client arriving later gets a replay of its own
    void replay.then(() => this.replays.delete(key));
    return replay;
  }

  private async replayFrom(lastEventId: string, repos: readonly string[] | undefined): Promise<Uint8Array[]> {
    if (this.tailId === undefined) {
      // the subscriber waits for the tail; it then starts over from the tail's first id
      await this.ready();
      return [formatReset(this.tailId ?? lastEventId, 'log')];
    }
    const generation = this.generation;
    const last = parseId(lastEventId);
    if (last === undefined) return [formatReset(this.tailId, 'epoch')];
    const keys = repos === undefined ? [this.allKey] : [...new Set(repos)].map((r) => this.repoKey(r));
    let from = lastEventId.trim();
    const picked: { id: StreamId; key: string; fields: unknown }[] = [];
    for (;;) {
      const upTo: string | undefined = this.tailId;
      if (this.generation !== generation || upTo === undefined) return [formatReset(this.tailId ?? from, 'log')];
      if (compareIds(parseId(from)!, parseId(upTo)!) > 0) {
        // the client saw an event this gateway has not read yet: it exists only if the stream has it
        const newest = (await this.commands!.call('XREVRANGE', [this.allKey, '+', '-', 'COUNT', 1])) as [
          string,
          unknown,
        ][];
        const top = newest.length > 0 ? parseId(newest[0]![0])! : ([0, 0] as const);
        if (compareIds(parseId(from)!, top) > 0) return [formatReset(this.tailId ?? from, 'epoch')];
        await new Promise<void>((resolve) => this.passWaiters.push({ id: parseId(from)!, resolve }));
        continue;
      }
      const ranges = (await Promise.all(
        keys.map((key) => run(this.commands!, RANGE_SCRIPT, [key], [from, upTo, this.cap + 1])),
      )) as [number, [string, unknown][]][];
      if (this.generation !== generation) return [formatReset(this.tailId ?? from, 'log')];
      for (const [trimmed, entries] of ranges) {
        if (trimmed === 1) return [formatReset(this.tailId!, 'cap')];
        for (const [id, fields] of entries) picked.push({ id: parseId(id)!, key: id, fields });
      }
      if (picked.length > this.cap) return [formatReset(this.tailId!, 'cap')];
      // events the tail delivered meanwhile are in the replay too
      if (this.tailId === upTo) break;
      from = upTo;
    }
    picked.sort((a, b) => compareIds(a.id, b.id));
    const frames: Uint8Array[] = [];
    for (const p of picked) {
      let frame = this.frames.get(p.key);
      if (frame === undefined) {
        const event = toEvent(p.fields);
        if (event === undefined) continue;
        frame = formatRefUpdate(p.key, event);
      }
      frames.push(frame);
    }
    return frames;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.startWaiters.splice(0)) wake();
    for (const w of this.passWaiters.splice(0)) w.resolve();
    this.commands?.disconnect();
    this.blocking?.disconnect();
  }
}

/**
 * The `eventLog` option of `createGateway` for ref events on Redis Streams at `url`
 * (`redis://HOST:PORT[/DB]`).
 */
export function redisEventLog(url: string, options: RedisEventLogOptions = {}): (hub: SseHub) => RedisEventLog {
  const log = new RedisEventLog(url, options);
  return (hub) => log.attach(hub);
}
