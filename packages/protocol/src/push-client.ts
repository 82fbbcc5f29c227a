/**
 * The push client (send-pack.c's role) over a Connection or smart HTTP. Push is always v0:
 *
 *   commands  = PKT-LINE(old SP new SP ref NUL caps) *PKT-LINE(old SP new SP ref) flush-pkt
 *   [push options, flush-pkt]  then the raw pack (none when every command is a delete)
 *
 * Local checks first, as git does: a non-fast-forward update is refused unless forced (the
 * remote's old value must be an ancestor of the new one, which needs the old object locally),
 * a lease (`expect`) must match the advertised value. The pack holds what the remote lacks,
 * thin against the remote's tips that we have. The report (`unpack ok`, `ok`/`ng` per ref) is
 * read from band 1 when side-band-64k is on.
 */
import type { ObjectId } from '@gitport/pack';
import { ZERO_ID } from '@gitport/pack/internal/object';
import { createPack } from '@gitport/pack/internal/pack-writer';
import { demuxSideband, encodeText, FLUSH, type PacketReader, packetText } from '@gitport/pktline';
import { DEFAULT_AGENT } from './capabilities.js';
import { CommitGraph } from './commit-graph.js';
import { concatBytes, newReader, type Repository, requirePacket } from './connection.js';
import { ProtocolError } from './errors.js';
import { isValidRefName } from './ref-store.js';
import { parseRefspec } from './refspec.js';
import { openSession, type Remote, remoteError } from './remote.js';

export interface PushUpdate {
  /** Remote ref to update. */
  dst: string;
  /** Local object to set it to; `null` deletes. */
  src: ObjectId | null;
  force?: boolean;
  /** `--force-with-lease`: the value the remote ref must have (`null`: must not exist). */
  expect?: ObjectId | null;
}

export interface PushOptions {
  /** Explicit updates, or refspecs like `refs/heads/main:refs/heads/main`, `+a:b`, `:refs/heads/gone`. */
  updates?: PushUpdate[];
  refspecs?: string[];
  atomic?: boolean;
  /** Send a thin pack (default true unless the server says no-thin). */
  thin?: boolean;
  pushOptions?: string[];
  quiet?: boolean;
  agent?: string;
  signal?: AbortSignal;
  onProgress?: (text: string) => void;
}

export type PushRefStatus =
  | { name: string; status: 'ok'; old: ObjectId | null; new: ObjectId | null }
  | { name: string; status: 'up-to-date'; old: ObjectId | null; new: ObjectId | null }
  | { name: string; status: 'rejected'; old: ObjectId | null; new: ObjectId | null; reason: string; local: boolean };

export interface PushResult {
  /** `ok` or the remote's unpack error; `undefined` when nothing was sent. */
  unpack?: string;
  refs: PushRefStatus[];
  /** True when every ref is ok or up to date. */
  ok: boolean;
}

function pkt(line: string): Uint8Array {
  return encodeText(`${line}\n`);
}

async function resolveLocal(local: Repository, name: string): Promise<ObjectId | undefined> {
  if (/^[0-9a-f]{40}$/.test(name)) return name;
  for (const candidate of [name, `refs/heads/${name}`, `refs/tags/${name}`]) {
    const oid = await local.refs.resolve(candidate);
    if (oid) return oid;
  }
  return undefined;
}

