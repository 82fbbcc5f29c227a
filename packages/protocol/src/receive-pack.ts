/**
 * The receive-pack server (what `git push` talks to). Push is always protocol v0.
 * gitprotocol-pack(5) "Pushing Data To a Server", gitprotocol-capabilities(5).
 *
 *   update-requests   =  *shallow ( command-list | push-cert )
 *   command-list      =  PKT-LINE(command NUL capability-list) *PKT-LINE(command) flush-pkt
 *   command           =  create / delete / update
 *   create            =  zero-id SP new-id  SP name
 *   delete            =  old-id  SP zero-id SP name
 *   update            =  old-id  SP new-id  SP name
 *   push-options      =  *PKT-LINE(push-option) flush-pkt      (after the commands, if negotiated)
 *   packfile          =  the raw pack, omitted when every command is a delete
 *
 *   report-status     =  unpack-status 1*(command-status) flush-pkt
 *   unpack-status     =  PKT-LINE("unpack" SP unpack-result)
 *   command-status    =  PKT-LINE("ok" SP refname) / PKT-LINE("ng" SP refname SP error-msg)
 *
 * Order of work, so that a failed push moves no ref: read the commands; receive and check the
 * whole pack (importPack verifies the trailer and every object before storing, completes thin
 * packs); check names, existence, connectivity from every new tip, fast-forward; then one
 * compare-and-swap transaction on the RefStore (`atomic`: all or none). With side-band-64k the
 * whole report travels in band 1.
 */
import { importPack, type ObjectId, type PackLimits } from '@gitport/pack';
import { encodeText, FLUSH, packetText, SidebandMuxer } from '@gitport/pktline';
import { collectRefs, encodeAdvertisementV0 } from './advertisement.js';
import { Capabilities, DEFAULT_AGENT, receivePackCapabilities } from './capabilities.js';
import { CommitGraph, parseTagTarget, treeEntries } from './commit-graph.js';
import { type Connection, concatBytes, newReader, type Repository, requirePacket } from './connection.js';
import { hasCode, oneLine, ProtocolError, peerErrorMessage, throwIfAborted } from './errors.js';
import { isObjectId, isValidRefName, type RefUpdate, ZERO_OID } from './ref-store.js';

export interface PushCommand {
  name: string;
  /** `null` for a create. */
  old: ObjectId | null;
  /** `null` for a delete. */
  new: ObjectId | null;
}

export type PushCommandResult =
  | (PushCommand & { status: 'ok' })
  | (PushCommand & { status: 'rejected'; reason: string });

export interface ReceivePackResult {
  /** `ok`, or the unpack error sent to the client (only what peerErrorMessage lets out). */
  unpack: 'ok' | string;
  /** The error behind a failed unpack, with its local detail: for the host's own reports. */
  unpackError?: unknown;
  commands: PushCommandResult[];
  /** The refs that moved (what a host emits as ref-update events). */
  updated: PushCommand[];
  pushOptions: string[];
}

export interface ReceivePackHooks {
  /** Before any ref moves, with every command that passed the checks; a string rejects them all. */
  preReceive?(commands: readonly PushCommand[], pushOptions: readonly string[]): Promise<unknown>;
  /** Per ref; a string rejects that ref. */
  update?(command: PushCommand): Promise<unknown>;
}

export interface ReceivePackLimits {
  /** Most commands in one push (default 100,000). */
  maxCommands?: number;
  /** Most push options (default 100) and their total bytes (default 64 KiB). */
  maxPushOptions?: number;
  pack?: PackLimits;
}

export interface ReceivePackOptions {
  agent?: string;
  /** The version the client asked for (`Git-Protocol`/`GIT_PROTOCOL`); push answers v0, or v1 when asked. */
  protocol?: 0 | 1 | 2;
  stateless?: boolean;
  /** Stateful only: send the advertisement first (default true). */
  advertise?: boolean;
  /** Accept non-fast-forward updates (git's default, `receive.denyNonFastForwards=false`). Default true. */
  allowNonFastForward?: boolean;
  /** Accept deletes (default true). */
  allowDeletes?: boolean;
  /**
   * Accept deleting the branch HEAD points to (default false: git's `receive.denyDeleteCurrent`
   * refuses it, since it would leave HEAD dangling for every later clone).
   */
  allowDeleteCurrent?: boolean;
  hooks?: ReceivePackHooks;
  limits?: ReceivePackLimits;
  signal?: AbortSignal;
}

function line(text: string): Uint8Array {
  return encodeText(`${text}\n`);
}

/** Encodes the receive-pack advertisement (no HEAD, no peeled lines). */
export async function receivePackAdvertisement(
  repo: Repository,
  options: { agent?: string; service?: boolean; protocol?: 0 | 1 | 2 } = {},
): Promise<Uint8Array> {
  const graph = new CommitGraph(repo.objects);
  const { refs } = await collectRefs(repo.refs, graph, { head: false, peel: false });
  const caps = receivePackCapabilities({ agent: options.agent ?? DEFAULT_AGENT });
  return encodeAdvertisementV0(refs, caps, {
    ...(options.service ? { service: 'git-receive-pack' } : {}),
    // push is v0; a client that asked for v1 gets the `version 1` line first
    ...(options.protocol === 1 ? { version: 1 as const } : {}),
  });
}

/**
 * Serves one push over `conn`. Resolves with what happened (also when refs were refused);
 * rejects only when the exchange itself failed (then no ref moved).
 */
export async function serveReceivePack(
  repo: Repository,
  conn: Connection,
  options: ReceivePackOptions = {},
): Promise<ReceivePackResult> {
  try {
    return await receive(repo, conn, options);
  } finally {
    await conn.end().catch(() => {});
  }
}