/** Pushes local objects and updates remote refs. */
export async function push(local: Repository, remote: Remote, options: PushOptions = {}): Promise<PushResult> {
  const { signal } = options;
  const agent = options.agent ?? DEFAULT_AGENT;
  const updates: PushUpdate[] = [...(options.updates ?? [])];
  for (const text of options.refspecs ?? []) {
    const spec = parseRefspec(text);
    const dst = spec.dst ?? spec.src;
    if (spec.src === '') {
      updates.push({ dst, src: null, force: spec.force });
      continue;
    }
    const oid = await resolveLocal(local, spec.src);
    if (!oid) throw new ProtocolError('PROTOCOL_BAD_REFSPEC', `src refspec ${spec.src} does not match any`);
    const full = dst.startsWith('refs/') ? dst : `refs/heads/${dst}`;
    updates.push({ dst: full, src: oid, force: spec.force });
  }
  const session = await openSession(remote, 'git-receive-pack', signal ? { signal } : {});
  try {
    const adv = session.advertisement;
    if (adv.version === 2) throw new ProtocolError('PROTOCOL_UNSUPPORTED', 'receive-pack answered with protocol v2');
    const remoteRefs = new Map(adv.refs.map((r) => [r.name, r.oid]));
    const caps = adv.capabilities;
    const graph = new CommitGraph(local.objects);
    const statuses: PushRefStatus[] = [];
    const commands: { name: string; old: ObjectId | null; new: ObjectId | null }[] = [];
    for (const u of updates) {
      const old = remoteRefs.get(u.dst) ?? null;
      const base = { name: u.dst, old, new: u.src };
      if (!u.dst.startsWith('refs/') || !isValidRefName(u.dst)) {
        statuses.push({ ...base, status: 'rejected', reason: 'invalid ref name', local: true });
        continue;
      }
      if (old === u.src) {
        statuses.push({ ...base, status: 'up-to-date' });
        continue;
      }
      if (u.src === null && old === null) {
        statuses.push({ ...base, status: 'rejected', reason: 'remote ref does not exist', local: true });
        continue;
      }
      if (u.src === null && !caps.has('delete-refs')) {
        statuses.push({
          ...base,
          status: 'rejected',
          reason: 'the remote does not support deleting refs',
          local: true,
        });
        continue;
      }
      if (u.expect !== undefined && u.expect !== old) {
        statuses.push({ ...base, status: 'rejected', reason: 'stale info', local: true });
        continue;
      }
      if (u.src !== null && old !== null && !u.force && u.expect === undefined) {
        const have = await graph.commit(old);
        const ff = have ? (await graph.reachableFrom([old], [u.src], signal)).has(old) : false;
        if (!ff) {
          statuses.push({
            ...base,
            status: 'rejected',
            reason: have ? 'non-fast-forward' : 'fetch first',
            local: true,
          });
          continue;
        }
      }
      commands.push(base);
      statuses.push({ ...base, status: 'ok' });
    }
    const atomic = options.atomic === true;
    if (atomic && !caps.has('atomic'))
      throw new ProtocolError('PROTOCOL_UNSUPPORTED', 'the remote does not support --atomic');
    if (atomic && statuses.some((s) => s.status === 'rejected')) {
      for (const [i, s] of statuses.entries()) {
        if (s.status === 'ok') statuses[i] = { ...s, status: 'rejected', reason: 'atomic push failed', local: true };
      }
      commands.length = 0;
    }
    if (commands.length === 0) {
      if (!session.stateless) await session.round(FLUSH);
      return { refs: statuses, ok: statuses.every((s) => s.status !== 'rejected') };
    }
    const wanted: string[] = [];
    const sideband = caps.has('side-band-64k');
    if (caps.has('report-status')) wanted.push('report-status');
    if (sideband) wanted.push('side-band-64k');
    if (atomic) wanted.push('atomic');
    if (caps.has('ofs-delta')) wanted.push('ofs-delta');
    if (caps.has('delete-refs') && commands.some((c) => c.new === null)) wanted.push('delete-refs');
    if (options.quiet && caps.has('quiet')) wanted.push('quiet');
    const pushOptions = options.pushOptions ?? [];
    if (pushOptions.length > 0) {
      if (!caps.has('push-options'))
        throw new ProtocolError('PROTOCOL_UNSUPPORTED', 'the remote does not support push options');
      wanted.push('push-options');
    }
    wanted.push(`agent=${agent}`);
    const head: Uint8Array[] = [];
    commands.forEach((c, i) => {
      const text = `${c.old ?? ZERO_ID} ${c.new ?? ZERO_ID} ${c.name}`;
      head.push(i === 0 ? encodeText(`${text}\0${wanted.join(' ')}\n`) : pkt(text));
    });
    head.push(FLUSH);
    if (pushOptions.length > 0) {
      for (const o of pushOptions) head.push(pkt(o));
      head.push(FLUSH);
    }
    const newTips = commands.flatMap((c) => (c.new ? [c.new] : []));
    const theirs: ObjectId[] = [];
    for (const oid of remoteRefs.values()) if (await local.objects.has(oid)) theirs.push(oid);
    const thin = options.thin !== false && !caps.has('no-thin');
    async function* body(): AsyncIterable<Uint8Array> {
      yield concatBytes(head);
      if (newTips.length === 0) return;
      yield* createPack(
        local.objects,
        { wants: newTips, haves: theirs },
        { thin, ofsDelta: caps.has('ofs-delta'), deltas: true, ...(signal ? { signal } : {}) },
      );
    }
    const reader = await session.round(body());
    if (!session.stateless) await session.close();
    if (!caps.has('report-status')) {
      return { refs: statuses, ok: true };
    }
    const reportReader = sideband
      ? newReader(
          demuxSideband(reader, {
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
            ...(signal ? { signal } : {}),
          }),
          signal,
        )
      : reader;
    const report = await readReport(reportReader, 4 * commands.length + 16);
    if (sideband) {
      // read on to the flush that ends the side-banded response (bounded: the report is small)
      for (let i = 0; i < 1024 && (await reportReader.read()) !== undefined; i++);
    }
    for (const [i, s] of statuses.entries()) {
      if (s.status !== 'ok') continue;
      const remoteStatus = report.refs.get(s.name);
      if (report.unpack !== 'ok')
        statuses[i] = { ...s, status: 'rejected', reason: `unpack failed: ${report.unpack}`, local: false };
      else if (remoteStatus === undefined)
        statuses[i] = { ...s, status: 'rejected', reason: 'no report from the remote', local: false };
      else if (remoteStatus !== 'ok') statuses[i] = { ...s, status: 'rejected', reason: remoteStatus, local: false };
    }
    return { unpack: report.unpack, refs: statuses, ok: statuses.every((s) => s.status !== 'rejected') };
  } catch (error) {
    throw remoteError(error);
  } finally {
    await session.close().catch(() => {});
  }
}