async function receive(repo: Repository, conn: Connection, options: ReceivePackOptions): Promise<ReceivePackResult> {
  const { signal } = options;
  if (!options.stateless && options.advertise !== false) {
    await conn.write(
      await receivePackAdvertisement(repo, {
        ...(options.agent ? { agent: options.agent } : {}),
        ...(options.protocol !== undefined ? { protocol: options.protocol } : {}),
      }),
    );
  }
  const reader = newReader(conn.input, signal);
  const commands: PushCommand[] = [];
  let caps = new Capabilities();
  const maxCommands = options.limits?.maxCommands ?? 100_000;
  const result: ReceivePackResult = { unpack: 'ok', commands: [], updated: [], pushOptions: [] };
  for (let first = true; ; first = false) {
    const packet = await reader.read();
    if (!packet) {
      if (first) return result; // nothing to do
      throw new ProtocolError('PROTOCOL_UNEXPECTED_EOF', 'the remote end hung up while sending commands');
    }
    if (packet.kind === 'flush') break;
    let text = packetText(packet);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${packet.kind} in commands`);
    if (text.startsWith('shallow ')) continue; // pushes from shallow clones: connectivity decides
    const nul = text.indexOf('\0');
    if (nul >= 0) {
      if (commands.length === 0) caps = Capabilities.parse(text.slice(nul + 1));
      text = text.slice(0, nul);
    }
    const m = /^([0-9a-f]{40}) ([0-9a-f]{40}) (.+)$/.exec(text);
    if (!m)
      throw new ProtocolError('PROTOCOL_BAD_LINE', `protocol error: expected old/new/ref, got ${JSON.stringify(text)}`);
    if (commands.length >= maxCommands) throw new ProtocolError('PROTOCOL_LIMIT', `more than ${maxCommands} commands`);
    const [, oldId, newId, name] = m as unknown as [string, string, string, string];
    commands.push({ name, old: oldId === ZERO_OID ? null : oldId, new: newId === ZERO_OID ? null : newId });
  }
  if (commands.length === 0) return result;
  if (caps.has('push-options')) {
    const maxOptions = options.limits?.maxPushOptions ?? 100;
    let bytes = 0;
    for (;;) {
      const p = await requirePacket(reader, 'reading push options');
      if (p.kind === 'flush') break;
      const text = packetText(p);
      if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in push options`);
      bytes += text.length;
      if (result.pushOptions.length >= maxOptions || bytes > 65536) {
        throw new ProtocolError('PROTOCOL_LIMIT', 'too many push options');
      }
      result.pushOptions.push(text);
    }
  }

  const newObjects = new Set<ObjectId>();
  if (commands.some((c) => c.new !== null)) {
    try {
      const imported = await importPack(repo.objects, reader.rest(), {
        fixThin: true,
        ...(options.limits?.pack ? { limits: options.limits.pack } : {}),
        ...(signal ? { signal } : {}),
      });
      for (const oid of imported.objects) newObjects.add(oid);
    } catch (error) {
      if (signal?.aborted || hasCode(error, 'PROTOCOL_ABORTED')) throw error;
      result.unpack = `unpacker error: ${peerErrorMessage(error)}`.slice(0, 1000);
      result.unpackError = error;
      result.commands = commands.map((c) => ({ ...c, status: 'rejected', reason: 'unpacker error' }));
      await report(conn, caps, result);
      return result;
    }
  }
  throwIfAborted(signal);

  const graph = new CommitGraph(repo.objects);
  const verdicts = new Map<PushCommand, string>();
  const reject = (c: PushCommand, reason: string) => {
    if (!verdicts.has(c)) verdicts.set(c, reason);
  };
  const head = options.allowDeleteCurrent ? undefined : await repo.refs.read('HEAD');
  const currentBranch = head?.kind === 'symbolic' ? head.target : undefined;
  const seen = new Set<string>();
  for (const c of commands) {
    if (!c.name.startsWith('refs/') || !isValidRefName(c.name)) reject(c, 'funny refname');
    else if (seen.has(c.name)) reject(c, 'duplicate ref');
    else if (c.new === null && options.allowDeletes === false) reject(c, 'deletion prohibited');
    else if (c.new === null && c.name === currentBranch) reject(c, 'deletion of the current branch prohibited');
    else if (c.new === null && c.old === null) reject(c, 'no such ref');
    seen.add(c.name);
  }
  // every new tip and its closure must be present
  const tips = commands.filter((c) => c.new !== null && !verdicts.has(c));
  if (tips.length > 0) {
    const broken = await findDisconnected(
      graph,
      repo,
      tips.map((c) => c.new as ObjectId),
      newObjects,
      signal,
    );
    for (const c of tips) if (broken.has(c.new as ObjectId)) reject(c, 'missing necessary objects');
  }
  // compare the claimed old values with the store (the transaction checks again, atomically)
  for (const c of commands) {
    if (verdicts.has(c)) continue;
    const current = await repo.refs.read(c.name);
    const currentOid = current.kind === 'direct' ? current.oid : null;
    if (current.kind === 'symbolic') reject(c, 'cannot update a symbolic ref');
    else if (currentOid !== c.old) reject(c, currentOid === null && c.new === null ? 'no such ref' : 'stale info');
  }
  if (options.allowNonFastForward === false) {
    for (const c of commands) {
      if (verdicts.has(c) || c.old === null || c.new === null) continue;
      const oldCommit = await graph.commit(c.old);
      const newCommit = await graph.commit(c.new);
      if (!oldCommit || !newCommit) continue; // not commits: nothing to fast-forward
      const found = await graph.reachableFrom([c.old], [c.new], signal);
      if (!found.has(c.old)) reject(c, 'non-fast-forward');
    }
  }
  if (options.hooks?.update) {
    for (const c of commands) {
      if (verdicts.has(c)) continue;
      const reason = await options.hooks.update(c);
      if (typeof reason === 'string') reject(c, `hook declined: ${reason}`);
    }
  }
  const atomic = caps.has('atomic');
  if (atomic && verdicts.size > 0) {
    for (const c of commands) reject(c, 'atomic push failure');
  }
  const accepted = commands.filter((c) => !verdicts.has(c));
  if (accepted.length > 0 && options.hooks?.preReceive) {
    const reason = await options.hooks.preReceive(accepted, result.pushOptions);
    if (typeof reason === 'string') for (const c of accepted) reject(c, `pre-receive hook declined: ${reason}`);
  }
  throwIfAborted(signal);
  const toApply = commands.filter((c) => !verdicts.has(c));
  if (toApply.length > 0) {
    const updates: RefUpdate[] = toApply.map((c) => ({ name: c.name, old: c.old, new: c.new }));
    const applied = await repo.refs.update(updates, { atomic });
    applied.forEach((r, i) => {
      const c = toApply[i] as PushCommand;
      if (r.status === 'rejected')
        reject(c, r.reason === 'stale' ? 'stale info' : `failed to update ref: ${oneLine(r.message, 500)}`);
    });
    if (atomic && applied.some((r) => r.status === 'rejected'))
      for (const c of commands) reject(c, 'atomic push failure');
  }
  result.commands = commands.map((c) => {
    const reason = verdicts.get(c);
    return reason === undefined ? { ...c, status: 'ok' } : { ...c, status: 'rejected', reason };
  });
  result.updated = commands.filter((c) => !verdicts.has(c));
  await report(conn, caps, result);
  return result;
}