/** Parses report-status (v1 or v2): `unpack <status>`, `ok <ref>` / `ng <ref> <reason>`, flush. */
export async function readReport(
  reader: PacketReader,
  maxLines = 1_000_000,
): Promise<{ unpack: string; refs: Map<string, string> }> {
  const first = await requirePacket(reader, 'reading the push report');
  const unpackLine = packetText(first);
  if (!unpackLine?.startsWith('unpack ')) {
    throw new ProtocolError(
      'PROTOCOL_BAD_LINE',
      `expected unpack status, got ${JSON.stringify(unpackLine ?? first.kind)}`,
    );
  }
  const refs = new Map<string, string>();
  for (let lines = 0; ; lines++) {
    const p = await requirePacket(reader, 'reading the push report');
    if (p.kind === 'flush') break;
    if (lines >= maxLines) throw new ProtocolError('PROTOCOL_LIMIT', 'the push report is too long');
    const text = packetText(p) ?? '';
    if (text.startsWith('ok ')) refs.set(text.slice(3), 'ok');
    else if (text.startsWith('ng ')) {
      const rest = text.slice(3);
      const space = rest.indexOf(' ');
      refs.set(space < 0 ? rest : rest.slice(0, space), space < 0 ? 'rejected' : rest.slice(space + 1));
    } else if (text.startsWith('option ')) {
      // report-status-v2 detail lines
    } else throw new ProtocolError('PROTOCOL_BAD_LINE', `unexpected report line ${JSON.stringify(text)}`);
  }
  return { unpack: unpackLine.slice(7), refs };
}