async function report(conn: Connection, caps: Capabilities, result: ReceivePackResult): Promise<void> {
  if (!caps.has('report-status') && !caps.has('report-status-v2')) return;
  const parts: Uint8Array[] = [line(`unpack ${result.unpack}`)];
  for (const c of result.commands) {
    parts.push(line(c.status === 'ok' ? `ok ${c.name}` : `ng ${c.name} ${c.reason}`));
  }
  parts.push(FLUSH);
  const body = concatBytes(parts);
  if (caps.has('side-band-64k')) {
    const muxer = new SidebandMuxer((b) => conn.write(b), { maxData: 65515 });
    await muxer.data(body);
    await conn.write(FLUSH);
  } else {
    await conn.write(body);
  }
}

/**
 * git's connectivity check (`rev-list --objects <new tips> --not --all`): walks each tip's
 * objects and stops at commits reachable from the current refs. Objects the push did not bring
 * must exist; commits that exist but are not reachable from a ref are walked like new ones.
 * Returns the tips whose closure is incomplete.
 */
export async function findDisconnected(
  graph: CommitGraph,
  repo: Repository,
  tips: readonly ObjectId[],
  newObjects: ReadonlySet<ObjectId>,
  signal?: AbortSignal,
): Promise<Set<ObjectId>> {
  const refTips: ObjectId[] = (await repo.refs.list()).map((r) => r.oid);
  // commits outside the pack that new commits point at, and whether refs reach them
  const knownGood = new Set<ObjectId>();
  const broken = new Set<ObjectId>();
  const checked = new Map<ObjectId, boolean>();
  for (const tip of tips) {
    if (!isObjectId(tip)) {
      broken.add(tip);
      continue;
    }
    const ok = await closureComplete(tip);
    if (!ok) broken.add(tip);
  }
  return broken;

  async function closureComplete(start: ObjectId): Promise<boolean> {
    const stack: ObjectId[] = [start];
    const local = new Set<ObjectId>([start]);
    // existing commits not (yet) known to be reachable from a ref are walked like new ones
    const walkAsNew = new Set<ObjectId>();
    let steps = 0;
    while (stack.length > 0) {
      const boundary: ObjectId[] = [];
      while (stack.length > 0) {
        if ((++steps & 1023) === 0) throwIfAborted(signal);
        const oid = stack.pop() as ObjectId;
        if (checked.get(oid) === false) return false;
        if (!newObjects.has(oid) && !walkAsNew.has(oid)) {
          if (knownGood.has(oid)) continue;
          const header = repo.objects.readHeader ? await repo.objects.readHeader(oid) : await repo.objects.read(oid);
          if (!header) {
            checked.set(oid, false);
            return false;
          }
          if (header.type === 'commit') {
            boundary.push(oid);
            continue;
          }
          if (header.type !== 'tag') continue; // an existing tree or blob
        }
        const object = await repo.objects.read(oid);
        if (!object) {
          checked.set(oid, false);
          return false;
        }
        const children: ObjectId[] = [];
        if (object.type === 'commit') {
          const c = await graph.commit(oid);
          if (!c) return false;
          children.push(c.tree, ...c.parents);
        } else if (object.type === 'tree') {
          for (const e of treeEntries(object.data)) if (e.mode !== '160000') children.push(e.oid);
        } else if (object.type === 'tag') {
          children.push(parseTagTarget(object.data).object);
        }
        for (const child of children) {
          if (local.has(child)) continue;
          local.add(child);
          stack.push(child);
        }
      }
      if (boundary.length > 0) {
        const reachable = await graph.reachableFrom(boundary, refTips, signal);
        for (const oid of boundary) {
          if (reachable.has(oid)) knownGood.add(oid);
          else {
            walkAsNew.add(oid);
            stack.push(oid);
          }
        }
      }
    }
    return true;
  }
}
